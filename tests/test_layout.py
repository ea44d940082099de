"""The test tree's one rule of imports: helpers shared by test modules live in helper modules
(tests/*.py not named test_*, or a folder's conftest.py), never in another test module."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(path: Path) -> set[str]:
    """The top-level names of the modules `path` imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_no_test_module_imports_another_test_module() -> None:
    offenders = {
        str(path.relative_to(TESTS)): sorted(name for name in imported_modules(path)
                                             if name.startswith("test_") or name == "conftest")
        for path in sorted(TESTS.rglob("*.py"))
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_every_helper_module_is_at_the_top_of_the_tree() -> None:
    """Only `tests` is on pytest's pythonpath: a helper module in a folder would import by the
    accident of its importer's folder being on sys.path."""
    helpers = [path for path in TESTS.rglob("*.py")
               if not path.name.startswith("test_") and path.name != "conftest.py"]
    assert helpers and all(path.parent == TESTS for path in helpers), helpers
