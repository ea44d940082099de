"""Hybrid ranking (docs/design.md, "Search"): each signal declared once in signals.py; fusion.py
applies them; facts.py reads the query once."""

from sai.query.ranking.candidate import Candidate
from sai.query.ranking.facts import bare_name, in_scope, scopes_of
from sai.query.ranking.fusion import fuse, merge
from sai.query.ranking.signals import (
    ACTION_UNIT,
    DEFINITION_BOOST,
    FILE_NAMED,
    FILE_SUPPORT,
    FIRST_PLACE,
    NAME_MATCH,
    NAME_QUERY_BOOST,
    NAMED_INSIDE,
    PATH_MATCH,
    REPEAT_DECAY,
    REPEAT_FREE,
    RRF_K,
    SIGNALS,
    TEST_PENALTY,
    Signal,
    formula,
    recombined,
)

__all__ = [
    "ACTION_UNIT", "DEFINITION_BOOST", "FILE_NAMED", "FILE_SUPPORT", "FIRST_PLACE", "NAMED_INSIDE", "NAME_MATCH",
    "NAME_QUERY_BOOST", "PATH_MATCH", "REPEAT_DECAY", "REPEAT_FREE", "RRF_K", "SIGNALS", "TEST_PENALTY",
    "Candidate", "Signal", "bare_name", "formula", "fuse", "in_scope", "merge", "recombined", "scopes_of",
]
