"""Which definition a use means, by cheap rules only (docs/cli.md, "What is resolved"):

1. a receiver whose class the file tells (`self.total()` in a method of `Cart`; `cart.total()`
   after `cart: Cart` or `cart = Cart()`; `Cart().total()`; `super().total()` in a class whose
   first base is `Cart`): `Cart.total` defined in the same file, else in the files of the module
   the file imported `Cart` from (Go: in its package's directory); an inherited method is not
   followed;
2. a name its file imported from a module of the repository (`from pkg.mod import f`, JS
   `import {f} from "./mod"`, CommonJS `const f = require("./mod")`, Go's `pkg.F` after
   importing `…/pkg`, Java `import a.b.C`, Rust `use crate::a::f`): the definition of that name
   in the module's files, or where a package file among them imports it from (`__init__.py`, an
   `index.ts` re-exporting it), up to REEXPORT_DEPTH files on;
3. a bare name (no qualifier) defined in the use's own file, at top level or inside a unit
   enclosing the use (a nested function, a namespace), the innermost first, never a class
   member (Go: in its package's directory).

Anything else is only name-matched: `resolved` false, never a guess among the candidates,
except where the language's scopes say a use cannot mean any definition of its name the
repository holds (`unrelated`). In Python a bare name its file neither defines, imports nor may
import with `*` is a local, a parameter or a built-in, and a method called on a name its file
did not import (`items.pop()`) is no top-level function or class. In an ES module (a JavaScript
or TypeScript file that imports or exports) a bare name it neither declares nor imports is a
local or a global of the platform (`new Response()`), and a method called on a name it did not
import (`header.trim()`) is no top-level function or class, when every definition of the name
is in an ES module and none in a `.d.ts` file (which may declare globals). Those are left out.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from functools import cached_property

from sai.models import Definition, Reference

_ES_LANGUAGES = frozenset({"javascript", "typescript", "tsx"})
_JS_SUFFIXES = ("", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".d.ts", "/index.ts", "/index.tsx", "/index.js")
_SEGMENT_SPLIT = re.compile(r"::|[./\\:]+")
_ROOTS = frozenset({"crate", "self", "super", "", "*"})
_SUFFIX_DEPTH = 4  # path segments a module is matched on from its end (`a/b/c/d.py` from `b.c.d`)
REEXPORT_DEPTH = 3  # files an imported name is followed through (`pkg/__init__.py` -> `pkg/core.py`)
# The files a package re-exports its modules' names from, the only ones followed on (reading
# every module's imports cost impact ~50 file reads an answer on the standard library)
_PACKAGE_FILE = re.compile(r"(?:^|/)(?:__init__\.pyi?|index\.[cm]?[jt]sx?|mod\.rs|lib\.rs)$")
_MEMBER_KINDS = frozenset({"method", "constructor", "destructor", "operator", "field", "property"})
# A file's imports: bound name -> the modules it was imported from ("*": every module imported whole).
ImportsOf = Callable[[str], dict[str, list[str]]]


class Resolver:
    """Resolves uses against the definitions of their names and the repository's file keys."""

    def __init__(self, files: FileKeys, definitions: dict[str, list[Definition]],
                 star_files: frozenset[str] = frozenset(), es_modules: frozenset[str] = frozenset(),
                 imports_of: ImportsOf | None = None) -> None:
        self._files = files
        self._imports_of = imports_of or (lambda key: {})
        self._definitions = definitions  # last name segment -> its definitions
        self._star_files = star_files  # files importing every name of a module (`from m import *`)
        self._es_modules = es_modules  # JavaScript and TypeScript files that import or export
        self._tables: dict[str, _Candidates] = {}  # name -> its definitions by path and by symbol

    def _candidates(self, name: str) -> _Candidates:
        """A name's definitions indexed once: a common name (`__init__`) has hundreds, and each of
        its thousands of uses looked through all of them."""
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = _Candidates(self._definitions.get(name, []))
        return table

    def definitions(self, name: str) -> list[Definition]:
        """The definitions of a (last-segment) name this resolver knows."""
        return list(self._definitions.get(name, ()))

    def resolve(self, ref: Reference) -> Definition | None:
        """The one definition `ref` means under the rules above, or None."""
        table = self._candidates(ref.name)
        if not table.every:
            return None
        if ref.target:
            return self._member(ref, table)
        if ref.module:
            return self._imported(ref.name, self.module_files(ref), table)
        if ref.qualifier:
            return None
        local = [d for d in table.by_path.get(ref.path, []) if _encloses(ref, d)]
        if not local and ref.language == "go":
            folder = posixpath.dirname(ref.path)
            local = [d for d in table.every if posixpath.dirname(d.path) == folder and d.symbol == ref.name]
        depths = sorted((d.symbol.count(".") for d in local), reverse=True)
        # the innermost scope's definition; two at the same depth (`if x: def f` / `else: def f`) are ambiguous
        return None if not local or depths[1:2] == depths[:1] else max(local, key=lambda d: d.symbol.count("."))

    def _member(self, ref: Reference, table: _Candidates) -> Definition | None:
        """`ref.target` (`Cart.total`) in the use's own file (a class nested in a unit enclosing the
        use first: `test_a.Cart.total`), else where its class was imported from."""
        nested = [d for d in table.by_path.get(ref.path, []) if d.symbol.endswith("." + ref.target)
                  and _in_scope(ref.unit or "", d.symbol[: -len(ref.target) - 1])]
        if nested:
            return max(nested, key=lambda d: d.symbol.count("."))
        named = table.by_symbol.get(ref.target, [])
        same = _first(d for d in named if d.path == ref.path)
        if same is not None or not named:
            return same
        go = ref.language == "go"
        if ref.module:
            key = (ref.module, posixpath.dirname(ref.path), "", go)
            if key not in self._files.modules:
                self._files.modules[key] = frozenset(self._files_of(ref.module, ref.path, folders=go))
            return self._imported(ref.target.rsplit(".", 1)[0], self._files.modules[key], _Candidates(named))
        if go:
            folder = posixpath.dirname(ref.path)
            return _first(d for d in named if posixpath.dirname(d.path) == folder)
        return None

    def _imported(self, name: str, files: frozenset[str], table: _Candidates) -> Definition | None:
        """The definition of `name` in `files`, or in the files they import it from (re-exports)."""
        seen: set[str] = set()
        for _ in range(REEXPORT_DEPTH + 1):
            found = _first(d for key in sorted(files & table.by_path.keys()) for d in table.by_path[key])
            if found is not None or not files:
                return found
            seen |= files
            onward: set[str] = set()
            for key in sorted(k for k in files if _PACKAGE_FILE.search(k)):
                imports = self._imports_of(key)
                for module in imports.get(name, []) + imports.get("*", []):
                    onward |= self._files_of(module, key, folders=False)
            files = frozenset(onward - seen)
        return None

    def unrelated(self, ref: Reference) -> bool:
        """Whether `ref` cannot mean any definition of its name this resolver knows (the
        module's last paragraph): Python's scopes, for a use bound to no import and to no own
        member; a name without definitions in the repository keeps every use."""
        table = self._candidates(ref.name)
        if ref.module or not table.every:
            return False
        if ref.language == "python":
            if ref.qualifier:  # a call's receiver as written (another use's may be a subscript's value: `list[T]`)
                return ref.kind == "call" and table.top_level
            return ref.path not in self._star_files and ref.path not in table.by_path
        if ref.language in _ES_LANGUAGES and ref.path in self._es_modules:
            modules = all(path in self._es_modules and not path.endswith(".d.ts") for path in table.by_path)
            if ref.qualifier:
                return ref.kind == "call" and modules and table.top_level
            return modules and ref.path not in table.by_path
        return False

    def module_files(self, ref: Reference) -> frozenset[str]:
        """The repository files the module `ref` was imported from may be (empty: outside it)."""
        head = ref.qualifier.split(".", 1)[0] if ref.qualifier else ""
        folders = ref.language == "go"  # a Go import names a package: a folder
        key = (ref.module, posixpath.dirname(ref.path), head, folders)
        modules = self._files.modules
        if key not in modules:
            found = self._files_of(ref.module, ref.path, folders=folders)
            if head and head != ref.module.rsplit(".", 1)[-1]:  # `from pkg import mod; mod.f()`
                found |= self._files_of(f"{ref.module}.{head}", ref.path, folders=folders)
            modules[key] = frozenset(found)
        return modules[key]

    def _files_of(self, module: str, source: str, *, folders: bool) -> set[str]:
        module = module.strip().strip("\"'<>")
        if module.startswith("."):
            return self._relative(module, source)
        parts = [p for p in _SEGMENT_SPLIT.split(module.split("{", 1)[0]) if p not in _ROOTS]
        for drop in (0, 1):  # `a.b.C` may name the file of a.b, or a.b.C's own file
            wanted = parts[: len(parts) - drop] if drop else parts
            table = self._files.by_folder if folders else self._files.by_suffix
            for depth in range(min(_SUFFIX_DEPTH, len(wanted)), 0, -1):  # the longest tail the tree has
                found = table.get("/".join(wanted[-depth:]))
                if found:
                    return set(found)
        return set()

    def _relative(self, module: str, source: str) -> set[str]:
        folder = posixpath.dirname(source)
        if "/" in module:  # JS/TS `./mod`, `../lib/x`
            base = posixpath.normpath(posixpath.join(folder, module))
            return {base + s for s in _JS_SUFFIXES if base + s in self._files.key_set}
        dots = len(module) - len(module.lstrip("."))  # Python `from ..pkg import x`
        for _ in range(dots - 1):
            folder = posixpath.dirname(folder)
        rest = module[dots:].replace(".", "/")
        base = posixpath.join(folder, rest) if rest else folder
        return {k for k in (f"{base}.py", f"{base}/__init__.py") if k in self._files.key_set}



class _Candidates:
    """One name's definitions, by path and by symbol, and whether all are top level."""

    def __init__(self, every: list[Definition]) -> None:
        self.every = every
        self.by_path: dict[str, list[Definition]] = {}
        self.by_symbol: dict[str, list[Definition]] = {}
        for definition in every:
            self.by_path.setdefault(definition.path, []).append(definition)
            self.by_symbol.setdefault(definition.symbol, []).append(definition)
        self.top_level = all("." not in d.symbol for d in every)


class FileKeys:
    """The repository's file keys as module paths look them up: built once per index state
    (query/references.py keeps one), its tables on first use."""

    def __init__(self, keys: Iterable[str]) -> None:
        self.keys = list(keys)
        # (module, importing folder, its qualifier's head, Go) -> the files it may be: they
        # depend on the keys alone, so every resolver over these keys shares them
        self.modules: dict[tuple[str, str, str, bool], frozenset[str]] = {}

    @cached_property
    def key_set(self) -> frozenset[str]:
        return frozenset(self.keys)

    @cached_property
    def by_suffix(self) -> dict[str, list[str]]:
        """The last 1-4 segments of each key without its extension (a package's `__init__.py`,
        Rust's `mod.rs`, JS `index.ts` as their folder) -> the keys."""
        return _suffixes(self.keys, folders=False)

    @cached_property
    def by_folder(self) -> dict[str, list[str]]:
        """The last 1-4 segments of each key's folder -> the keys (Go packages)."""
        return _suffixes(self.keys, folders=True)


def _suffixes(keys: list[str], *, folders: bool) -> dict[str, list[str]]:
    table: dict[str, list[str]] = {}
    for key in keys:
        stem = key.rsplit(".", 1)[0] if "." in key.rsplit("/", 1)[-1] else key
        parts = stem.split("/")
        if folders or parts[-1] in ("__init__", "mod", "index"):
            parts = parts[:-1]
        for depth in range(1, min(_SUFFIX_DEPTH, len(parts)) + 1):
            table.setdefault("/".join(parts[-depth:]), []).append(key)
    return table


def _encloses(ref: Reference, definition: Definition) -> bool:
    """Whether a bare use reaches `definition` by scope: a top-level one, or one inside a unit
    enclosing the use (`outer.helper` from `outer` or `outer.inner`), not a member of a class."""
    if definition.symbol == ref.name:
        return True
    return definition.kind not in _MEMBER_KINDS and _in_scope(ref.unit or "", definition.symbol[: -len(ref.name) - 1])


def _in_scope(unit: str, scope: str) -> bool:
    """Whether a use in `unit` is inside the unit `scope` (itself or one nested in it)."""
    return unit == scope or unit.startswith(scope + ".")


def _first(definitions: Iterable[Definition]) -> Definition | None:
    return next(iter(definitions), None)
