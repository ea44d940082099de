"""Globs as globset reads them (sai/source/globs.py), invalid globs as errors, and no glob or ignore line
that can stall a walk or a search."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures_tree import write_tree

from sai.config import load_config
from sai.errors import ConfigError, GlobError, UsageError
from sai.source.files import glob_match, walk
from sai.source.globs import check_glob, compile_glob, fullmatcher, translate

# (glob, key, matches) under globset's default options plus SAI's conveniences
SEMANTICS = [
    # `*` and `?` also match '/'
    ("src/*.py", "src/x/y/a.py", True), ("a*b", "a/x/b", True), ("*.rs", ".rs", True),
    ("src/*.py", "lib/src/a.py", False), ("*.py", "a.pyc", False),
    ("a?b", "a/b", True), ("a?b", "ab", False), ("a?b", "axxb", False),
    # `**` as a whole segment spans directories; elsewhere it is `*`
    ("a/**/b", "a/b", True), ("a/**/b", "a/x/y/b", True), ("a/**/b", "a/xb", False),
    ("a/**/b", "ab", False), ("**/x", "x", True), ("**/x", "a/b/x", True), ("**/x", "a/bx", False),
    ("dir/**", "dir/a", True), ("dir/**", "dir/a/b/c", True), ("dir/**", "dir", False),
    ("dir/**", "dirx/a", False), ("**", "any/thing/at/all", True), ("a**b", "a/x/b", True),
    ("a/**/**/b", "a/b", True), ("**/tests/**", "pkg/tests/unit/t.py", True),
    ("**/tests/**", "pkg/tests.py", False),
    # `{a,b}` alternatives, nested ones too; an empty alternative is dropped; commas elsewhere
    ("{a,b}.py", "a.py", True), ("{a,b}.py", "c.py", False), ("src/{lib,bin}/*.rs", "src/bin/x.rs", True),
    ("src/{lib,bin}/*.rs", "src/doc/x.rs", False), ("{a,{b,c}}.py", "c.py", True),
    ("{{a,b},{c,d}}x", "dx", True), ("{{a,b},{c,d}}x", "ex", False), ("x{,y}", "xy", True),
    ("x{,y}", "x", False), ("{**/a,b}", "d/e/a", True), ("{src/**,*.md}", "src/a/b.py", True),
    ("a,b", "a,b", True), ("a,b", "a", False),
    # `[...]` classes: ranges, `!` and `^` negation, `]` first and `-` first or last are literal
    ("[abc].py", "b.py", True), ("[abc].py", "d.py", False), ("[a-c]x", "bx", True),
    ("[a-c]x", "dx", False), ("[!a-c]x", "dx", True), ("[!a-c]x", "bx", False), ("[^a]x", "bx", True),
    ("[^a]x", "ax", False), ("[]]x", "]x", True), ("[-a]x", "-x", True), ("[a-]x", "-x", True),
    ("[a-]x", "bx", False), ("x[/]y", "x/y", True), ("[*]", "*", True), ("[*]", "a", False),
    ("[0-9][0-9].txt", "42.txt", True), ("[0-9][0-9].txt", "4x.txt", False),
    # `\\` escapes; regex characters are literal; case counts
    ("a\\*b", "a*b", True), ("a\\*b", "axb", False), ("a+b.py", "a+b.py", True),
    ("a+b.py", "aab.py", False), ("(x)|y$", "(x)|y$", True), ("*.PY", "a.py", False),
    ("é?.py", "éa.py", True),
    # SAI's conveniences: no '/' also matches the file name; leading '/' ignored; trailing '/'
    ("c.py", "a/b/c.py", True), ("test_*.py", "src/x/test_c.py", True), ("b/c.py", "a/b/c.py", False),
    ("/src/*.py", "src/a.py", True), ("vendor/", "vendor/a/b.go", True), ("vendor/", "vendorx/b.go", False),
]

INVALID = [
    ("[z-a]", "invalid range; 'z' > 'a'"),
    ("src/[z--]", "invalid range; 'z' > '-'"),
    ("src/[", "unclosed character class; missing ']'"),
    ("[!]", "unclosed character class; missing ']'"),
    ("[]", "unclosed character class; missing ']'"),
    ("{a,b", "unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)"),
    ("{a,{b,c}", "unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)"),
    ("a,b}", "unopened alternate group; missing '{' (maybe escape '}' with '[}]'?)"),
    ("x\\", "dangling '\\'"),
]

PATHOLOGICAL = [
    "**?" * 11 + "**X", "**?**?**?**?**?**?**?**?**X", "*a" * 14 + "*X", "{a,b,ab}" * 12 + "*X",
    "[a-z]*" * 10 + "X", "{*a,*b}" * 8 + "X",
]


def keys(count: int) -> list[str]:
    return [f"src/{'a' * 30}/module_{'ab' * 10}_{i}/{'a' * 40}.py" for i in range(count)]


@pytest.mark.parametrize(("glob", "key", "expected"), SEMANTICS)
def test_glob_follows_globset_semantics(glob: str, key: str, expected: bool) -> None:
    assert glob_match(glob, key) is expected


FULL_KEY = [row for row in SEMANTICS if "/" in row[0] and row[0].strip("/") == row[0]]


@pytest.mark.parametrize(("glob", "key", "expected"), FULL_KEY)
def test_backtracking_and_linear_engines_agree_on_every_glob(glob: str, key: str, expected: bool) -> None:
    regex = translate(glob)
    answers = {fullmatcher(regex, linear=linear)(key) is not None for linear in (False, True)}
    assert answers == {expected}


def test_double_star_compiles_to_globset_regexes() -> None:
    assert translate("a/**/b") == "a(?:/|/.*/)b"
    assert translate("**/b") == "(?:/?|.*/)b"
    assert translate("a/**") == "a/.*"
    assert translate("**/**/**") == translate("**") == ".*"
    assert translate("{a,{b,c}}") == "(?:a|(?:b|c))"


@pytest.mark.parametrize(("glob", "reason"), INVALID)
def test_invalid_glob_is_an_error_naming_the_glob_and_globsets_reason(glob: str, reason: str) -> None:
    with pytest.raises(GlobError) as raised:
        glob_match(glob, "src/a.py")
    assert isinstance(raised.value, UsageError)
    assert str(raised.value) == f"invalid path_glob: {glob}: {reason}"
    assert (raised.value.pattern, raised.value.reason) == (glob, reason)
    with pytest.raises(GlobError):
        check_glob(glob)


def test_glob_too_large_for_the_linear_engine_is_an_error_not_a_crash() -> None:
    with pytest.raises(GlobError) as raised:
        check_glob("*a" * 100_000)
    assert raised.value.reason == "too large to match; use a shorter glob"


def test_check_glob_accepts_no_glob_and_valid_ones() -> None:
    for glob in (None, "", "src/**/*.{py,pyi}", "[!a-z]?"):
        check_glob(glob)
    assert compile_glob("src/**") is compile_glob("src/**")  # compiled once, then cached


@pytest.mark.parametrize("glob", PATHOLOGICAL)
def test_pathological_glob_answers_300_keys_in_well_under_a_second(glob: str) -> None:
    candidates = keys(300)
    start = time.perf_counter()
    matched = [key for key in candidates if glob_match(glob, key)]
    assert time.perf_counter() - start < 1.0  # `re` alone: minutes per key
    assert matched == []


def test_pathological_include_glob_does_not_stall_the_walk(tmp_path: Path) -> None:
    write_tree(tmp_path, {f"{'a' * 40}{i}.py": "x = 1\n" for i in range(50)} | {"bbbbbbbbbbbbX.py": "x\n"})
    cfg = load_config(flags={"include": ["**?" * 11 + "**X.py"]}, env={}, cwd=tmp_path)
    start = time.perf_counter()
    result = walk(cfg.walk)
    assert time.perf_counter() - start < 1.0
    assert [s.key for s in result.included] == ["bbbbbbbbbbbbX.py"]


def test_pathological_gitignore_line_does_not_stall_the_walk_and_still_applies(tmp_path: Path) -> None:
    long_name = "a" * 60
    write_tree(tmp_path, {
        ".gitignore": "*a*a*a*a*a*a*a*a*a*a*a*a*b.py\n", f"{long_name}.py": "x\n",
        f"{long_name}b.py": "x\n", "other.py": "x\n",
    })
    start = time.perf_counter()
    result = walk(load_config(env={}, cwd=tmp_path).walk)
    assert time.perf_counter() - start < 1.0
    assert [s.key for s in result.included] == [f"{long_name}.py", "other.py"]
    assert dict(result.excluded) == {f"{long_name}b.py": "gitignore"}


def test_gitignore_line_that_cannot_match_is_skipped_and_the_others_apply(tmp_path: Path) -> None:
    write_tree(tmp_path, {".gitignore": "[z-a].py\nskip.py\n", "skip.py": "x\n", "z.py": "x\n"})
    result = walk(load_config(env={}, cwd=tmp_path).walk)
    assert [s.key for s in result.included] == ["z.py"]
    assert dict(result.excluded) == {"skip.py": "gitignore"}


def test_gitignore_stars_stay_inside_one_directory(tmp_path: Path) -> None:
    # .gitignore keeps git's rules, unlike path_glob: `*` and `?` never match '/'
    write_tree(tmp_path, {".gitignore": "src/*.py\nsrc/?/x.py\n", "src/a.py": "x\n",
                          "src/deep/b.py": "x\n", "src/q/x.py": "x\n"})
    result = walk(load_config(env={}, cwd=tmp_path).walk)
    assert [s.key for s in result.included] == ["src/deep/b.py"]


def test_include_and_exclude_use_braces_and_classes(tmp_path: Path) -> None:
    write_tree(tmp_path, {"src/a.py": "x\n", "lib/b.py": "x\n", "doc/c.py": "x\n", "src/t1.py": "x\n"})
    flags = {"include": ["{src,lib}/**"], "exclude": ["src/t[0-9].py"]}
    result = walk(load_config(flags=flags, env={}, cwd=tmp_path).walk)
    assert [s.key for s in result.included] == ["lib/b.py", "src/a.py"]
    assert dict(result.excluded) == {"doc/c.py": "not-included", "src/t1.py": "glob"}


@pytest.mark.parametrize("key", ["include", "exclude"])
def test_bad_glob_in_config_is_a_config_error(tmp_path: Path, key: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(flags={key: ["src/**", "[z-a]"]}, env={}, cwd=tmp_path)
    assert str(raised.value) == f"command line: bad {key} glob: [z-a]: invalid range; 'z' > 'a'"


def run_sai(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "OLLAMA_HOST" and not k.startswith("SAI_")}
    return subprocess.run(
        [sys.executable, "-m", "sai", *args], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=60, stdin=subprocess.DEVNULL, check=False,
    )


def test_cli_dry_run_with_a_bad_include_glob_exits_1_with_one_line(tmp_path: Path) -> None:
    write_tree(tmp_path, {"sai-cfg.yml": "include: ['src/{a,b']\n", "src/a.py": "x\n"})
    done = run_sai(tmp_path, "--dry-run")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [
        f"error: {tmp_path / 'sai-cfg.yml'}: bad include glob: src/{{a,b: unclosed alternate group; "
        "missing '}' (maybe escape '{' with '[{]'?)"
    ]


def test_cli_duplicates_with_a_bad_path_glob_exits_2_before_any_work(tmp_path: Path) -> None:
    write_tree(tmp_path, {"sai-cfg.yml": "ext: [py]\n", "a.py": "x\n"})
    done = run_sai(tmp_path, "duplicates", "--path-glob", "[z-a]")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == ["error: invalid path_glob: [z-a]: invalid range; 'z' > 'a'"]
    assert not (tmp_path / ".index").exists()  # refused before the (missing) index was looked at
