"""Which files git reports changed: the seeds of `sync` and of seeded duplicate searches.

An unknown revision is the caller's mistake (UsageError); no git repository, no git, or another
git failure is a SaiError. Messages are one line and never quote git's usage text.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from sai.errors import SaiError, UsageError

INSTEAD = "pass the files instead (--file, or sai_sync's paths)"


def changed_files(root: Path, *, since: str | None = None, staged: bool = False) -> list[str]:
    """Root-relative paths changed against `since` (default HEAD~1) or staged, plus untracked."""
    rev = since or "HEAD~1"
    if not staged and rev.startswith("-"):
        raise UsageError(f"revision {rev!r} must not start with '-'; give a commit, branch or tag")
    _check_repository(root)
    if staged:
        diff = _git(root, "diff", "--name-only", "--relative", "--cached")
    else:
        diff = _git(root, "diff", "--name-only", "--relative", rev, "--")
        diff += _git(root, "ls-files", "--others", "--exclude-standard")
    return sorted({line for line in diff if line})


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
WHOLE_FILE = (1, 2**31 - 1)  # the lines of a file git does not track yet: all of them


def changed_lines(root: Path, *, since: str | None = None) -> dict[str, list[tuple[int, int]]]:
    """Root-relative path -> the line ranges (first, last; of the working tree's text) that
    differ from `since` (default HEAD), untracked files whole. A hunk that only deletes lines is
    the line after which they were (its neighbours are what changed)."""
    rev = since or "HEAD"
    if rev.startswith("-"):
        raise UsageError(f"revision {rev!r} must not start with '-'; give a commit, branch or tag")
    _check_repository(root)
    ranges: dict[str, list[tuple[int, int]]] = {}
    current = None
    for line in _git(root, "diff", "-U0", "--no-color", "--no-ext-diff", "--relative", rev, "--"):
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else None  # /dev/null: a deleted file
        elif current is not None and (hunk := _HUNK.match(line)):
            first, count = int(hunk.group(1)), int(hunk.group(2) if hunk.group(2) is not None else 1)
            ranges.setdefault(current, []).append((max(1, first), max(1, first + count - 1)))
    for key in _git(root, "ls-files", "--others", "--exclude-standard"):
        if key:
            ranges[key] = [WHOLE_FILE]
    return ranges


def _check_repository(root: Path) -> None:
    """Outside a work tree `git diff` falls back to --no-index and prints its usage: ask first."""
    done = _run(root, "rev-parse", "--is-inside-work-tree")
    if done.returncode != 0 or done.stdout.strip() != "true":
        raise SaiError(f"{root} is not inside a git repository; {INSTEAD}")


def _git(root: Path, *args: str) -> list[str]:
    done = _run(root, *args)
    if done.returncode != 0:
        reason = _reason(done.stderr)
        if any(s in done.stderr for s in ("unknown revision", "bad revision", "ambiguous argument")):
            rev = args[-2] if args[-1] == "--" else args[-1]
            raise UsageError(
                f"git does not know the revision {rev!r} ({reason}); give an existing commit, "
                "branch or tag, e.g. HEAD"
            )
        raise SaiError(f"git {' '.join(args[:2])} failed in {root}: {reason}; {INSTEAD}")
    return done.stdout.splitlines()


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            ["git", "-c", "core.quotepath=off", *args], cwd=root, capture_output=True,
            text=True, errors="replace", timeout=60, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SaiError(f"cannot run git in {root} ({exc}); install git or {INSTEAD}") from exc


def _reason(stderr: str) -> str:
    """git's own one-line reason: its first `fatal:`/`error:` line, else its first line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (fatal or lines or ["git failed"])[0]
