"""Vendored and minified code: which directories the walk calls vendored, which files it leaves
out as minified, and how search, status and --dry-run treat them."""

from __future__ import annotations

import json

from fixtures_tree import index_tree, load, run_cli, write_tree

from sai.query import search
from sai.query.status import status
from sai.source import files
from sai.source.vendored import is_licence, licence_key

MIT = "MIT License\n\nCopyright (c) {year} The Owners\n\nPermission is hereby granted, free of charge ...\n"
ICU = "ICU License - ICU 1.8.1 and later\n\nCOPYRIGHT AND PERMISSION NOTICE\n\nCopyright (c) 1995-2005 IBM\n"
ROUND = "def round_half_even(value, places):\n    scale = 10 ** places\n    return round(value * scale) / scale\n"


def _walk(tmp_path, tree):
    write_tree(tmp_path, tree)
    return files.walk(load(tmp_path).walk)


def test_a_folder_with_a_licence_unlike_the_roots_is_vendored_and_a_package_repeating_it_is_not(tmp_path):
    walked = _walk(tmp_path, {
        "LICENSE": MIT.format(year="2019"),
        "packages/core/LICENSE": MIT.format(year="2021-2024"),  # a monorepo's own package
        "packages/core/a.py": ROUND,
        "src/decnum/ICU-license.html": ICU,  # a copied library under a name of its own
        "src/decnum/dec.py": ROUND,
        "src/main.py": ROUND,
    })
    assert walked.vendored == ("src/decnum",)


def test_named_folders_and_submodules_are_vendored_outermost_only_and_nothing_without_a_root_licence(tmp_path):
    walked = _walk(tmp_path, {
        ".gitmodules": '[submodule "libs/yaml"]\n\tpath = libs/yaml\n\turl = https://example.invalid/yaml\n',
        "libs/yaml/parse.py": ROUND,
        "third_party/zlib/deps/inner.py": ROUND,
        "lib/other/LICENSE": ICU,  # no licence at the root to compare with: not vendored by licence
        "lib/other/x.py": ROUND,
        "main.py": ROUND,
    })
    assert walked.vendored == ("libs/yaml", "third_party")


def test_licence_names_are_recognised_and_source_files_named_license_are_not():
    assert all(map(is_licence, ["LICENSE", "License.md", "COPYING.LIB", "LICENSE-MIT", "ICU-license.html",
                                "UNLICENSE", "licenses.txt"]))
    assert not any(map(is_licence, ["license.py", "licenses.go", "LicenseChecker.java", "README.md"]))
    assert licence_key(MIT.format(year="2019")) == licence_key(MIT.format(year="2020 - 2024").replace(" ", "  "))


def test_a_minified_file_is_left_out_and_written_code_with_a_long_line_is_not(tmp_path):
    minified = "var a=function(b){return b*2};" * 400  # 12 KB on one line
    long_line = "x = 1\n" * 60 + "TABLE = [" + ", ".join(str(i) for i in range(300)) + "]\n" + "y = 2\n" * 60
    walked = _walk(tmp_path, {"docs/app.min.js": minified, "gen/bundle.js": minified + "\n" + minified,
                              "src/table.py": long_line, "src/app.js": "function a(b) {\n  return b * 2;\n}\n"})
    assert dict(walked.excluded) == {"docs/app.min.js": "minified", "gen/bundle.js": "minified"}
    assert [s.key for s in walked.included] == ["src/app.js", "src/table.py"]


def test_search_ranks_vendored_code_down_unless_the_query_names_it(tmp_path, ollama_server, capsys):
    vendored = ("def round_half_even(value, places):\n    factor = pow(10, places)\n"
                "    rounded = round(value * factor)\n    return rounded / factor\n")  # not a copy: no fold
    tree = {"LICENSE": MIT.format(year="2020"), "decnum/COPYING": ICU, "decnum/rounding.py": vendored,
            "app/rounding.py": ROUND.replace("round_half_even", "round_half_even_amount")}
    project = index_tree(tmp_path, ollama_server.url, tree)
    try:
        hits = search.search(project, "round half even value to places", limit=2, explain=True)
        assert [h.path for h in hits] == ["app/rounding.py", "decnum/rounding.py"]
        assert hits[1].explain is not None and hits[1].explain.signals is not None
        assert hits[1].explain.signals.vendored == 0.5
        named = search.search(project, "decnum round half even value", limit=2, explain=True)
        vendored = next(h for h in named if h.path == "decnum/rounding.py")
        assert vendored.explain is not None and vendored.explain.signals is not None
        assert vendored.explain.signals.vendored == 1.0
        assert status(project).vendored_dirs == ("decnum",)
    finally:
        project.close()
    code, out, _ = run_cli(capsys, "--root", str(tmp_path), "status", "--json")
    assert code == 0 and json.loads(out)["vendored_dirs"] == ["decnum"]
    code, out, _ = run_cli(capsys, "--root", str(tmp_path), "--dry-run")
    assert code == 0 and "vendored (indexed, ranked down): decnum" in out
