"""Walking the tree: extensions, globs, gitignore, pruning, size/binary/generated filters."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures_tree import write_tree

from sai.config import load_config
from sai.errors import OutsideRootError
from sai.models import SourceFile
from sai.source.files import SkipFileError, WalkFilters, check_file, glob_match, key_for, read_source, walk
from sai.source.languages import ext_of, language_for, language_of


def config(where: Path, /, **flags: object) -> WalkFilters:
    return load_config(flags=flags, env={}, cwd=where).walk


def included(where: Path, /, **flags: object) -> list[str]:
    return [source.key for source in walk(config(where, **flags)).included]


def excluded(where: Path, /, **flags: object) -> dict[str, str]:
    return dict(walk(config(where, **flags)).excluded)


def test_walk_includes_wanted_extensions_sorted_and_never_reports_other_extensions(tmp_path):
    write_tree(tmp_path, {"b.py": "x = 1\n", "a/z.ts": "let z = 1\n", "a/b.go": "package a\n",
                    "notes.pdf": "%PDF\n", "Makefile": "all:\n"})
    result = walk(config(tmp_path))
    assert [s.key for s in result.included] == ["a/b.go", "a/z.ts", "b.py"]
    assert result.excluded == ()
    first = result.included[0]
    assert Path(first.path) == tmp_path / "a" / "b.go" and Path(first.path).is_absolute()
    assert (first.language, first.size) == ("go", len("package a\n"))
    assert first.mtime_ns == os.stat(tmp_path / "a" / "b.go").st_mtime_ns


def test_walk_names_docs_and_text_files_it_has_no_language_for_and_indexes_docs_when_asked(tmp_path):
    write_tree(tmp_path, {"README.md": "# Use\n", "api.proto": "message A {}\n", "conf.json": "{}\n",
                          "logo.png": "x", ".gitignore": "secret.json\n", "secret.json": "{}\n", "a.py": "x\n"})
    result = walk(config(tmp_path))
    assert [(s.key, s.language) for s in result.included] == [("a.py", "python")]
    assert result.excluded == (("README.md", "docs"), ("api.proto", "no-language"), ("conf.json", "no-language"))
    docs = walk(config(tmp_path, ext=["py", "md"]))
    assert [(s.key, s.language) for s in docs.included] == [("README.md", "markdown"), ("a.py", "python")]
    chosen = walk(config(tmp_path, ext=["json"]))  # asked for, a text format is line windows
    assert [s.key for s in chosen.included] == ["conf.json"]
    assert chosen.excluded == (("README.md", "docs"), ("api.proto", "no-language"), ("secret.json", "gitignore"))


def test_walk_order_is_the_same_whatever_order_files_were_created_in(tmp_path):
    names = ["m/b.py", "a.py", "m/a.py", "z/y/x.py", "B.py", "m.py"]
    for index, order in enumerate((names, list(reversed(names)))):
        write_tree(tmp_path / str(index), {name: "x = 1\n" for name in order})
    first, second = included(tmp_path / "0"), included(tmp_path / "1")
    assert first == second == sorted(names)


def test_config_ext_limits_walk_to_the_listed_extensions(tmp_path):
    write_tree(tmp_path, {"a.py": "x\n", "b.ts": "x\n", "c.md": "x\n"})
    assert included(tmp_path, ext="md,.py") == ["a.py", "c.md"]


def test_nested_gitignore_negation_reincludes_a_file_and_rules_are_relative_to_their_dir(
    tmp_path,
):
    write_tree(tmp_path, {
        ".gitignore": "# generated code\n*_gen.py\nlogs/\n",
        "pkg/.gitignore": "!keep_gen.py\n/local.py\n",
        "pkg/keep_gen.py": "x\n", "pkg/drop_gen.py": "x\n", "pkg/local.py": "x\n",
        "other/local.py": "x\n", "other/keep_gen.py": "x\n", "logs/app.py": "x\n",
        "pkg/logs/deep.py": "x\n", "main.py": "x\n",
    })
    assert included(tmp_path) == ["main.py", "other/local.py", "pkg/keep_gen.py"]
    assert excluded(tmp_path) == {
        "other/keep_gen.py": "gitignore", "pkg/drop_gen.py": "gitignore",
        "pkg/local.py": "gitignore",
    }


def test_file_under_an_ignored_directory_cannot_be_reincluded(tmp_path):
    write_tree(tmp_path, {".gitignore": "vendor/\n!vendor/keep.py\n", "vendor/keep.py": "x\n",
                    "src/vendor/lib.py": "x\n", "ok.py": "x\n"})
    assert included(tmp_path) == ["ok.py"]
    cfg = config(tmp_path)
    assert check_file(cfg, "vendor/keep.py") == "gitignore"
    assert check_file(cfg, "src/vendor/lib.py") == "gitignore"


def test_dir_only_pattern_does_not_ignore_a_file_of_that_name(tmp_path):
    write_tree(tmp_path, {".gitignore": "cache/\n", "cache": "not a dir\n", "cache.py": "x\n",
                    "a/cache/b.py": "x\n"})
    assert included(tmp_path, ext="py,") == ["cache.py"]
    assert check_file(config(tmp_path), "a/cache/b.py") == "gitignore"


def test_git_info_exclude_is_honoured_and_weaker_than_gitignore(tmp_path):
    write_tree(tmp_path, {".git/info/exclude": "secret*.py\nscratch.py\n",
                    ".gitignore": "!secret_ok.py\n", "secret_a.py": "x\n",
                    "secret_ok.py": "x\n", "scratch.py": "x\n", "main.py": "x\n"})
    assert included(tmp_path) == ["main.py", "secret_ok.py"]
    assert excluded(tmp_path) == {"scratch.py": "gitignore", "secret_a.py": "gitignore"}


def test_gitignore_escapes_anchors_and_double_star(tmp_path):
    write_tree(tmp_path, {
        ".gitignore": "\\#hash.py\n/top.py\ndocs/**/gen_*.py\n**/tmp/*.py\nspace.py\\ \n",
        "#hash.py": "x\n", "top.py": "x\n", "sub/top.py": "x\n", "docs/gen_a.py": "x\n",
        "docs/x/y/gen_b.py": "x\n", "docs/hand.py": "x\n", "a/b/tmp/t.py": "x\n",
        "space.py": "x\n",
    })
    assert included(tmp_path) == ["docs/hand.py", "space.py", "sub/top.py"]


def test_respect_gitignore_false_indexes_ignored_files(tmp_path):
    write_tree(tmp_path, {".gitignore": "*.py\n", "a.py": "x\n"})
    assert included(tmp_path) == []
    assert included(tmp_path, respect_gitignore=False) == ["a.py"]


def test_gitignore_of_the_work_tree_applies_when_root_is_a_subdirectory(tmp_path):
    write_tree(tmp_path, {".git/info/exclude": "nope.py\n", ".gitignore": "app/skip_*.py\n",
                    "app/skip_me.py": "x\n", "app/nope.py": "x\n", "app/keep.py": "x\n"})
    assert included(tmp_path, root="app") == ["keep.py"]
    assert excluded(tmp_path, root="app") == {"nope.py": "gitignore", "skip_me.py": "gitignore"}


def test_always_pruned_and_configured_dirs_are_skipped_at_any_depth(tmp_path):
    write_tree(tmp_path, {"node_modules/a.js": "x\n", "web/node_modules/b.js": "x\n",
                    ".git/hooks/c.py": "x\n", "x/__pycache__/d.py": "x\n", "gen/e.py": "x\n",
                    "src/gen/f.py": "x\n", "src/g.py": "x\n"})
    result = walk(config(tmp_path, exclude_dirs=["gen"]))
    assert [s.key for s in result.included] == ["src/g.py"]
    assert result.excluded == ()
    assert "gen" in result.pruned_dirs and "node_modules" in result.pruned_dirs
    assert list(result.pruned_dirs) == sorted(result.pruned_dirs)
    assert check_file(config(tmp_path, exclude_dirs=["gen"]), "src/gen/f.py") == "pruned-dir"


def test_include_allow_list_and_exclude_globs_with_double_star(tmp_path):
    write_tree(tmp_path, {"src/a.py": "x\n", "src/x/y/b.py": "x\n", "src/x/test_c.py": "x\n",
                    "lib/d.py": "x\n", "src/e.ts": "x\n"})
    flags = {"include": ["src/**/*.py"], "exclude": ["test_*.py"]}
    assert included(tmp_path, **flags) == ["src/a.py", "src/x/y/b.py"]
    assert excluded(tmp_path, **flags) == {
        "lib/d.py": "not-included", "src/e.ts": "not-included", "src/x/test_c.py": "glob",
    }


def test_exclude_glob_wins_over_include(tmp_path):
    write_tree(tmp_path, {"src/a.py": "x\n"})
    assert excluded(tmp_path, include=["src/*"], exclude=["src/*"]) == {"src/a.py": "glob"}


def test_glob_star_and_question_mark_cross_directories_as_in_globset():
    # globset's defaults (docs/configuration.md): `*` and `?` also match '/'; before, they did not
    assert glob_match("src/*.py", "src/a.py") and glob_match("src/*.py", "src/x/a.py")
    assert not glob_match("src/*.py", "lib/src/a.py")
    assert glob_match("src/**/*.py", "src/a.py") and glob_match("src/**/*.py", "src/x/y/a.py")
    assert glob_match("*.py", "deep/down/a.py")
    assert glob_match("test_*.py", "src/x/test_c.py")  # no '/': matches the file name
    assert glob_match("src/a?.py", "src/a/.py")
    assert glob_match("vendor/", "vendor/x/y.go") and not glob_match("vendor/", "vendorx/y.go")
    assert glob_match("[!a]*.py", "b.py") and not glob_match("[!a]*.py", "a.py")


def test_file_over_max_file_bytes_is_too_large(tmp_path):
    write_tree(tmp_path, {"big.py": "x" * 101, "small.py": "x" * 100})
    assert included(tmp_path, max_file_bytes=100) == ["small.py"]
    assert excluded(tmp_path, max_file_bytes=100) == {"big.py": "too-large"}


def test_nul_byte_makes_a_file_binary(tmp_path):
    write_tree(tmp_path, {"blob.py": b"x = 1\n\x00\x01", "ok.py": "x = 1\n"})
    assert excluded(tmp_path) == {"blob.py": "binary"}


def test_invalid_utf8_is_binary_in_the_walk_and_in_read_source(tmp_path):
    write_tree(tmp_path, {"latin.py": b"name = '\xe9'\n", "utf8.py": "name = 'é'\n",
                    "late.py": b"x = 1\n" * 2000 + b"\xff\n"})
    cfg = config(tmp_path)
    result = walk(cfg)
    assert dict(result.excluded) == {"latin.py": "binary"}
    by_key = {s.key: s for s in result.included}
    assert read_source(by_key["utf8.py"], cfg) == "name = 'é'\n"
    # Past the 8 KiB head the walk reads, the bad byte is caught when the full text is read.
    with pytest.raises(SkipFileError) as caught:
        read_source(by_key["late.py"], cfg)
    assert caught.value.reason == "binary" and caught.value.key == "late.py"


def test_generated_marker_in_the_first_600_bytes_skips_the_file(tmp_path):
    write_tree(tmp_path, {"gen.go": "// Code generated by protoc. DO NOT EDIT.\npackage x\n",
                    "tag.py": "# @Generated\n", "late.py": "x = 1\n" * 120 + "# do not edit\n"})
    assert excluded(tmp_path) == {"gen.go": "generated-marker", "tag.py": "generated-marker"}
    assert included(tmp_path) == ["late.py"]
    assert included(tmp_path, skip_generated_marker=False) == ["gen.go", "late.py", "tag.py"]


def test_special_file_is_unreadable_and_never_opened(tmp_path):
    write_tree(tmp_path, {"ok.py": "x\n"})
    os.mkfifo(tmp_path / "pipe.py")  # opening a FIFO for reading would block the walk
    assert excluded(tmp_path) == {"pipe.py": "unreadable"}
    assert check_file(config(tmp_path), "pipe.py") == "unreadable"


_WALK_AS_UNPRIVILEGED = """
import json, pathlib, sys
from sai.config import load_config
from sai.source.files import check_file, walk
cfg = load_config(flags={}, env={}, cwd=pathlib.Path(sys.argv[1])).walk
print(json.dumps([dict(walk(cfg).excluded), check_file(cfg, "locked.py")]))
"""


def test_permission_denied_file_is_unreadable(tmp_path):
    write_tree(tmp_path, {"locked.py": "x\n", "ok.py": "x\n"})
    (tmp_path / "locked.py").chmod(0)
    if os.geteuid() != 0:
        walked, checked = excluded(tmp_path), check_file(config(tmp_path), "locked.py")
    else:
        # root reads through chmod 000; drop the capabilities that allow it in a child process
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: cannot make a file unreadable")
        done = subprocess.run(
            ["setpriv", "--bounding-set=-dac_override,-dac_read_search", sys.executable,
             "-c", _WALK_AS_UNPRIVILEGED, str(tmp_path)],
            capture_output=True, text=True, check=False,
        )
        if done.returncode != 0 and "setpriv" in done.stderr:
            pytest.skip(f"cannot drop capabilities here: {done.stderr.strip()}")
        walked, checked = json.loads(done.stdout)
    assert walked == {"locked.py": "unreadable"}
    assert checked == "unreadable"


def test_symlink_loop_and_symlinked_file_are_skipped_without_hanging(tmp_path):
    write_tree(tmp_path, {"pkg/real.py": "x\n", "outside/o.py": "x\n"})
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path / "pkg", target_is_directory=True)
    (tmp_path / "pkg" / "alias.py").symlink_to(tmp_path / "pkg" / "real.py")
    (tmp_path / "pkg" / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    cfg = config(tmp_path, exclude_dirs=["outside"])
    result = walk(cfg)
    assert [s.key for s in result.included] == ["pkg/real.py"]
    assert dict(result.excluded) == {"pkg/alias.py": "symlink", "pkg/dangling.py": "symlink"}
    assert check_file(cfg, "pkg/loop/real.py") == "symlink"
    assert check_file(cfg, "pkg/alias.py") == "symlink"


def test_check_file_gives_the_same_answer_as_walk_for_every_file(tmp_path):
    write_tree(tmp_path, {
        ".gitignore": "*.log.py\n", "sub/.gitignore": "!keep.log.py\n", "a.log.py": "x\n",
        "sub/keep.log.py": "x\n", "sub/b.log.py": "x\n", "big.py": "x" * 300,
        "bin.py": b"\x00", "gen.py": "# @generated\n", "src/ok.py": "x\n", "src/t_x.py": "x\n",
        "other/c.ts": "x\n",
    })
    (tmp_path / "link.py").symlink_to(tmp_path / "src" / "ok.py")
    globs = {"exclude": ["t_*.py"], "include": ["src/**", "sub/**", "*.py"]}
    cfg = config(tmp_path, max_file_bytes=200, **globs)
    result = walk(cfg)
    assert [s.key for s in result.included] == ["src/ok.py", "sub/keep.log.py"]
    assert {reason for _, reason in result.excluded} == {
        "binary", "generated-marker", "gitignore", "glob", "not-included", "symlink", "too-large",
    }
    for source in result.included:
        assert check_file(cfg, source.key) == source
    for key, reason in result.excluded:
        assert check_file(cfg, key) == reason


def test_check_file_names_missing_files_unwanted_extensions_and_ignored_parents(tmp_path):
    write_tree(tmp_path, {".gitignore": "out/\n", "out/x.py": "x\n", "notes.pdf": "x\n", "a.json": "{}\n",
                    "node_modules/m.js": "x\n", "./ok.py": "x\n"})
    cfg = config(tmp_path)
    assert check_file(cfg, "gone.py") == "missing"
    assert check_file(cfg, "notes.pdf") == "ext" and check_file(cfg, "a.json") == "no-language"
    assert check_file(cfg, "out/x.py") == "gitignore"
    assert check_file(cfg, "node_modules/m.js") == "pruned-dir"
    assert isinstance(check_file(cfg, "./ok.py"), SourceFile)
    with pytest.raises(OutsideRootError):
        check_file(cfg, "../ok.py")


def test_key_for_maps_inside_paths_to_keys_and_refuses_outside_ones(tmp_path):
    root = tmp_path / "proj"
    write_tree(root, {"src/a.py": "x\n"})
    write_tree(tmp_path, {"elsewhere.py": "x\n"})
    (root / "escape.py").symlink_to(tmp_path / "elsewhere.py")
    cfg = config(root)
    assert key_for(cfg.root, "src/../src/a.py", cwd=root) == "src/a.py"
    assert key_for(cfg.root, root / "src" / "a.py") == "src/a.py"
    assert key_for(cfg.root, "a.py", cwd=root / "src") == "src/a.py"
    for outside in ("../elsewhere.py", str(tmp_path / "elsewhere.py"), "escape.py"):
        with pytest.raises(OutsideRootError, match="outside the project root"):
            key_for(cfg.root, outside, cwd=root)


def test_read_source_reports_a_file_gone_or_replaced_since_the_walk(tmp_path):
    write_tree(tmp_path, {"a.py": "x = 1\n", "b.py": "y = 2\n"})
    cfg = config(tmp_path)
    first, second = walk(cfg).included
    (tmp_path / "a.py").unlink()
    (tmp_path / "b.py").unlink()
    (tmp_path / "b.py").mkdir()
    reasons = []
    for source in (first, second):
        with pytest.raises(SkipFileError) as caught:
            read_source(source, cfg)
        reasons.append(caught.value.reason)
    assert reasons == ["missing", "unreadable"]


def test_read_source_rechecks_size_and_generated_marker(tmp_path):
    write_tree(tmp_path, {"a.py": "x = 1\n"})
    cfg = config(tmp_path, max_file_bytes=50)
    (source,) = walk(cfg).included
    (tmp_path / "a.py").write_text("x = 1\n" * 20)
    with pytest.raises(SkipFileError, match="too-large"):
        read_source(source, cfg)
    (tmp_path / "a.py").write_text("# autogenerated\n")
    with pytest.raises(SkipFileError, match="generated-marker"):
        read_source(source, cfg)


@pytest.mark.parametrize(("key", "ext", "language"), [
    ("src/Main.PY", "py", "python"), ("a/b.tar.gz", "gz", None), ("Makefile", "", None), ("dir.d/name", "", None),
    ("trailing.", "", None), ("lib/x.go", "go", "go"),
    ("boost/asio/impl/io_context.ipp", "ipp", "cpp"), ("src/Vec.INL", "inl", "cpp"), ("m.c++", "c++", "cpp"),
])
def test_a_keys_extension_is_after_its_names_last_dot_and_names_its_language(key, ext, language):
    assert (ext_of(key), language_for(key)) == (ext, language)


@pytest.mark.parametrize(("text", "language"), [
    ("#include <vector>\nint f(void);\n", "cpp"), ("template <typename T>\nT twice(T x);\n", "cpp"),
    ("namespace fmt {\n}\n", "cpp"), ("class Widget : public Base {\n};\n", "cpp"),
    ("struct S {\n  public:\n  int x;\n};\n", "cpp"),
    ("#include <stdio.h>\nstruct point { int x; };\n/* a class of points,\n   namespace aside */\n", "c"),
    ("#ifdef __cplusplus\nextern \"C\" {\n#endif\nint uv_run(void);\n", "c"),
    ("#import <Foundation/Foundation.h>\n@interface Cart : NSObject\n@end\n", "objc"),
])
def test_a_header_is_cpp_or_objc_when_a_line_of_its_code_can_only_be_that(text, language):
    assert language_of("include/x.h", text) == language
    assert language_of("src/x.c", text) == "c" and language_of("src/x.hpp", text) == "cpp"
