"""Languages SAI knows: file extension -> language name (the tree-sitter grammar's name, or a
document or component format sai/chunking/sections.py cuts: markdown, rst, vue, svelte)."""

import re

LANGUAGE_BY_EXT: dict[str, str] = {
    "py": "python", "pyi": "python",
    "js": "javascript", "jsx": "javascript", "mjs": "javascript", "cjs": "javascript",
    "ts": "typescript", "mts": "typescript", "cts": "typescript",
    "tsx": "tsx",
    "go": "go",
    "rs": "rust",
    "java": "java",
    "c": "c", "h": "c",
    "cc": "cpp", "cpp": "cpp", "cxx": "cpp", "c++": "cpp", "hpp": "cpp", "hh": "cpp", "hxx": "cpp", "h++": "cpp",
    # a template's or inline functions' implementation, a module interface
    "ipp": "cpp", "inl": "cpp", "tpp": "cpp", "tcc": "cpp", "txx": "cpp", "ixx": "cpp", "cppm": "cpp",
    "cs": "c_sharp",
    "rb": "ruby",
    "php": "php",
    "kt": "kotlin", "kts": "kotlin",
    "swift": "swift",
    "scala": "scala", "sc": "scala",
    "ex": "elixir", "exs": "elixir",
    "lua": "lua",
    "hs": "haskell",
    "zig": "zig",
    "sh": "bash", "bash": "bash", "bats": "bash",
    "dart": "dart",
    "m": "objc", "mm": "objc",
    "jl": "julia",
    "ml": "ocaml",
    "pl": "perl", "pm": "perl",
    "sql": "sql",
    "tf": "hcl", "tfvars": "hcl", "hcl": "hcl",
    "fs": "fsharp", "fsx": "fsharp",
    "groovy": "groovy", "gradle": "groovy",
    "sol": "solidity",
    "ps1": "powershell", "psm1": "powershell",
    "lisp": "commonlisp", "lsp": "commonlisp", "asd": "commonlisp",
    "vue": "vue",
    "svelte": "svelte",
    "md": "markdown", "markdown": "markdown",
    "rst": "rst",
}

# Documentation is cut into heading sections when `ext` names it, but stays out of the default
# set: its sections compete with code for code questions (docs/design.md, "Chunking").
DOC_EXTS = frozenset({"md", "markdown", "rst"})
DEFAULT_EXTS: tuple[str, ...] = tuple(ext for ext in LANGUAGE_BY_EXT if ext not in DOC_EXTS)
# Text formats SAI has no unit rules (or no grammar wheel) for: out of the default set, and named
# with the reason `no-language` by the walk; `ext:` can still index them as line windows.
TEXT_WITHOUT_UNITS = frozenset("""txt text json jsonc json5 yaml yml toml xml html htm css scss sass less ini cfg
    conf properties csv tsv proto graphql gql r erl hrl elm clj cljs cljc edn nim cr mli fsi tex adoc org
    cmake mk""".split())

# Comment syntax by language, read by the token shapes (sai/text/shape.py) and `strip_comments`:
# `c` is `//` and `/* */`, `hash` is `#`, `both` is the two; the others are named by who uses them.
COMMENT_STYLES: dict[str, str] = {
    **dict.fromkeys(("javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp", "c_sharp", "kotlin",
                     "swift", "scala", "zig", "dart", "objc", "groovy", "solidity", "vue", "svelte"), "c"),
    **dict.fromkeys(("python", "ruby", "elixir", "bash", "perl"), "hash"),
    **dict.fromkeys(("php", "hcl"), "both"),
    "lua": "lua", "haskell": "haskell", "sql": "sql", "ocaml": "ml", "fsharp": "fsharp",
    "julia": "julia", "powershell": "powershell", "commonlisp": "lisp",
    **dict.fromkeys(("markdown", "rst"), "none"),
}
C_STYLE_COMMENTS = frozenset(lang for lang, style in COMMENT_STYLES.items() if style in ("c", "both"))
HASH_COMMENTS = frozenset(lang for lang, style in COMMENT_STYLES.items() if style in ("hash", "both"))
# a one-line "…" or '…' string, or a `…` template (which may span lines), escapes included
STRING_LITERAL = r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|`(?:\\.|[^`\\])*`'


def ext_of(key: str) -> str:
    """A file's extension as `ext` names it: lower-case, after the name's last dot ('' with none)."""
    name = key.rsplit("/", 1)[-1]
    return name.rsplit(".", 1)[-1].lower() if "." in name else ""


def language_for(key: str) -> str | None:
    """The language of a file by its extension, or None for a text file SAI has no grammar for."""
    return LANGUAGE_BY_EXT.get(ext_of(key))  # no language has the empty extension


# `.h` is C's, C++'s and Objective-C's: a header is Objective-C or C++ when a line of its code can
# only be that (GitHub linguist's heuristics for `.h`, cut down): an `@interface` or `#import`; a
# standard C++ header included, a template, a class, a namespace, an access label. Parsed as C, a
# C++ header loses its classes and namespaces (fmt's, googletest's), an Objective-C one its interfaces.
_OBJC_HEADER_LINE = re.compile(r"^[ \t]*(?:@(?:interface|protocol|class|property|end)\b|#[ \t]*import[ \t]*[<\"])",
                               re.MULTILINE)
_CPP_HEADER_LINE = re.compile(
    r"^[ \t]*(?:#[ \t]*include[ \t]*<(?:c(?:stddef|stdint|stdio|stdlib|string|math|limits|assert)|string|string_view"
    r"|vector|map|set|list|array|memory|utility|type_traits|functional|algorithm|iterator|tuple|optional|variant"
    r"|chrono|mutex|atomic|thread|bitset|queue|stack|deque|forward_list|unordered_map|unordered_set|iosfwd"
    r"|(?:i|o|io|s|f)stream|exception|stdexcept|initializer_list|new|locale|system_error)>"
    r"|template[ \t]*<|(?:class|namespace)[ \t]+[A-Za-z_]\w*[ \t]*(?:[:{;]|$)|using[ \t]+namespace[ \t]"
    r"|(?:public|private|protected)[ \t]*:[ \t]*$)",
    re.MULTILINE)


def language_of(key: str, text: str) -> str | None:
    """The language of a file by its extension, and for a `.h` header by its code (C, C++ or Objective-C)."""
    if ext_of(key) != "h":
        return language_for(key)
    if _OBJC_HEADER_LINE.search(text):
        return "objc"
    return "cpp" if _CPP_HEADER_LINE.search(text) else "c"


def normalize_exts(exts: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Lower-case extensions without leading dots, in the order given, without repeats."""
    seen: dict[str, None] = {}
    for ext in exts:
        cleaned = ext.strip().lstrip(".").lower()
        if cleaned:
            seen[cleaned] = None
    return tuple(seen)


LANGUAGES: tuple[str, ...] = tuple(sorted(set(LANGUAGE_BY_EXT.values())))
_ALIASES = {
    "c#": "c_sharp", "csharp": "c_sharp", "c-sharp": "c_sharp", "c++": "cpp", "golang": "go",
    "objective-c": "objc", "objectivec": "objc", "shell": "bash", "terraform": "hcl", "f#": "fsharp",
    "f-sharp": "fsharp", "common-lisp": "commonlisp", "pwsh": "powershell", "restructuredtext": "rst",
}


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
