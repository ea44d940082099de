"""What a query asks for, from its first words: a place (a question or a short topic), a function
(a docstring-like sentence: "Return the MIME type", "Parses a header", "True if ..."), or
something that acts (a verb first). sai/query/ranking/ weighs its file-level signals and chunk
kinds by it. The word lists are common docstring verbs, checked on quality.py's docstring queries
(about 80% read as a function's description) and on semble's 1,049 multi-word questions and
topics (none does).
"""

from __future__ import annotations

import re

# Verbs a docstring's first sentence starts with (imperative, or with -s / -es / -ies).
_VERBS = frozenset("""
    accept acquire add adjust allocate append apply ask assert attach begin bind build calculate call
    cancel cast change check clean clear close coerce collect commit compare compile compute configure
    connect construct consume convert copy count create decide decode define delegate delete
    deserialize destroy detach determine disable disconnect dispatch display dispose do drain draw dump
    emit enable encode ensure escape estimate evict execute expand expect extend extract fetch fill
    filter find finish flush force format free generate get give handle hide implement import increment
    initialise initialize insert inspect install instantiate invalidate invoke iterate join keep kill
    launch list listen load lock log look lookup make map mark match measure merge modify move
    normalize notify open override pack parse pass patch peek perform pop post prepare print process
    produce prompt provide push put query quote raise read receive record reduce refresh register
    reload remove rename render replace report request reset resolve restore resume retrieve return
    reverse run save schedule search seek select send serialize set setup show shuffle signal skip
    sort spawn split start stop store strip swap switch sync take tell terminate test throw toggle
    trace transform translate trigger trim truncate try unescape uninstall unlink unlock unpack unquote
    unregister unwrap update use validate verify visit wait walk warn wrap write yield
    abort authenticate authorize compress decompress decrypt detect download encrypt enter evaluate
    exit flatten hash infer leave pad prepend publish quit redirect reject release repeat reply
    respond retry revert rotate scan sleep subscribe traverse upload
""".split())
# Verbs that also name topics ("request handling", "test runner", "store creation"): they count
# only when an article or a pronoun follows ("Request the lock", "Test whether ...").
_NOUN_TOO = frozenset("""
    call cast change check count display execute expect filter import insert list log lookup map match
    patch post print process query record report request search serialize deserialize set signal sort
    store switch test trace update use
""".split())
_OBJECT = frozenset("""
    a an the this that these those all any each every some its their his her our my your it them one
    no none true false whether if
""".split())
_DESCRIBES_RESULT = frozenset({"the", "true", "false", "if", "whether", "a", "an", "called", "used", "invoked"})
_QUESTION = frozenset({"how", "where", "what", "which", "why", "when", "who"})
PLACE_WORDS = 7  # a topic is short; docstring sentences run longer (benchmarks/DECISIONS.md)


def asks_for_place(words: list[str]) -> bool:
    """A question, or a short topic that is not a function's description."""
    first = words[0].lower() if words else ""
    if first in _QUESTION:
        return True
    return len(words) <= PLACE_WORDS and not _describes_function(words)


def _describes_function(words: list[str]) -> bool:
    """The query starts as a docstring does: a verb (`return`, `parses`, `copies`) or a result."""
    first = re.sub(r"[^a-z]", "", words[0].lower()) if words else ""
    return starts_with_verb(words) or first in _DESCRIBES_RESULT


def starts_with_verb(words: list[str]) -> bool:
    """`Return ...`, `Parses ...`, `Optionally set ...`; a verb that also names topics needs an
    article or pronoun after it (`Request the lock`, not `request handling`)."""
    plain = [re.sub(r"[^a-z]", "", w.lower()) for w in words[:3]]
    if len(plain) > 1 and plain[0].endswith("ly"):
        plain = plain[1:]
    first = plain[0] if plain else ""
    stems = {first, first[:-1], first[:-2], first[:-3] + "y"} if first.endswith("s") else {first}
    if stems & _NOUN_TOO:
        return len(plain) > 1 and plain[1] in _OBJECT
    return bool(stems & _VERBS)
