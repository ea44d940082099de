"""Where a name is used: `sai refs` / sai_find_references, over the references the index stores
(sai/chunking/references.py) and the rules of sai/query/resolution.py. No embedder is needed.

A qualified name narrows the uses (docs/cli.md, "sai refs"): `Cart.total` keeps the uses of
`total` resolved to a definition whose symbol ends in `Cart.total` (or that lives in a module
file `Cart`, for `pkg.func`), and the unresolved ones written with that qualifier (`cart.total()`,
`Cart::total`, any case); a bare name keeps every use of it.
"""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from sai.chunking.reference_tables import REFERENCE_KINDS
from sai.errors import SaiError, UsageError
from sai.models import MODULE_MARK, STAR_IMPORT, Definition, Reference, Use, Uses
from sai.project import Project
from sai.query.lookup import path_filter
from sai.query.resolution import FileKeys, Resolver
from sai.source.languages import canonical_language
from sai.store import IndexReader

# a package's own file stands for its folder (`pkg/__init__.py`, `lib/index.ts`, Rust's `mod.rs`)
_PACKAGE_FILE = re.compile(r"/(?:__init__|index|mod)$")
MAX_DEFINITIONS = 500  # definitions of one name weighed when resolving its uses
_KIND_ORDER = {kind: index for index, kind in enumerate(REFERENCE_KINDS)}


@dataclass(frozen=True)
class UseFilter:
    """Which uses a look-up keeps: kinds, language, path glob."""

    kinds: frozenset[str] | None = None
    language: str | None = None
    path_ok: Callable[[str], bool] | None = None

    def admits(self, ref: Reference) -> bool:
        return ((self.kinds is None or ref.kind in self.kinds)
                and (self.language is None or ref.language == self.language)
                and (self.path_ok is None or self.path_ok(ref.path)))


def use_filter(*, kinds: list[str] | None = None, language: str | None = None,
               path_glob: str | None = None) -> UseFilter:
    """The filter of these arguments, checked (an unknown kind is the caller's mistake)."""
    unknown = sorted(set(kinds or ()) - set(REFERENCE_KINDS))
    if unknown:
        raise UsageError(f"unknown reference kind {unknown[0]!r}; use one of {', '.join(REFERENCE_KINDS)}")
    return UseFilter(kinds=frozenset(kinds) if kinds else None,
                     language=canonical_language(language) if language else None,
                     path_ok=path_filter(path_glob) if path_glob else None)


def find_references(project: Project, name: str, *, limit: int = 20, kinds: list[str] | None = None,
                    language: str | None = None, path_glob: str | None = None) -> Uses:
    """The uses of `name`: resolved first, then calls, imports, ... (REFERENCE_KINDS), by path and line."""
    wanted = use_filter(kinds=kinds, language=language, path_glob=path_glob)
    with open_references(project) as reader:
        uses = uses_of(reader, name, wanted)
    uses.sort(key=_rank)
    counts = Counter(u.reference.kind for u in uses)
    return Uses(name=name.strip(), uses=tuple(uses[: max(1, int(limit))]), total=len(uses),
                by_kind={kind: counts[kind] for kind in REFERENCE_KINDS if counts[kind]})


@contextlib.contextmanager
def open_references(project: Project) -> Iterator[IndexReader]:
    """A read session on an index that stores references; a clear error when the backend holds none."""
    if not project.store.references:
        raise SaiError(f"the {project.store.backend} backend does not support references yet; "
                       "use backend: duckdb for sai refs, callers, callees and impact")
    if not project.config.index_references:
        raise SaiError("references are not indexed (index_references: false); set it to true and run `sai`")
    with project.store.read() as reader:
        project.indexed_meta(reader)
        yield reader


def uses_of(reader: IndexReader, name: str, wanted: UseFilter = UseFilter()) -> list[Use]:
    """Every use of `name` that `wanted` admits, narrowed by its qualifier, each resolved or not."""
    return KnownUses(reader, [name]).of(name, wanted)


class KnownUses:
    """The stored uses of some names, read in one query and resolved by one resolver: `sai impact`
    asks for the callers of every unit a diff changes (hundreds after a merge), and a query per
    name cost it ~3 ms each."""

    def __init__(self, reader: IndexReader, names: list[str]) -> None:
        split = {split_name(name) for name in names}
        lasts = sorted({last for _, last in split})
        # a name asked only qualified keeps the uses it may mean: fewer to resolve than every use
        # of a common name (`__init__`); all are read in one query (the table is not ordered by
        # name: each read scans it, 5-20 ms at 100,000 chunks)
        qualifiers: dict[str, list[str]] = {last: [] for last in lasts}
        for qualifier, last in split:
            qualifiers[last].append(qualifier)
        self._refs: dict[str, list[Reference]] = {last: [] for last in lasts}
        for ref in reader.references(lasts) if lasts else []:
            if any(_may_mean(ref, qualifier) for qualifier in qualifiers[ref.name]):
                self._refs[ref.name].append(ref)
        self._resolver = resolver_for(reader, set(lasts), scopes=True)

    def of(self, name: str, wanted: UseFilter = UseFilter()) -> list[Use]:
        """uses_of(name, wanted) for one of the names given."""
        qualifier, last = split_name(name)
        refs = [ref for ref in self._refs[last] if wanted.admits(ref) and not self._resolver.unrelated(ref)]
        uses = [Use(ref, target is not None, target) for ref in refs for target in [self._resolver.resolve(ref)]]
        return [u for u in uses if _narrowed(u, qualifier)] if qualifier else uses


def _may_mean(ref: Reference, qualifier: str) -> bool:
    """Whether a use of a name may be one of `qualifier.name` (a bare name: every use); narrowing
    (_narrowed) then decides exactly: a bare use, one bound to a module, one whose target or
    written qualifier ends as the qualified name does. Asked in SQL, this filter cost DuckDB 3.7x
    the plain read of the name's rows."""
    if not qualifier:
        return True
    last = _folded(qualifier).rsplit(".", 1)[-1]
    return (not ref.qualifier or (bool(ref.module) and not ref.target)
            or _folded(ref.target).endswith(f"{last}.{_folded(ref.name)}") or _folded(ref.qualifier).endswith(last))


def split_name(name: str) -> tuple[str, str]:
    """(`Cart`, `total`) of `Cart.total` (`::`, `#` and `->` read as '.'; a `#` after a '.' begins
    a private name: `Hono.#clone`), ('', name) of a bare name."""
    cleaned = re.sub(r"(?<!\.)#", ".", name.strip().replace("::", ".").replace("->", "."))
    if not cleaned or not cleaned.strip("."):
        raise UsageError("the name is empty; give a name such as computeTotal or Cart.computeTotal")
    qualifier, _, last = cleaned.strip(".").rpartition(".")
    return qualifier, last


def resolver_for(reader: IndexReader, names: set[str], *, scopes: bool = False) -> Resolver:
    """A resolver knowing the definitions of these (last-segment) names and every file key; with
    `scopes`, also the files that import every name of a module and the ES modules, for
    `unrelated` (query/resolution.py)."""
    table = reader.symbols()
    definitions: dict[str, list[Definition]] = {}
    for name in names:
        found = table.lookup(name, limit=MAX_DEFINITIONS)
        definitions[name] = [d for d in found if d.match in ("exact", "qualified")
                             and d.symbol.rsplit(".", 1)[-1] == name]
    marks = _marks(reader) if scopes else {}
    keys, hashes = _file_state(reader)
    return Resolver(keys, definitions, marks.get(STAR_IMPORT, frozenset()),
                    marks.get(MODULE_MARK, frozenset()), _imports_reader(reader, hashes))


def warm_resolution(reader: IndexReader) -> None:
    """Read what every resolver of the index state `reader` sees shares (its file keys and
    marks), once per state: `impact` does it while git runs."""
    _file_state(reader)
    _marks(reader)


# (file key, content hash) -> its imports: kept across writes for the files they left as they were
_IMPORTS: dict[tuple[str, str], dict[str, list[str]]] = {}
_MAX_IMPORTS = 50_000  # files' imports kept at most (then they are read again as asked)


def _imports_reader(reader: IndexReader, hashes: dict[str, str]) -> Callable[[str], dict[str, list[str]]]:
    """A file's imports (bound name -> modules; "*" for whole modules), read when the resolver
    follows a re-export through that file, kept while the file's content (in `hashes`, the
    reader's state's) is unchanged."""

    def imports_of(key: str) -> dict[str, list[str]]:
        slot = (key, hashes.get(key, ""))
        if slot not in _IMPORTS:
            if len(_IMPORTS) >= _MAX_IMPORTS:
                _IMPORTS.clear()
            found: dict[str, list[str]] = {}
            for ref in reader.references_in(key, 1, 1 << 30):
                if ref.kind == "import" and ref.module:
                    found.setdefault(ref.name, []).append(ref.module)
            _IMPORTS[slot] = found
        return _IMPORTS[slot]
    return imports_of


# index token -> (the file hashes its marks were read at, the files each mark names); the latest only
_MARKS: dict[str, tuple[dict[str, str], dict[str, frozenset[str]]]] = {}
PATCH_FILES = 8  # files changed since the last state read, up to which only their marks are read


def _marks(reader: IndexReader) -> dict[str, frozenset[str]]:
    """The files holding a star import and the ES modules of the index state `reader` sees, read
    once per state (60-85 ms at 1M chunks; reading every mark's row with the uses cost 0.35 s a
    query). A state a few files away from the last one read keeps its marks but for those
    files', read by path (2-12 ms each at 1M chunks)."""
    token = reader.meta().get("token", "")
    if token in _MARKS:
        return _MARKS[token][1]
    hashes = _file_state(reader)[1]
    names = (STAR_IMPORT, MODULE_MARK)
    old_hashes, old = next(iter(_MARKS.values()), ({}, {}))
    changed = [key for key, digest in hashes.items() if old_hashes.get(key) != digest]
    if old and len(changed) + len(old_hashes.keys() - hashes.keys()) <= PATCH_FILES:
        now = {key: {r.name for r in reader.references_in(key, 1, 1 << 30) if r.name in names} for key in changed}
        found = {name: frozenset({k for k in old[name] if k in hashes and k not in now}
                                 | {k for k, held in now.items() if name in held}) for name in names}
    else:
        found = {name: frozenset(keys) for name, keys in reader.files_using(list(names)).items()}
    _MARKS.clear()
    if token:
        _MARKS[token] = (hashes, found)
    return found


# index token -> its keys' tables and its files' content hashes (the latest only)
_FILE_KEYS: dict[str, tuple[FileKeys, dict[str, str]]] = {}


def _file_state(reader: IndexReader) -> tuple[FileKeys, dict[str, str]]:
    """The file keys and content hashes of the index state `reader` sees, read once per state (a
    token names one), as one pair whatever other threads read; a state with the same keys as the
    one before (a write that changed files, added or removed none) keeps its tables: building
    them cost 30 ms at 5,000 files, after every refresh."""
    token = reader.meta().get("token", "")
    found = _FILE_KEYS.get(token)
    if found is None or not token:
        hashes = reader.file_hashes()
        keys = sorted(hashes)
        before = next(iter(_FILE_KEYS.values()), None)
        found = (before[0] if before is not None and before[0].keys == keys else FileKeys(keys)), hashes
        _FILE_KEYS.clear()
        _FILE_KEYS[token] = found
    return found


def _narrowed(use: Use, qualifier: str) -> bool:
    if use.target is not None:
        symbol = use.target.symbol
        stem = _PACKAGE_FILE.sub("", use.target.path.rsplit(".", 1)[0]).replace("/", ".")
        full = f"{qualifier}.{use.reference.name}"
        # `pkg.func`: the module's file, or a Go package's folder
        folder = use.target.path.rpartition("/")[0].replace("/", ".") if use.target.language == "go" else stem
        in_module = (stem.endswith(qualifier) or folder.endswith(qualifier)) and symbol == use.reference.name
        return symbol == full or symbol.endswith("." + full) or in_module
    asked = _folded(qualifier.rsplit(".", 1)[-1])
    if use.reference.target:  # the receiver's class is known, its member is not defined there (inherited)
        return _folded(use.reference.target.rsplit(".", 1)[0].rsplit(".", 1)[-1]) == asked
    written = use.reference.qualifier.replace("::", ".").replace("->", ".").rsplit(".", 1)[-1]
    return _folded(written) == asked or (
        bool(use.reference.module) and use.reference.module.replace("/", ".").endswith(qualifier))


def _folded(text: str) -> str:
    """A name as narrowing compares it: lower case, `_` dropped, `::` and `->` read as '.'."""
    return text.replace("::", ".").replace("->", ".").replace("_", "").lower()


def _rank(use: Use) -> tuple[bool, int, str, int, int]:
    ref = use.reference
    return (not use.resolved, _KIND_ORDER.get(ref.kind, len(_KIND_ORDER)), ref.path, ref.line, ref.column)
