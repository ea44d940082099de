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
_UNTRACKED = ("ls-files", "--others", "--exclude-standard")


def changed_files(root: Path, *, since: str | None = None, staged: bool = False) -> list[str]:
    """Root-relative paths changed against `since` (default HEAD~1) or staged, plus untracked."""
    rev = since or "HEAD~1"
    if not staged and rev.startswith("-"):
        raise UsageError(f"revision {rev!r} must not start with '-'; give a commit, branch or tag")
    if staged:
        outputs = _git(root, ("diff", "--name-only", "--relative", "--cached"))
    else:
        outputs = _git(root, ("diff", "--name-only", "--relative", rev, "--"), _UNTRACKED)
    return sorted({line for lines in outputs for line in lines if line})


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
WHOLE_FILE = (1, 2**31 - 1)  # the lines of a file git does not track yet: all of them


def changed_lines(root: Path, *, since: str | None = None) -> dict[str, list[tuple[int, int]]]:
    """Root-relative path -> the line ranges (first, last; of the working tree's text) that
    differ from `since` (default HEAD), untracked files whole. A hunk that only deletes lines is
    the line after which they were (its neighbours are what changed)."""
    rev = since or "HEAD"
    if rev.startswith("-"):
        raise UsageError(f"revision {rev!r} must not start with '-'; give a commit, branch or tag")
    diff, untracked = _git(root, ("diff", "-U0", "--no-color", "--no-ext-diff", "--relative", rev, "--"), _UNTRACKED)
    ranges: dict[str, list[tuple[int, int]]] = {}
    current = None
    for line in diff:
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else None  # /dev/null: a deleted file
        elif current is not None and (hunk := _HUNK.match(line)):
            first, count = int(hunk.group(1)), int(hunk.group(2) if hunk.group(2) is not None else 1)
            ranges.setdefault(current, []).append((max(1, first), max(1, first + count - 1)))
    for key in untracked:
        if key:
            ranges[key] = [WHOLE_FILE]
    return ranges


def _git(root: Path, *commands: tuple[str, ...]) -> list[list[str]]:
    """Each git command's output lines. They run side by side (at 5,000 files a diff takes
    30 ms, the two others 10), beside the check that `root` is in a work tree, which is read
    first: outside one `git diff` falls back to --no-index and prints its usage."""
    check, *done = _run(root, ("rev-parse", "--is-inside-work-tree"), *commands)
    if check.returncode != 0 or check.stdout.strip() != "true":
        raise SaiError(f"{root} is not inside a git repository; {INSTEAD}")
    return [_lines(root, args, result) for args, result in zip(commands, done, strict=True)]


def _lines(root: Path, args: tuple[str, ...], done: subprocess.CompletedProcess[str]) -> list[str]:
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


def _run(root: Path, *commands: tuple[str, ...]) -> list[subprocess.CompletedProcess[str]]:
    """Start every command, then wait for each (a minute at most; one that fails to start or
    takes longer stops the others)."""
    started: list[subprocess.Popen[str]] = []
    try:
        for args in commands:
            started.append(subprocess.Popen(
                ["git", "-c", "core.quotepath=off", *args], cwd=root, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, errors="replace"))
        out = []
        for process, args in zip(started, commands, strict=False):
            stdout, stderr = process.communicate(timeout=60)
            out.append(subprocess.CompletedProcess(args, process.returncode, stdout, stderr))
        return out
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SaiError(f"cannot run git in {root} ({exc}); install git or {INSTEAD}") from exc
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait()


def _reason(stderr: str) -> str:
    """git's own one-line reason: its first `fatal:`/`error:` line, else its first line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (fatal or lines or ["git failed"])[0]
