"""What the ranking signals need to know about a query, worked out once per query."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sai.query.intent import asks_for_place, starts_with_verb
from sai.text.lexical import identifiers, split_identifier, tokens, word_stem

_STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how if in into is it its not of on or "
    "that the their them this to was what when where which who why with".split()
)


_CI_WORDS = frozenset("ci github workflow workflows travis circleci gitlab buildkite pipeline actions".split())


# Words that ask about declared types rather than the code using them.
_TYPE_WORDS = frozenset("""type types typing typings typed typedef typedefs interface interfaces declaration
    declarations declare dts signature signatures generic generics overload overloads schema""".split())


@dataclass(frozen=True)
class QueryFacts:
    names: frozenset[str]  # identifiers it names (lower case, last dotted part)
    bare: bool  # the whole query is one identifier
    qualified: str  # that identifier as typed, its parts joined by dots (`A::B` -> `A.B`); "" if not bare
    stems: frozenset[str]  # stems of its words and identifier parts
    wants_tests: bool
    wants_ci: bool  # it names continuous integration: "ci", "github", "workflow", "travis", …
    wants_place: bool  # a topic or question, not a function's description: file-level signals apply
    action: bool  # it starts with a verb ("Return ...", "Parses ..."): it asks for a callable
    words: frozenset[str]  # its words of 3+ letters that are not stopwords, lower case
    compounds: frozenset[str]  # 2 or 3 adjacent words run together ("json element" -> jsonelement)
    about_types: bool = False  # it asks about types: "type", "typings", "interface", "d.ts", …
    scopes: tuple[tuple[str, ...], ...] = ()  # the places a leading scope names ("ignore/types: …"), squashed


def bare_name(query: str) -> str | None:
    """A one-word query as a dotted name (`A::B`, `A->B`, `A\\B` -> `A.B`), or None."""
    words = query.split()
    if len(words) != 1:
        return None
    return ".".join(part for part in re.split(r"::|->|\\|\.", words[0].strip("()")) if part) or None


def facts_of(query: str) -> QueryFacts:
    words = query.split()
    qualified = bare_name(query) or ""
    bare = len(words) == 1
    names = {qualified.rsplit(".", 1)[-1].lower()} if bare else identifiers(query)
    found = tokens(query)
    plain = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", query)}
    return QueryFacts(
        names=frozenset(names),
        bare=bare,
        qualified=qualified,
        stems=frozenset(word_stem(t) for t in found),
        wants_tests=any(t.startswith(("test", "spec", "example", "regress", "fixture")) for t in found),
        wants_ci=bool(set(found) & _CI_WORDS),
        wants_place=not bare and asks_for_place(words),
        action=not bare and starts_with_verb(words),
        words=frozenset() if bare else frozenset(w for w in plain if len(w) > 2 and w not in _STOPWORDS),
        compounds=frozenset() if bare else _compounds(query),
        about_types=not bare and bool(plain & _TYPE_WORDS),
        scopes=() if bare else scopes_of(query),
    )


# A leading scope, the way commit subjects and task titles name their place: "fix(client): …"
# (Conventional Commits) or "ignore/types: …", "caddyhttp: …", "ignore,globset: …" (a subsystem).
_CONVENTIONAL = re.compile(r"^\s*[A-Za-z]+\(([^()]+)\)!?:\s")
_SUBSYSTEM = re.compile(r"^\s*([A-Za-z0-9_][\w.,/+-]*):\s")
# Change types, not places: "fix: …" names no scope.
_CHANGE_TYPES = frozenset("""fix fixes fixed bug bugfix hotfix feat feature chore docs doc refactor perf test
    tests build ci style revert wip breaking security deps dep release note notes todo""".split())


def scopes_of(query: str) -> tuple[tuple[str, ...], ...]:
    """The paths a leading scope names, each as its squashed parts (`ignore/types` -> ("ignore", "types"))."""
    found = _CONVENTIONAL.match(query) or _SUBSYSTEM.match(query)
    if found is None:
        return ()
    scopes = (tuple(p for p in map(_squash, scope.split("/")) if p) for scope in found.group(1).split(","))
    return tuple(s for s in scopes if s and not (len(s) == 1 and s[0] in _CHANGE_TYPES))


def in_scope(path: str, scopes: tuple[tuple[str, ...], ...]) -> bool:
    """Whether the path's folders and file, in order, hold every part of one of the scopes."""
    components = path.split("/")
    for scope in scopes:
        found = 0
        for component in components:
            if found < len(scope) and _scope_part(component, scope[found]):
                found += 1
        if found == len(scope):
            return True
    return False


def _scope_part(component: str, part: str) -> bool:
    """A scope's part names a folder or file: the file's whole name when it has a dot, else the name
    less its extension, one of its words (`types`, default_types.rs), or its end (`pki`, caddypki)."""
    squashed = re.sub(r"[^a-z0-9.]", "", component.lower())
    if "." in part:
        return squashed == part
    stem = squashed.split(".")[0]
    words = split_identifier(component.split(".")[0])
    return part == stem or part in words or (len(part) > 2 and stem.endswith(part))


def _squash(name: str) -> str:
    return re.sub(r"[^a-z0-9.]", "", name.lower())


def _compounds(query: str) -> frozenset[str]:
    """Runs of 2 or 3 adjacent words of the query, joined: "JSON element hierarchy" gives
    jsonelement, elementhierarchy and jsonelementhierarchy, the names a file may have."""
    words = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", query)]
    return frozenset("".join(words[i:i + n]) for n in (2, 3) for i in range(len(words) - n + 1))
