"""Reserved words by language: the names a renamed copy cannot change (sai/text/shape.py).

Per language, because one language's keyword is another's everyday name (`end` in Ruby, `type`
and `match` in Python, `map` in Go); a word counted as a keyword where it is a name would make a
renamed copy look different. Besides the reserved words: the receiver names (`self`, `this`), the
literals, the built-in types of C-family languages, Python's built-ins and JavaScript's globals.
"""

from __future__ import annotations

import builtins
import keyword

# built-in names a copy calls and annotates with as its original did (`len`, `sorted`, `str`)
# (without the names the `site` module adds, so a signature does not depend on how Python started)
_SITE_ADDED = {"copyright", "credits", "exit", "help", "license", "quit"}
_PY_BUILTINS = [name for name in dir(builtins) if not name.startswith("_") and name not in _SITE_ADDED]
_JS_GLOBALS = """Array Boolean console Date Error JSON Map Math Number Object Promise Reflect RegExp Set
    String Symbol"""
_C = """auto bool break case char const continue default do double else enum extern false float for
    goto if inline int long register restrict return short signed sizeof static struct switch true
    typedef union unsigned void volatile while NULL"""
_JS = """async await break case catch class const continue debugger default delete do else export
    extends false finally for function if import in instanceof let new null of return static super
    switch this throw true try typeof undefined var void while with yield"""
_JS += " " + _JS_GLOBALS
_TS = _JS + """ abstract any as boolean declare enum implements interface is keyof namespace never
    number private protected public readonly string type unknown"""
_WORDS = {
    "python": " ".join([*keyword.kwlist, *_PY_BUILTINS]) + " self cls",
    "javascript": _JS,
    "typescript": _TS,
    "tsx": _TS,
    "go": """break case chan const continue default defer else fallthrough false for func go goto if
        import interface map nil package range return select struct switch true type var""",
    "rust": """as async await break const continue crate dyn else enum extern false fn for if impl in
        let loop match mod move mut pub ref return self Self static struct super trait true type
        unsafe use where while""",
    "java": """abstract assert boolean break byte case catch char class const continue default do
        double else enum extends false final finally float for goto if implements import instanceof
        int interface long native new null package private protected public return short static
        strictfp super switch synchronized this throw throws transient true try var void volatile
        while""",
    "c": _C,
    "cpp": _C + """ catch class const_cast constexpr decltype delete dynamic_cast explicit final
        friend mutable namespace new noexcept nullptr operator override private protected public
        reinterpret_cast static_cast template this throw try typename using virtual""",
    "c_sharp": """abstract as base bool break byte case catch char checked class const continue
        decimal default delegate do double else enum event explicit extern false finally fixed float
        for foreach goto if implicit in int interface internal is lock long namespace new null object
        operator out override params private protected public readonly ref return sbyte sealed short
        sizeof static string struct switch this throw true try typeof uint ulong unchecked unsafe
        ushort using var virtual void volatile while""",
    "ruby": """BEGIN END alias and begin break case class def do else elsif end ensure false for if in
        module next nil not or redo rescue retry return self super then true undef unless until when
        while yield""",
    "php": """abstract and array as break callable case catch class clone const continue declare
        default do echo else elseif empty extends false final finally fn for foreach function global
        if implements include instanceof interface isset list match namespace new null or print
        private protected public readonly require return static switch throw trait true try unset
        use var while xor yield $this""",
    "kotlin": """as break class continue do else false for fun if in interface is null object
        package return super this throw true try typealias typeof val var when while""",
}
_ANY = "if else for while do return break continue true false null nil None True False this self"

KEYWORDS: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in _WORDS.items()}
_UNKNOWN = frozenset(_ANY.split())


def keywords_of(language: str | None) -> frozenset[str]:
    """The reserved words of a language; for text without a grammar, the few nearly every one has."""
    return KEYWORDS.get(language or "", _UNKNOWN)
