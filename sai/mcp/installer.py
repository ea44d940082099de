"""sai_prepare_mcp_setup: the mcp-setup/setup.sh invocation that sets a project up, shown as a
command and, on request, run (docs/mcp.md). The server never writes outside its project root.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import sai
from sai.errors import OutsideRootError, SaiError, UsageError, shown
from sai.mcp.calls import escaped, no_nul
from sai.mcp.schemas import EMBEDDER_ALIASES
from sai.models import BACKENDS, EMBEDDERS
from sai.output.payloads import SetupOut, SetupRunOut, setup_blocked_json, setup_json, setup_ran_json

log = logging.getLogger("sai.mcp")

SETUP_TIMEOUT_S = 1800.0  # a first install with the local extra downloads ONNX Runtime and the model
TAIL_CHARS = 4000  # how much of the setup script's output a result carries
QUOTED = str.maketrans({c: "\\" + c for c in '\\"$`'})  # escapes inside a "double-quoted" word
SETUP_SCRIPT = Path(sai.__file__).resolve().parent.parent / "mcp-setup" / "setup.sh"


def target_of(root: Path, directory: str | None) -> Path:
    """The directory to set up: the project root by default; a relative one is under the root."""
    if directory is None:
        return root
    given = Path(no_nul("target_directory", directory)).expanduser()
    try:
        return (root / given).resolve()  # an absolute `given` wins the join
    except OSError as exc:
        raise UsageError(f"target_directory {shown(directory)} cannot be resolved ({exc.strerror}); "
                         "give an existing directory") from None


def execute(plan: SetupPlan, *, root: Path, allow_setup: bool) -> SetupRunOut:
    """Run the plan when the server may (--allow-setup) and its target lies inside `root`;
    else the fields that say why not."""
    blocked = None
    if not allow_setup:
        blocked = "the server was not started with --allow-setup; restart it with " \
                  "--allow-setup or run the recommended_command yourself"
    elif not SETUP_SCRIPT.is_file():
        blocked = f"{SETUP_SCRIPT} was not found; run it from a source checkout"
    if blocked:
        return setup_blocked_json(blocked)
    if not plan.target.is_relative_to(root):  # the server never writes outside the root
        raise OutsideRootError(
            f"target_directory {shown(str(plan.target))} is outside the project root {root}; "
            "give a directory inside it, or run the recommended_command yourself")
    if plan.install_globally:
        raise UsageError("install_globally links sai into ~/.local/bin, outside the project root; "
                         "run the recommended_command yourself")
    if not plan.target.is_dir():
        raise UsageError(f"target_directory {plan.target} is not a directory; create it first")
    return run_setup(plan)


@dataclass(frozen=True)
class SetupPlan:
    """One invocation of mcp-setup/setup.sh (docs/mcp.md): shown as a command, run as argv."""

    target: Path
    backend: str
    embedder: str
    features: str
    install_globally: bool

    def argv(self) -> list[str]:
        argv = [str(SETUP_SCRIPT), "--non-interactive", "--backend", self.backend, "--embedder",
                self.embedder, "--target-dir", str(self.target), "--features", self.features]
        return argv + (["--install-global"] if self.install_globally else [])

    def command(self) -> str:
        command = (
            f"{SETUP_SCRIPT} --non-interactive --backend {self.backend} --embedder {self.embedder}"
            f' --target-dir "{str(self.target).translate(QUOTED)}" --features "{self.features}"'
        )
        return command + (" --install-global" if self.install_globally else "")

    def payload(self) -> SetupOut:
        return setup_json(target=str(self.target), command=self.command(), sai_command=_sai_command(),
                          config_file=str(self.target / "sai-cfg.yml"), notes=SETUP_NOTES[SETUP_SCRIPT.is_file()])


SETUP_NOTES = {
    True: "For fully offline use, prefer embedder=local (a longer first install: ONNX Runtime and the "
    "90 MB model). The setup script was found next to this package and the recommended_command is "
    "ready to run.",
    False: f"mcp-setup/setup.sh was not found at {SETUP_SCRIPT} (SAI installed without a source "
    "checkout?); clone the repository and run the recommended_command from there.",
}


def setup_plan(
    target: Path, *, backend: str, embedder: str, use_ast_chunker: bool, install_globally: bool
) -> SetupPlan:
    """The setup.sh invocation that sets up `target`; features follow backend and embedder."""
    embedder = EMBEDDER_ALIASES.get(embedder, embedder)
    if backend not in BACKENDS:
        raise UsageError(f"unknown backend '{backend}'; choose one of: {', '.join(BACKENDS)}")
    if embedder not in EMBEDDERS:
        choices = ", ".join([*EMBEDDERS, *EMBEDDER_ALIASES])
        raise UsageError(f"unknown embedder '{embedder}'; choose one of: {choices}")
    features = ",".join(["mcp", backend, embedder] + (["ast"] if use_ast_chunker else []))
    return SetupPlan(target, backend, embedder, features, install_globally)


def run_setup(plan: SetupPlan) -> SetupRunOut:
    """Run the setup script as argv, never through a shell: the target comes from the caller."""
    log.warning("running %s", plan.command())
    try:
        done = subprocess.run(
            ["bash", *plan.argv()], cwd=plan.target, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, errors="replace", timeout=SETUP_TIMEOUT_S, check=False,
        )
    except subprocess.TimeoutExpired as exc:
        return _ran(None, exc.stdout, exc.stderr)
    except OSError as exc:
        raise SaiError(f"cannot run {SETUP_SCRIPT}: {exc.strerror}; check bash") from exc
    return _ran(done.returncode, done.stdout, done.stderr)


def _ran(
    exit_code: int | None, stdout: str | bytes | None, stderr: str | bytes | None
) -> SetupRunOut:
    out, err = _tail(stdout), _tail(stderr)
    if exit_code is None:
        error = f"setup.sh did not finish within {SETUP_TIMEOUT_S:.0f}s; run the " \
                "recommended_command in a terminal instead"
    elif exit_code != 0:
        last = next((line.strip() for line in reversed(err.splitlines()) if line.strip()), "")
        error = f"setup.sh exited with code {exit_code}: {escaped(last) or 'no message'}"
    else:
        error = None
    return setup_ran_json(exit_code, stdout=out, stderr=err, error=error)


def _tail(output: str | bytes | None) -> str:
    if isinstance(output, bytes):
        output = output.decode("utf-8", errors="replace")
    return (output or "")[-TAIL_CHARS:]


def _sai_command() -> str:
    """The `sai` executable: beside this Python, else on PATH, else how this process started."""
    beside = Path(sys.executable).parent / "sai"
    if beside.is_file():
        return str(beside)
    return shutil.which("sai") or str(Path(sys.argv[0]).resolve())
