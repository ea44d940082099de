"""The BM25 terms of a lexeme string, one rule for every backend: the words (sai.text.lexical
writes lexemes as [a-z0-9_] words split by spaces) less English stop words that name nothing in
code, Porter-stemmed.

The stemmer is Snowball's `porter` through PyStemmer, the libstemmer C code DuckDB's fts
extension embeds: its stems equal the extension's `stem(w, 'porter')` (400,040 distinct words of
the benchmark checkouts compared, no difference). Both backends index the same terms
(docs/design.md, "Lexical search"). Each distinct word is stemmed once per process and kept.

Changing STOPWORDS changes every index's terms: bump sai.text.lexical.LEXEMES_VERSION with it,
so the next index run writes every chunk's postings again (its vectors are kept).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import Stemmer

_MAX_HELD = 1 << 20  # distinct words whose stems are kept; past this the table starts again

# The English stop words of DuckDB's fts extension (its 571 words without the ones holding an
# apostrophe, which lexemes never hold): the list SAI's FTS index used.
ENGLISH = frozenset("""
    a able about above according accordingly across actually after afterwards again against all
    allow allows almost alone along already also although always am among amongst an and another
    any anybody anyhow anyone anything anyway anyways anywhere apart appear appreciate
    appropriate are around as aside ask asking associated at available away awfully b be became
    because become becomes becoming been before beforehand behind being believe below beside
    besides best better between beyond both brief but by c came can cannot cant cause causes
    certain certainly changes clearly co com come comes concerning consequently consider
    considering contain containing contains corresponding could course currently d definitely
    described despite did different do does doing done down downwards during e each edu eg eight
    either else elsewhere enough entirely especially et etc even ever every everybody everyone
    everything everywhere ex exactly example except f far few fifth first five followed
    following follows for former formerly forth four from further furthermore g get gets getting
    given gives go goes going gone got gotten greetings h had happens hardly has have having he
    hello help hence her here hereafter hereby herein hereupon hers herself hi him himself his
    hither hopefully how howbeit however i ie if ignored immediate in inasmuch inc indeed
    indicate indicated indicates inner insofar instead into inward is it its itself j just k
    keep keeps kept know known knows l last lately later latter latterly least less lest let
    like liked likely little look looking looks ltd m mainly many may maybe me mean meanwhile
    merely might more moreover most mostly much must my myself n name namely nd near nearly
    necessary need needs neither never nevertheless new next nine no nobody non none noone nor
    normally not nothing novel now nowhere o obviously of off often oh ok okay old on once one
    ones only onto or other others otherwise ought our ours ourselves out outside over overall
    own p particular particularly per perhaps placed please plus possible presumably probably
    provides q que quite qv r rather rd re really reasonably regarding regardless regards
    relatively respectively right s said same saw say saying says second secondly see seeing
    seem seemed seeming seems seen self selves sensible sent serious seriously seven several
    shall she should since six so some somebody somehow someone something sometime sometimes
    somewhat somewhere soon sorry specified specify specifying still sub such sup sure t take
    taken tell tends th than thank thanks thanx that thats the their theirs them themselves then
    thence there thereafter thereby therefore therein theres thereupon these they think third
    this thorough thoroughly those though three through throughout thru thus to together too
    took toward towards tried tries truly try trying twice two u un under unfortunately unless
    unlikely until unto up upon us use used useful uses using usually uucp v value various very
    via viz vs w want wants was way we welcome well went were what whatever when whence whenever
    where whereafter whereas whereby wherein whereupon wherever whether which while whither who
    whoever whole whom whose why will willing wish with within without wonder would x y yes yet
    you your yours yourself yourselves z zero
""".split())

# Words of that list that name things in code: `get_u32_le`, `from_le_bytes`, `self`, `new`,
# `next`, `is_none`, `keep_fragments`, `use`. A doc comment or a task asks with them ("Gets an
# unsigned 32 bit integer from `self` in little-endian byte order"), so BM25 keeps them; their
# idf weighs them where they are common. Measured in benchmarks/DECISIONS.md ("Kept: stop words that name code").
CODE_WORDS = frozenset("""
    allow allows available cause causes changes contain containing contains corresponding described
    different down example except first five four eight nine seven six two three one ones zero
    second third fifth last next new old get gets getting given gives help ignored immediate inner
    keep keeps kept known least less let like little look looking looks mean name need needs none
    non not no off on out over under up per plus possible provides right same see self sent
    specified specify sub take taken tried tries try trying use used uses using value via want
    wants way whole from
""".split())
STOPWORDS = ENGLISH - CODE_WORDS

_stemmer = Stemmer.Stemmer("porter")
_lock = threading.Lock()  # a PyStemmer stemmer is not safe to share between threads
_held: dict[str, str] = {}


def stems(words: Iterable[str]) -> dict[str, str]:
    """word -> its Porter stem, for each distinct word given (stop words too)."""
    global _held
    wanted = set(words)
    held = _held  # a table is never emptied, only replaced: this one keeps what it held
    missing = [w for w in wanted if w not in held]
    if not missing:
        return {w: held[w] for w in wanted}
    with _lock:
        found = dict(zip(missing, _stemmer.stemWords(missing), strict=True))
        if len(_held) + len(found) > _MAX_HELD:
            _held = {}  # the words asked for now come from `held` and `found`, not from the new table
        _held.update(found)
    return {w: found[w] if w in found else held[w] for w in wanted}


def terms(lexemes: str) -> list[str]:
    """The BM25 terms of `lexemes`, in order, repeats kept, stop words left out."""
    words = [w for w in lexemes.split() if w not in STOPWORDS]
    stemmed = stems(words)
    return [stemmed[w] for w in words]
