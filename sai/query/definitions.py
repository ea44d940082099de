"""Which definition of a name a person means, when a bare name has several (docs/design.md, "Search").

A name is often defined in more than one place: a partial class spread over files (or a Ruby
class reopened in several), an interface and a type of the same name, copies of an API kept
side by side for two versions. How code is organised says which one a person typing the name
means, so the rules come from that, not from fitted weights. Closest first, each deciding only
when the ones before it tie:

1. the qualified symbol is the name as typed (`Sinatra::Helpers`);
2. the name has the case typed (class `Session`, not function `session`);
3. it is not superseded: a copy under an older version's directory (`v3/` beside `v4/`, `v1/`
   beside an unversioned one) or under one kept for the past (`legacy/`, `compat/`,
   `deprecated/`) loses to one that is not;
4. it is a concrete type, not an interface, trait or protocol of the same name (wherever the
   interface is declared: the name is the type's, the interface only its contract);
5. it is a template, not a specialisation of it (C++ `char_traits`, not `char_traits<unsigned
   char>`: the chunker's kind `specialization`), when a type of the name that is none is among
   them: the bare name is the template's, the specialisations only its cases;
6. it is less nested (class `JsonMapper`, not its constructor `JsonMapper.JsonMapper`);
7. of a C# partial type (one qualified type over several files), it is the part in the file
   named most closely after the type (`SqlMapper.cs` over `SqlMapper.Async.cs`): C# names a
   file after the type it declares, and the other parts extend it. Only C#: a Ruby class
   reopened in several files (`Rails::Engine` in `engine/*.rb`) has no main part, each answers.

The closest definitions get the name's full boost (query/ranking.py), the others less, and a
file holding only others loses what its name would add. Among equally close ones (the parts
of a reopened Ruby class, C# parts named alike), the file named after the name comes first
(`engine.rb`, then `engine/configuration.rb`): search adds the first few of them to the
candidates, and the file's name lifts it there (ranking's FILE_NAMED); the other parts keep the
full boost, for they answer too.

A name may also be defined by a line that is no unit of its own: a C macro (`#define
JSON_ASSERT(x) assert(x)`), a one-line alias or typedef (`using format_context = ...`,
`type HandlerFunc func(...)`), a constant, a shell alias. When no unit defines the name, the
chunks holding such a line are its definitions (`line_definition`), but for functions and
methods, whose lines define locals: a name's definition is where it is introduced, not the many
places that use it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sai.models import ChunkRow

_VERSION = re.compile(r"v(\d+)", re.IGNORECASE)  # a directory named for an API version
FIRST_VERSION = 1
PAST = frozenset({"legacy", "compat", "compatibility", "deprecated", "obsolete", "old"})
ABSTRACT = frozenset({"interface", "trait", "protocol"})
CONCRETE = frozenset({"class", "struct", "record", "enum", "object", "union", "specialization"})
SPECIALISATION = "specialization"
CALLABLE = frozenset({"function", "method", "constructor"})  # units whose lines define only locals

PARTIAL_LANGUAGES = frozenset({"c_sharp"})  # where one type over several files is a partial type

Closeness = tuple[bool, bool, bool, bool, bool, int, bool]

# What introduces a name on one line, after modifiers: the keywords of aliases, typedefs,
# constants and variables across the languages SAI reads (the name may follow a type: `static
# const int N =`, `typedef unsigned long N;`); a preprocessor `#define`; an assignment at the
# line's start (a module constant in Python, Ruby or Lua, a shell variable).
_MODIFIERS = (r"(?:(?:export|pub(?:\([^)]*\))?|public|private|protected|internal|open|static|final|"
              r"inline|extern|readonly|declare|default|lazy|override|const)[ \t]+)*")
_INTRODUCERS = r"(?:type|typealias|typedef|using|alias|const|constexpr|let|var|val|local|define|newtype)"
_TYPE_WORDS = r"(?:[\w:<>,*&\[\] \t]+?[ \t]+)?"


def line_definition(name: str) -> re.Pattern[str]:
    """The lines that introduce `name` (the last part of a dotted name) without a unit of their own."""
    n = re.escape(name)
    bounded = rf"(?<![\w.-]){n}(?![\w-])"
    return re.compile(
        rf"^[ \t]*#[ \t]*define[ \t]+{n}(?!\w)"
        rf"|^[ \t]*{_MODIFIERS}{_INTRODUCERS}[ \t]+{_TYPE_WORDS}{bounded}[ \t]*(?:[=:<;(]|$|[ \t])"
        rf"|^{n}[ \t]*(?::[^=\n]*)?=(?!=)",
        re.MULTILINE)


def closeness(rows: Sequence[ChunkRow], qualified: str) -> dict[int, Closeness]:
    """Each definition's closeness to the bare name `qualified` (dotted), keyed by row id: tuples
    that compare best highest, by the rules above."""
    versions = {row.id: _version(row.path) for row in rows}
    newest = max((v for v in versions.values() if v is not None), default=None)
    if newest is not None and any(v is None for v in versions.values()):
        newest = max(newest, FIRST_VERSION + 1)  # an unversioned copy is newer than a `v1/` one
    concrete = any(row.kind in CONCRETE for row in rows)
    template = any(row.kind in CONCRETE and row.kind != SPECIALISATION for row in rows)
    name = qualified.rsplit(".", 1)[-1]
    main = _main_parts(rows, name)
    out = {}
    for row in rows:
        symbol = row.symbol or ""
        out[row.id] = (
            "." in qualified and (symbol == qualified or symbol.endswith("." + qualified)),
            symbol.rsplit(".", 1)[-1] == name,
            not _superseded(row.path, versions[row.id], newest),
            not (concrete and row.kind in ABSTRACT),
            not (template and row.kind == SPECIALISATION),
            -symbol.count("."),
            row.id in main,
        )
    return out


def preferred(rows: Sequence[ChunkRow], qualified: str, *, limit: int) -> list[ChunkRow]:
    """The `limit` closest of a name's definitions (the store's order among equals)."""
    key = closeness(rows, qualified)
    name = qualified.rsplit(".", 1)[-1]
    order = sorted(range(len(rows)), key=lambda i: (tuple(-int(v) for v in key[rows[i].id]),
                                                     -_named_after(rows[i].path, name), i))
    return [rows[i] for i in order[:limit]]


def outranked_files(rows: Sequence[ChunkRow], closest: set[int], others: set[int]) -> set[str]:
    """Files holding one of the name's other definitions and none of its closest: a file named
    after the name gains nothing from its name when the definition there is not the one meant
    (`api/transport.ts` declaring the interface `Transport` that the class elsewhere implements)."""
    kept = {row.path for row in rows if row.id in closest}
    return {row.path for row in rows if row.id in others and row.path not in kept}


def _main_parts(rows: Sequence[ChunkRow], name: str) -> set[int]:
    """The ids of the rows that are not a lesser part of a partial type: of the parts of one
    C# type (same qualified symbol, several files), only those whose file is named most closely
    after the name are main; every other row is too."""
    parts: dict[str, list[ChunkRow]] = {}
    for row in rows:
        if row.language in PARTIAL_LANGUAGES and row.kind in CONCRETE | ABSTRACT and row.symbol:
            parts.setdefault(row.symbol, []).append(row)
    lesser: set[int] = set()
    for group in parts.values():
        if len({row.path for row in group}) > 1:
            best = max(_named_after(row.path, name) for row in group)
            lesser.update(row.id for row in group if _named_after(row.path, name) < best)
    return {row.id for row in rows} - lesser


def _version(path: str) -> int | None:
    """The highest API version a directory of the path names (`src/v4/core/x.ts` -> 4), or None."""
    found = [int(m.group(1)) for part in path.split("/")[:-1] if (m := _VERSION.fullmatch(part))]
    return max(found) if found else None


def _superseded(path: str, version: int | None, newest: int | None) -> bool:
    """Under a directory kept for the past, or for a version older than the newest among the
    name's definitions."""
    if any(part.lower() in PAST for part in path.split("/")[:-1]):
        return True
    return version is not None and newest is not None and version < newest


def _named_after(path: str, name: str) -> int:
    """2: the file's name is the symbol's (`Column.kt`); 1: its first part is (`SqlMapper.Async.cs`,
    `Context.common.kt`); 0: neither. Case, `_` and `-` are ignored."""
    file = path.rsplit("/", 1)[-1]
    wanted = squashed(name)
    if squashed(file.rsplit(".", 1)[0]) == wanted:
        return 2
    return 1 if squashed(file.split(".")[0]) == wanted else 0


def squashed(name: str) -> str:
    """A name as file and symbol names compare: no `_` or `-`, lower case (`adl_serializer`, `AdlSerializer`)."""
    return name.replace("_", "").replace("-", "").lower()
