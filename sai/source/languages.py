"""Languages SAI knows: file extension -> language name (tree-sitter grammar name)."""

LANGUAGE_BY_EXT: dict[str, str] = {
    "py": "python", "pyi": "python",
    "js": "javascript", "jsx": "javascript", "mjs": "javascript", "cjs": "javascript",
    "ts": "typescript", "mts": "typescript", "cts": "typescript",
    "tsx": "tsx",
    "go": "go",
    "rs": "rust",
    "java": "java",
    "c": "c", "h": "c",
    "cc": "cpp", "cpp": "cpp", "cxx": "cpp", "hpp": "cpp", "hh": "cpp", "hxx": "cpp",
    "cs": "c_sharp",
    "rb": "ruby",
    "php": "php",
    "kt": "kotlin", "kts": "kotlin",
}

DEFAULT_EXTS: tuple[str, ...] = tuple(LANGUAGE_BY_EXT)

# comment syntax: `//` and `/* */`, or `#` (PHP has both)
C_STYLE_COMMENTS = frozenset({"javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp",
                              "c_sharp", "php", "kotlin"})
HASH_COMMENTS = frozenset({"python", "ruby", "php"})
# a one-line "…" or '…' string, or a `…` template (which may span lines), escapes included
STRING_LITERAL = r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|`(?:\\.|[^`\\])*`'


def language_for(key: str) -> str | None:
    """The language of a file by its extension, or None for a text file SAI has no grammar for."""
    name = key.rsplit("/", 1)[-1]
    if "." not in name:
        return None
    return LANGUAGE_BY_EXT.get(name.rsplit(".", 1)[-1].lower())


def normalize_exts(exts: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Lower-case extensions without leading dots, in the order given, without repeats."""
    seen: dict[str, None] = {}
    for ext in exts:
        cleaned = ext.strip().lstrip(".").lower()
        if cleaned:
            seen[cleaned] = None
    return tuple(seen)


LANGUAGES: tuple[str, ...] = tuple(sorted(set(LANGUAGE_BY_EXT.values())))
_ALIASES = {"c#": "c_sharp", "csharp": "c_sharp", "c-sharp": "c_sharp", "c++": "cpp", "golang": "go"}


def canonical_language(value: str) -> str:
    """A language filter as a language name: the name itself, or a file extension (the original
    tool's label: `ts`, `py`, `rs`), case-insensitive; UsageError for anything else."""
    from sai.errors import UsageError, shown

    lowered = value.strip().lower().lstrip(".")
    if lowered in LANGUAGES:
        return lowered
    found = LANGUAGE_BY_EXT.get(lowered) or _ALIASES.get(lowered)
    if found is None:
        raise UsageError(
            f"unknown language {shown(repr(value))}; give a language name ({', '.join(LANGUAGES)}) "
            "or a file extension such as py, ts or rs"
        )
    return found
