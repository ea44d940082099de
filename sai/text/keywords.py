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
    "swift": """actor as associatedtype async await break case catch class continue default defer deinit do
        else enum extension fallthrough false fileprivate final for func guard if import in init inout
        internal is let nil open operator override private protocol public repeat rethrows return self
        Self static struct subscript super switch throw throws true try typealias var weak where while""",
    "scala": """abstract case catch class def do else enum extends false final finally for forSome given
        if implicit import lazy match new null object override package private protected return sealed
        super this throw trait true try type using val var while with yield""",
    "elixir": """after alias and case catch cond def defmacro defmacrop defmodule defp defprotocol defimpl
        defstruct do else end false fn for if import in nil not or quote raise receive require rescue
        true try unless unquote use when with""",
    "lua": """and break do else elseif end false for function goto if in local nil not or repeat return
        self then true until while""",
    "haskell": """case class data default deriving do else family forall foreign if import in infix infixl
        infixr instance let module newtype of qualified then type where""",
    "zig": """align allowzero and anyframe anytype asm async await break catch comptime const continue
        defer else enum errdefer error export extern false fn for if inline noalias null or orelse
        packed pub resume return struct suspend switch test threadlocal true try undefined union
        unreachable usingnamespace var volatile while""",
    "bash": """case do done elif else esac export fi for function if in local readonly return select
        then until while""",
    "dart": """abstract as assert async await break case catch class const continue covariant default
        deferred do dynamic else enum export extends extension external factory false final finally
        for get if implements import in interface is late library mixin new null on operator part
        required rethrow return sealed set static super switch sync this throw true try typedef var
        void when while with yield""",
    "objc": _C + """ @interface @implementation @end @property @protocol @selector id nil self super YES
        NO BOOL instancetype""",
    "julia": """abstract baremodule begin break catch const continue do else elseif end export false
        finally for function global if import let local macro module mutable nothing primitive quote
        return struct true try type using where while""",
    "ocaml": """and as assert begin class constraint do done downto else end exception external false
        for fun function functor if in include inherit initializer lazy let match method module
        mutable new nonrec object of open private rec sig struct then to true try type val virtual
        when while with""",
    "perl": """and cmp do else elsif eq for foreach ge gt if last le local lt my ne next no not or our
        package redo require return sub unless until use while xor""",
    "sql": """add all alter and as asc begin between by case check column constraint create database
        default delete desc distinct drop else end exists false foreign from function group having if
        in index inner insert into is join key left like limit not null on or order outer primary
        references returns right select set table then true union unique update values view when
        where with""",
    "hcl": """data for if in locals module null output provider resource terraform true false variable""",
    "fsharp": """abstract and as base begin class default do done downcast elif else end exception
        extern false finally for fun function if in inherit inline interface internal lazy let match
        member module mutable namespace new not null of open or override private public rec return
        static struct then to true try type upcast use val void when while with yield""",
    "groovy": """abstract as assert boolean break case catch class def default do double else enum
        extends false final finally float for if implements import in instanceof int interface long
        new null package private protected public return static super switch this throw trait true
        try void while""",
    "solidity": """address bool break bytes constant constructor continue contract delete do else emit
        enum event external false for function if import interface internal library mapping memory
        modifier payable pragma private public pure return returns revert storage string struct
        true uint uint256 using view while""",
    "powershell": """begin break catch class continue data do dynamicparam else elseif end enum exit
        filter finally for foreach function if in param process return switch throw trap try until
        using while $this $true $false $null""",
    "commonlisp": """defun defmacro defmethod defgeneric defclass defvar defparameter defconstant lambda
        let let* if when unless cond case progn loop setf setq nil t and or not return""",
}
_KEYWORD_ALIASES = {"vue": "typescript", "svelte": "typescript"}  # their script blocks
_ANY = "if else for while do return break continue true false null nil None True False this self"

KEYWORDS: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in _WORDS.items()}
KEYWORDS.update({lang: KEYWORDS[host] for lang, host in _KEYWORD_ALIASES.items()})
_UNKNOWN = frozenset(_ANY.split())


def keywords_of(language: str | None) -> frozenset[str]:
    """The reserved words of a language; for text without a grammar, the few nearly every one has."""
    return KEYWORDS.get(language or "", _UNKNOWN)
