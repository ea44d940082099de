"""The settings table: every key of sai-cfg.yml declared once, in SETTINGS, with its type,
default, comment, choices, range, and the Config field it fills (sai/config.py builds Config
from it; sai/cfg_template.py writes it as the template; tests/test_docs.py checks docs against
it), and the defaults that depend on the model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from sai.models import BACKENDS, CHUNKERS, EMBEDDERS, METRICS, PREFIX_STYLES, EmbedderName, PrefixStyle

ALWAYS_PRUNED = (
    ".git", "node_modules", "dist", "build", "target", ".next", "coverage", ".turbo",
    "__pycache__", ".venv", "venv", ".index",
)
COLLECTION_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The local default is MiniLM quantised to int8: twice sentence-transformers' throughput, hybrid
# NDCG@10 of the 12 held-out repositories 0.920 against fp32's 0.919 (docs/embedders.md). An index
# built with fp32 keeps it (its own model is what load_config(index=...) searches it with).
MINILM = "all-MiniLM-L6-v2"
# MiniLM distilled into a static table of token vectors (sai/embedders/static_table.py): about
# 100x its throughput, a model of its own name (docs/embedders.md)
MINILM_STATIC = "minilm-static"
DEFAULT_MODELS: dict[EmbedderName, str] = {"ollama": "nomic-embed-text", "local": f"{MINILM}-int8"}

# Similarity scales differ by model, so the defaults are per model family (model_family());
# unknown models get the generic row. find_similar_min_score is a cosine; duplicate_min_score is
# a duplicate score, a weighted mean of cosine and token-shape similarity (sai/duplicates/score.py).
# The MiniLM row comes from benchmarks/duplicates_recall.py (docs/configuration.md): 2,417 chunks
# of the stdlib with 120 functions planted as renamed copies. duplicate_min_score 0.75 finds
# 99% of renamed copies (98% with meaningless names) at cluster precision 0.99; cosine alone
# could not do both (a copy scores median 0.79, a function's best unrelated match p95 0.79).
# The generic row's 0.80 is not measured here (no Ollama server on this machine): those models
# score code higher than MiniLM, so the threshold is set higher. find_similar_min_score and
# duplicate_semantic_min_score are semantic scores (sai/text/shape.py semantic_score), chosen on
# the tuning half of benchmarks/semantic_clones.py (benchmarks/DECISIONS.md, "Semantic clones"):
# `similar` at 0.55 keeps 95% of the same-task pairs its top 10 holds, and `duplicates --metric
# semantic` at 0.75 is the lowest threshold whose clusters are 90% pure; the generic row's are
# the MiniLM row's moved as its cosine thresholds are, not measured.
# duplicate_cosine_min_score is the threshold of `duplicate_metric: cosine` (the original tool's
# plain-cosine edges): the original's 0.93, and 0.80 for MiniLM, whose cosine scale is lower
# (calibrated on the same benchmark before the shape existed, docs/configuration.md).
SIMILARITY_DEFAULTS: dict[str, dict[str, float]] = {
    "all-minilm-l6-v2": {"find_similar_min_score": 0.55, "duplicate_min_score": 0.75,
                         "duplicate_cosine_min_score": 0.80, "duplicate_semantic_min_score": 0.75},
    "*": {"find_similar_min_score": 0.65, "duplicate_min_score": 0.80, "duplicate_cosine_min_score": 0.93,
          "duplicate_semantic_min_score": 0.85},
}
LOCK_TIMEOUT_S = 30.0  # lock_timeout_s (or its old name duckdb.lock_timeout_s) when neither is set
SECRET_KEYS = frozenset({"qdrant.api_key"})  # never shown: not in errors, status or repr


@dataclass(frozen=True)
class Setting:
    """One row of the settings table: a key of sai-cfg.yml (dotted inside a section), declared once.

    From the table come the allowed keys, their types, defaults and choices (validation), the
    template `sai init` writes (sai/cfg_template.py), the docs check (tests/test_docs.py) and
    the Config load_config builds: the row's value, through `convert`, fills the field `to`
    names (default: the key itself, so `ollama.url` fills `Config.ollama.url`; None: no field of
    its own, another row or load_config reads it). `example` is what the template shows,
    commented out, for a key whose default is resolved later (None); `bound` names a range rule
    in `BOUNDS`.
    """

    key: str
    types: tuple[type, ...]
    default: Any
    comment: str = ""
    choices: tuple[str, ...] = ()
    example: str | None = None
    bound: str | None = None
    to: str | None = ""
    convert: Callable[[Any, Resolved], Any] = lambda value, _: value

    @property
    def field(self) -> str | None:
        """The dotted Config attribute this setting fills, or None."""
        return self.key if self.to == "" else self.to


@dataclass(frozen=True)
class Resolved:
    """What a setting's conversion may read besides its own value: every resolved value by key,
    the project root, the directory relative paths start from, the model, its extensions."""

    values: Mapping[str, Any]
    root: Path
    base: Path
    model: str
    ext: tuple[str, ...]

    @property
    def similarity(self) -> Mapping[str, float]:
        """The model family's similarity defaults (SIMILARITY_DEFAULTS)."""
        return SIMILARITY_DEFAULTS.get(model_family(self.model), SIMILARITY_DEFAULTS["*"])


def by_model(name: str) -> Callable[[Any, Resolved], float]:
    """A similarity threshold: the value set, else the model family's default `name`."""
    return lambda value, r: float(_or(value, r.similarity[name]))


def _strings(values: Any, _: Resolved) -> tuple[str, ...]:
    return tuple(str(item) for item in values)


def _number(value: Any, _: Resolved) -> float:
    return float(value)


_STR, _INT, _BOOL, _NUMBER, _LIST = (str,), (int,), (bool,), (int, float), (list,)
PRUNED_NOTE = " ".join(ALWAYS_PRUNED)
SETTINGS: tuple[Setting, ...] = (
    Setting("backend", _STR, "duckdb",
            "duckdb (a file in the project) or qdrant (a server or local directory: qdrant:)",
            choices=BACKENDS),
    Setting("embedder", _STR, "ollama", "ollama (an Ollama server) or local (bundled all-MiniLM-L6-v2, offline)",
            choices=EMBEDDERS),
    Setting("model", _STR, None, "default: nomic-embed-text (ollama), all-MiniLM-L6-v2-int8 (local; or minilm-static)",
            example="nomic-embed-text", to=None),
    Setting("vector_dim", _INT, None, "default: detected from the first embedding; if set, must match",
            example="768", bound="positive"),
    Setting("collection", _STR, "source_code", f"table name: {COLLECTION_RE.pattern}"),
    Setting("root", _STR, ".", "directory to index, relative to this file", to=None),
    Setting("ext", (list, str), None,
            "default: every language SAI knows (py js jsx ts tsx go rs java c h cpp cs rb php kt ...)",
            example="[py, js, ts]", to="walk.exts", convert=lambda _, r: r.ext),
    Setting("chunker", _STR, "ast", "ast (tree-sitter units, line fallback) or lines (60-line windows)",
            choices=CHUNKERS),
    Setting("max_chunk_chars", _INT, 2000, "byte budget of one chunk", bound="positive"),
    Setting("prefix_style", _STR, "auto", "auto, nomic, e5, qwen or none (query/passage prefixes)",
            choices=("auto", *PREFIX_STYLES), convert=lambda style, r: resolve_prefix_style(style, r.model)),
    Setting("exclude_dirs", _LIST, (), f"added to the always-pruned {PRUNED_NOTE}",
            to="walk.pruned", convert=lambda dirs, _: frozenset(ALWAYS_PRUNED) | {str(d) for d in dirs}),
    Setting("include", _LIST, (), "globs on the root-relative path; non-empty = allow-list",
            to="walk.include", convert=_strings),
    Setting("exclude", _LIST, (), "globs on the root-relative path; exclude wins over include",
            to="walk.exclude", convert=_strings),
    Setting("respect_gitignore", _BOOL, True, "honour .gitignore files (nested) and .git/info/exclude",
            to="walk.respect_gitignore"),
    Setting("max_file_bytes", _INT, 1048576, "larger files are skipped (too-large)", bound="positive",
            to="walk.max_bytes"),
    Setting("skip_generated_marker", _BOOL, True,
            'skip files whose first 600 bytes say "do not edit", "@generated", ..., and minified files',
            to="walk.skip_generated"),
    Setting("strip_comments", _BOOL, False, "blank C-style comments before chunking (line numbers kept)"),
    Setting("honor_noindex_marker", _BOOL, True, "drop chunks containing sai-noindexing"),
    Setting("honor_noduplicate_marker", _BOOL, True,
            "chunks containing sai-noduplicate never join duplicate clusters"),
    Setting("index_references", _BOOL, True, "store the uses of names (sai refs, callers, impact)"),
    Setting("lock_timeout_s", _NUMBER, None, "default 30: seconds to wait for another process writing the index",
            example="30", bound="seconds",
            convert=lambda t, r: float(_or(t, _or(r.values["duckdb.lock_timeout_s"], LOCK_TIMEOUT_S)))),
    Setting("duckdb.path", _STR, ".index/code.duckdb", "relative to the project root",
            to="db_path", convert=lambda path, r: (r.root / path).resolve()),
    Setting("duckdb.lock_timeout_s", _NUMBER, None, "the old name of lock_timeout_s, still read",
            example="30", bound="seconds", to=None),
    Setting("qdrant.url", _STR, None, "a Qdrant server or cluster; default: $QDRANT_URL",
            example="http://localhost:6333", convert=lambda url, _: url or None),
    Setting("qdrant.api_key", _STR, None, "default: $QDRANT_API_KEY; never printed", example="team-read-key",
            convert=lambda key, _: key or None),
    Setting("qdrant.path", _STR, None, "local mode: no server, one process; wins over url",
            example=".index/qdrant", convert=lambda path, r: (r.root / path).resolve() if path else None),
    Setting("qdrant.timeout_s", _NUMBER, 10.0, "per request to the server", bound="positive", convert=_number),
    Setting("qdrant.prefer_grpc", _BOOL, False, "talk gRPC (port 6334) instead of HTTP"),
    Setting("ollama.url", _STR, None, "default: $OLLAMA_HOST or http://localhost:11434",
            example="http://localhost:11434", convert=lambda url, _: url or "http://localhost:11434"),
    Setting("ollama.model", _STR, None, "accepted for compatibility; must not contradict `model`",
            example="nomic-embed-text", to=None),
    Setting("ollama.timeout_s", _NUMBER, 60.0, "per request; transient failures are retried with backoff",
            bound="positive", convert=_number),
    Setting("ollama.backoff_s", _NUMBER, 0.5, "wait before the first retry; each next retry waits twice as long",
            bound="seconds", convert=_number),
    Setting("ollama.batch_size", _INT, 32, bound="positive"),
    Setting("ollama.parallel", _INT, 4, "requests in flight (Ollama's OLLAMA_NUM_PARALLEL is 4 or 1 by memory)",
            bound="positive"),
    Setting("local.cache_dir", _STR, None,
            "the ONNX model the local embedder builds; default: $XDG_CACHE_HOME/sai",
            example="~/.cache/sai", convert=lambda path, r: (r.base / Path(path).expanduser()).resolve()),
    Setting("similarity.find_similar_min_score", _NUMBER, None,
            "a semantic score; default depends on the model (0.55 for all-MiniLM-L6-v2)", example="0.65",
            bound="similarity",
            convert=by_model("find_similar_min_score")),
    Setting("similarity.duplicate_min_score", _NUMBER, None,
            "cosine and token shape; depends on the model (0.75 for all-MiniLM-L6-v2)", example="0.80",
            bound="similarity", convert=by_model("duplicate_min_score")),
    Setting("similarity.duplicate_min_cluster_size", _INT, 2, bound="at_least_1"),
    Setting("similarity.duplicate_metric", _STR, "duplicate",
            "duplicate (copies: cosine and token shape), cosine (the original's plain cosine) or semantic "
            "(the same behaviour, however named)", choices=METRICS),
    Setting("similarity.top_k", _INT, 10, bound="positive"),
)
SCHEMA: dict[str, Setting] = {setting.key: setting for setting in SETTINGS}
# range rules: name -> (value is allowed, what the error says it must be)
BOUNDS: dict[str, tuple[Callable[[float], bool], str]] = {
    "positive": (lambda x: x > 0, "a positive number"),
    "seconds": (lambda x: x >= 0, "0 or more seconds"),
    "similarity": (lambda x: -1.0 <= x <= 1.0, "a similarity in [-1, 1]"),
    "at_least_1": (lambda x: x >= 1, "at least 1"),
}
# Environment variables that may set a key (flag > env > file > default).
ENV_KEYS = {
    "SAI_EMBEDDER": "embedder", "SAI_MODEL": "model", "SAI_COLLECTION": "collection",
    "SAI_ROOT": "root", "SAI_EXT": "ext", "SAI_CHUNKER": "chunker",
    "SAI_DB_PATH": "duckdb.path", "OLLAMA_HOST": "ollama.url", "SAI_BACKEND": "backend",
    "QDRANT_URL": "qdrant.url", "QDRANT_API_KEY": "qdrant.api_key",
}


def model_family(model: str) -> str:
    """A model name without its hub owner, Ollama tag or quantisation, lower-cased: the
    similarity-scale key."""
    name = model.lower().rsplit("/", 1)[-1].split(":", 1)[0].removesuffix("-int8")
    return "all-minilm-l6-v2" if name == "all-minilm" else name


def resolve_prefix_style(style: str, model: str) -> PrefixStyle:
    """`auto` picks the prefix convention from the model name (nomic, e5, qwen, else none)."""
    if style != "auto":
        return cast(PrefixStyle, style)
    lowered = model.lower()
    for name in PREFIX_STYLES:
        if name in lowered:
            return name
    return "none"


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value
