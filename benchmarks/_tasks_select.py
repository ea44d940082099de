"""Which commits of a repository become tasks of benchmarks/tasks.py (the rule is stated in its
docstring; each part of it is one function here, so the rule lives in one place)."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sai.source.languages import DEFAULT_EXTS, ext_of

MIN_WORDS, MAX_WORDS = 4, 15
MAX_SOURCE_FILES = 4
SCANNED = 3000  # first-parent commits looked at, newest first, from the pinned head
# a chore, not a question about code: matched as whole words, case-insensitive
CHORE = re.compile(
    r"\b(release[sd]?|bump(s|ed)?|version(s|ing)?|merge[sd]?|typos?|format(s|ted|ting)?|lint(s|ed|ing|er)?|"
    r"ci|docs?|document(s|ed|ing)?|documentation|readme|deps|dependenc(y|ies)|dependabot|renovate|changelog|revert(s|ed)?|wip|"
    r"copyright|license|cleanup|clean-up|whitespace)\b", re.IGNORECASE)
# a conventional-commit type that is a chore ("chore(x): ...", "test: ...")
CHORE_TYPE = re.compile(r"^\s*(chore|ci|docs?|build|style|test|tests|release|deps)(\([^)]*\))?!?:",
                        re.IGNORECASE)
BOT = re.compile(r"\[bot\]|dependabot|renovate|github-actions|greenkeeper|\bbot@", re.IGNORECASE)
VERSION_LIKE = re.compile(r"\bv?\d+\.\d+(\.\d+)?\b")
# tests and documentation are indexed but are not source: never a target, not counted in the 1-4
TEST_DIRS = frozenset({"test", "tests", "spec", "specs", "__tests__", "__mocks__", "testdata", "test_data",
                       "testing", "fixtures", "fixture", "e2e", "integration", "javatests", "test-fixtures", "regress"})
DOC_DIRS = frozenset({"docs", "doc", "documentation", "examples", "example", "website", "site", "benchmarks",
                      "bench"})
TEST_NAME = re.compile(
    r"^(test_.*\.py|conftest\.py|.*_test\.(py|go|rb|c|rs)|.*_spec\.rb|.*\.(test|spec)\.[cm]?[jt]sx?|"
    r".*Tests?\.java|.*TestCase\.java|tests?\.rs)$")
BUILD_FILES = frozenset({"setup.py", "noxfile.py", "Rakefile", "Gemfile", "build.rs", "gulpfile.js",
                         "Gruntfile.js", "webpack.config.js", "rollup.config.js", "vite.config.ts",
                         "eslint.config.js", "eslint.config.mjs", "karma.conf.js", "magefile.go"})
PR_REF = re.compile(r"\s*\((#\d+(,\s*)?)+\)\s*$")
_SOURCE_EXTS = frozenset(DEFAULT_EXTS)


@dataclass(frozen=True)
class Commit:
    sha: str
    parent: str
    date: str  # ISO committer date
    subject: str
    author: str
    changes: tuple[tuple[str, str], ...]  # (status letter, path) of every changed file, renames split


@dataclass(frozen=True)
class Task:
    repo: str
    sha: str
    parent: str
    date: str
    subject: str
    targets: tuple[str, ...]  # the changed source files, all present at the parent

    @property
    def names_file(self) -> bool:
        return names_a_file(self.subject, self.targets)


def is_test_or_doc(path: str) -> bool:
    parts = path.split("/")
    if any(p.lower() in TEST_DIRS or p.lower() in DOC_DIRS for p in parts[:-1]):
        return True
    return bool(TEST_NAME.match(parts[-1]))


def is_build_file(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return name.endswith((".gradle", ".gradle.kts")) or name in BUILD_FILES


def is_source(path: str) -> bool:
    """A file SAI indexes by default (its extension table less the documents) that is not a test,
    a doc or a build script."""
    return ext_of(path) in _SOURCE_EXTS and not is_test_or_doc(path) and not is_build_file(path)


def query_of(subject: str) -> str:
    """The subject as asked: a trailing pull-request reference, "(#123)", left out."""
    return PR_REF.sub("", subject).strip()


def subject_ok(subject: str) -> bool:
    words = query_of(subject).split()
    return (MIN_WORDS <= len(words) <= MAX_WORDS and not CHORE.search(subject) and not CHORE_TYPE.match(subject)
            and not VERSION_LIKE.search(subject))


def task_of(repo: str, c: Commit) -> Task | None:
    """The commit as a task, or None when the rule refuses it."""
    if BOT.search(c.author) or not subject_ok(c.subject):
        return None
    source = [(status, path) for status, path in c.changes if is_source(path)]
    if not 1 <= len(source) <= MAX_SOURCE_FILES:
        return None
    if any(status not in ("M", "D") for status, _ in source):  # an added file cannot be found at the parent
        return None
    return Task(repo, c.sha, c.parent, c.date, c.subject, tuple(sorted(path for _, path in source)))


def names_a_file(subject: str, targets: tuple[str, ...]) -> bool:
    """The subject holds a changed file's basename or stem (3+ characters) as a whole word."""
    lowered = subject.lower()
    for path in targets:
        base = path.rsplit("/", 1)[-1].lower()
        for name in {base, base.rsplit(".", 1)[0]}:
            if len(name) >= 3 and re.search(r"(?<![A-Za-z0-9_])" + re.escape(name) + r"(?![A-Za-z0-9_])", lowered):
                return True
    return False


def git(tree: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True, check=True).stdout


def history(tree: Path, head: str, scanned: int = SCANNED) -> list[Commit]:
    """The newest `scanned` first-parent, non-merge commits up to head, newest first."""
    out = git(tree, "log", "--first-parent", "--no-merges", "--no-renames", f"-n{scanned}", "--name-status",
              "--format=%x00%H%x01%P%x01%cI%x01%an <%ae>%x01%s", head)
    commits = []
    for record in out.split("\0")[1:]:
        head_line, _, rest = record.partition("\n")
        sha, parents, date, author, subject = head_line.split("\x01", 4)
        if len(parents.split()) != 1:
            continue
        changes = tuple((line.split("\t")[0][:1], line.split("\t")[-1]) for line in rest.splitlines() if "\t" in line)
        commits.append(Commit(sha, parents, date, subject.strip(), author, changes))
    return commits


def select(repo: str, tree: Path, head: str, count: int) -> list[Task]:
    """The newest `count` qualifying commits up to head, oldest first (the replay order)."""
    chosen: list[Task] = []
    for c in history(tree, head):
        task = task_of(repo, c)
        if task is not None:
            chosen.append(task)
            if len(chosen) == count:
                break
    return chosen[::-1]
