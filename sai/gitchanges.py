"""Which files git reports changed: the seeds of `sync` and of seeded duplicate searches."""

from __future__ import annotations

import subprocess
from pathlib import Path

from sai.errors import SaiError, UsageError


def changed_files(root: Path, *, since: str | None = None, staged: bool = False) -> list[str]:
    """Root-relative paths changed against `since` (default HEAD~1) or staged, plus untracked."""
    if staged:
        diff = _git(root, "diff", "--name-only", "--relative", "--cached")
    else:
        rev = since or "HEAD~1"
        if rev.startswith("-"):
            raise UsageError(f"revision {rev!r} must not start with '-'")
        diff = _git(root, "diff", "--name-only", "--relative", rev, "--")
        diff += _git(root, "ls-files", "--others", "--exclude-standard")
    return sorted({line for line in diff if line})


def _git(root: Path, *args: str) -> list[str]:
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotepath=off", *args], cwd=root, capture_output=True,
            text=True, timeout=60, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SaiError(f"cannot run git in {root}: {exc}; install git or pass --file") from exc
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["git failed"])[-1]
        if any(s in done.stderr for s in ("unknown revision", "bad revision", "ambiguous argument")):
            raise UsageError(f"git does not know the revision in `{' '.join(args)}`: {reason}")
        raise SaiError(f"git {' '.join(args[:2])} failed in {root}: {reason}; check the revision or pass --file")
    return done.stdout.splitlines()
