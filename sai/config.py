"""Configuration: defaults, then `sai-cfg.yml`, then environment, then flags; validated once.

`load_config()` returns a frozen `Config`; nothing below the front ends reads the environment.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

from sai.errors import ConfigError, GlobError
from sai.models import (
    BACKENDS,
    CHUNKERS,
    EMBEDDERS,
    METRICS,
    PREFIX_STYLES,
    BackendName,
    ChunkerName,
    DuplicateMetric,
    EmbedderName,
    PrefixStyle,
)
from sai.source.files import WalkFilters
from sai.source.globs import check_glob
from sai.source.languages import DEFAULT_EXTS, normalize_exts
from sai.source.paths import project_root, resolve_path

CONFIG_NAMES = ("sai-cfg.yml", "sai-cfg.yaml")
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
# score code higher than MiniLM, so the threshold is set higher. find_similar_min_score 0.70:
# `similar` on an original lists its renamed copy in the top 8 for 84% of them.
# duplicate_cosine_min_score is the threshold of `duplicate_metric: cosine` (the original tool's
# plain-cosine edges): the original's 0.93, and 0.80 for MiniLM, whose cosine scale is lower
# (calibrated on the same benchmark before the shape existed, docs/configuration.md).
SIMILARITY_DEFAULTS: dict[str, dict[str, float]] = {
    "all-minilm-l6-v2": {"find_similar_min_score": 0.70, "duplicate_min_score": 0.75,
                         "duplicate_cosine_min_score": 0.80},
    "*": {"find_similar_min_score": 0.85, "duplicate_min_score": 0.80, "duplicate_cosine_min_score": 0.93},
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
    in `_BOUNDS`.
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


def _by_model(name: str) -> Callable[[Any, Resolved], float]:
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
            "default depends on the model (0.70 for all-MiniLM-L6-v2)", example="0.85", bound="similarity",
            convert=_by_model("find_similar_min_score")),
    Setting("similarity.duplicate_min_score", _NUMBER, None,
            "cosine and token shape; depends on the model (0.75 for all-MiniLM-L6-v2)", example="0.80",
            bound="similarity", convert=_by_model("duplicate_min_score")),
    Setting("similarity.duplicate_min_cluster_size", _INT, 2, bound="at_least_1"),
    Setting("similarity.duplicate_metric", _STR, "duplicate",
            "duplicate (cosine and token shape) or cosine (the original's plain cosine)", choices=METRICS),
    Setting("similarity.top_k", _INT, 10, bound="positive"),
)
SCHEMA: dict[str, Setting] = {setting.key: setting for setting in SETTINGS}
# range rules: name -> (value is allowed, what the error says it must be)
_BOUNDS: dict[str, tuple[Callable[[float], bool], str]] = {
    "positive": (lambda x: x > 0, "a positive number"),
    "seconds": (lambda x: x >= 0, "0 or more seconds"),
    "similarity": (lambda x: -1.0 <= x <= 1.0, "a similarity in [-1, 1]"),
    "at_least_1": (lambda x: x >= 1, "at least 1"),
}
_SECTIONS = {key.split(".")[0] for key in SCHEMA if "." in key}
# Environment variables that may set a key (flag > env > file > default).
ENV_KEYS = {
    "SAI_EMBEDDER": "embedder", "SAI_MODEL": "model", "SAI_COLLECTION": "collection",
    "SAI_ROOT": "root", "SAI_EXT": "ext", "SAI_CHUNKER": "chunker",
    "SAI_DB_PATH": "duckdb.path", "OLLAMA_HOST": "ollama.url", "SAI_BACKEND": "backend",
    "QDRANT_URL": "qdrant.url", "QDRANT_API_KEY": "qdrant.api_key",
}


@dataclass(frozen=True)
class OllamaSettings:
    """`ollama:`, the server the ollama embedder talks to (sai/embedders/ollama.py)."""

    url: str
    timeout_s: float
    backoff_s: float
    batch_size: int
    parallel: int


@dataclass(frozen=True)
class QdrantSettings:
    """`qdrant:`, the team backend's server or local directory (sai/store/qdrant)."""

    url: str | None
    api_key: str | None = field(repr=False)
    path: Path | None
    timeout_s: float
    prefer_grpc: bool


@dataclass(frozen=True)
class LocalSettings:
    """`local:`, where the local embedder keeps the model it builds."""

    cache_dir: Path


@dataclass(frozen=True)
class SimilaritySettings:
    """`similarity:`, the thresholds of similar and duplicates, with the model's defaults applied;
    duplicate_cosine_min_score is duplicate_min_score's reading for `duplicate_metric: cosine`."""

    find_similar_min_score: float
    duplicate_min_score: float
    duplicate_cosine_min_score: float
    duplicate_min_cluster_size: int
    duplicate_metric: DuplicateMetric
    top_k: int


# Config's records, each filled by the settings whose field starts with its name (Setting.to)
SECTIONS: dict[str, type] = {
    "walk": WalkFilters, "ollama": OllamaSettings, "qdrant": QdrantSettings, "local": LocalSettings,
    "similarity": SimilaritySettings,
}


@dataclass(frozen=True)
class Config:
    """Every setting SAI uses, resolved and validated (declared, with defaults, in SETTINGS)."""

    root: Path
    db_path: Path
    config_path: Path | None
    backend: BackendName
    embedder: EmbedderName
    model: str
    vector_dim: int | None
    collection: str
    chunker: ChunkerName
    max_chunk_chars: int
    prefix_style: PrefixStyle
    strip_comments: bool
    honor_noindex_marker: bool
    honor_noduplicate_marker: bool
    index_references: bool
    lock_timeout_s: float
    walk: WalkFilters  # what the walk consults per file (source/files.py)
    ollama: OllamaSettings
    qdrant: QdrantSettings
    local: LocalSettings
    similarity: SimilaritySettings
    # the embedder and model the file names where the index's answer (`sai --recreate` builds with them)
    config_asks: tuple[str, str] | None

    @property
    def index_location(self) -> str:
        """Where the index lives, for messages: the DuckDB file, the local Qdrant directory or its URL."""
        if self.backend == "qdrant":
            return str(self.qdrant.path) if self.qdrant.path is not None else str(self.qdrant.url)
        return str(self.db_path)


def find_config_file(explicit: str | None, env: Mapping[str, str], cwd: Path, *, root: str | None = None,
                     ) -> Path | None:
    """The config file: --config, else SAI_CONFIG, else sai-cfg.yml/.yaml in a --root, else in cwd."""
    chosen = explicit or env.get("SAI_CONFIG")
    if chosen:
        try:
            path = resolve_path(cwd / chosen)
        except (ValueError, OSError):  # a NUL byte; a symlink loop
            raise ConfigError(f"config file {chosen!r} cannot be resolved; pass an existing file") from None
        if not path.is_file():
            raise ConfigError(f"config file {chosen} not found; pass an existing file or run `sai init`")
        return path
    for where, name in itertools.product([cwd / root, cwd] if root else [cwd], CONFIG_NAMES):
        if (where / name).is_file():
            return (where / name).resolve()
    return None


def read_config_file(path: Path) -> dict[str, Any]:
    """The file's settings flattened to dotted keys, each checked against the schema."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" at line {where.line + 1}" if where else ""
        raise ConfigError(f"config file {path} is not valid YAML{line}; fix the syntax") from exc
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config file {path} must be a mapping of keys to values")
    flat: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _SECTIONS:
            flat.update(_section(path, key, value))
        else:
            flat[str(key)] = value
    for key, value in flat.items():
        _check_type(key, value, source=str(path))
    # An empty value (`model:`) means "not set": the default applies.
    return {key: value for key, value in flat.items() if value is not None}


def _section(path: Path, name: str, value: Any) -> dict[str, Any]:
    """A nested section (`ollama:`) as dotted keys; empty when all its entries are commented out."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        keys = ", ".join(k for k in sorted(SCHEMA) if k.startswith(f"{name}."))
        raise ConfigError(f"{path}: key '{name}' must be a mapping with keys {keys}, got {value!r}")
    return {f"{name}.{sub}": subvalue for sub, subvalue in value.items()}


def _check_type(key: str, value: Any, *, source: str) -> None:
    if key not in SCHEMA:
        allowed = ", ".join(sorted(SCHEMA))
        raise ConfigError(f"{source}: unknown key '{key}'; allowed keys: {allowed}")
    types = SCHEMA[key].types
    if value is None:
        return
    ok = isinstance(value, types) and not (isinstance(value, bool) and bool not in types)
    if not ok:
        names = " or ".join("list" if t is list else t.__name__ for t in types)
        shown = "a value of another type" if key in SECRET_KEYS else repr(value)
        raise ConfigError(f"{source}: key '{key}' must be {names}, got {shown}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(f"{source}: key '{key}' must be a finite number, got {value}")
    if isinstance(value, list):
        wrong = [item for item in value if not isinstance(item, str)]
        if wrong:
            raise ConfigError(
                f"{source}: key '{key}' must be a list of strings, got the item {wrong[0]!r}; "
                "quote it or remove it"
            )


def load_config(
    *,
    config_file: str | None = None,
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    index: Mapping[str, str] | None = None,
) -> Config:
    """Resolve settings (flag > env > index > file > default) and validate them into a Config.

    `flags` uses the dotted schema keys (e.g. {"model": "x"}; None values are ignored); `index`
    the embedder and model an existing index was built with (project.built_with). The project
    root is `root` resolved against the config file's directory.
    """
    env, flags, cwd = env or {}, flags or {}, (cwd or Path.cwd()).resolve()
    path = find_config_file(config_file, env, cwd, root=flags.get("root"))
    values: dict[str, Any] = {setting.key: setting.default for setting in SETTINGS}
    values.update(read_config_file(path) if path else {})
    origins: dict[str, str] = {}  # where a value that is not the file's came from, for errors
    for key, value in _index_layer(index, flags, env).items():
        values[key], origins[key] = value, "the index"
    for var, key in ENV_KEYS.items():
        if env.get(var):
            values[key], origins[key] = env[var], f"environment variable {var}"
    for key, value in flags.items():
        if value is not None:
            _check_type(key, value, source="command line")
            values[key], origins[key] = value, "command line"
    base = path.parent if path else cwd
    file = str(path) if path else "configuration"
    if not values["local.cache_dir"]:
        values["local.cache_dir"] = str(_user_cache(env) / "sai")
    return _build(values, lambda key: origins.get(key, file), base=base, config_path=path)


def _index_layer(index: Mapping[str, str] | None, flags: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """The index's embedder and model, less what a flag or env asks for (an embedder: its model too)."""
    asked = {key for var, key in ENV_KEYS.items() if env.get(var)} | {k for k, v in flags.items() if v is not None}
    if not index or "embedder" in asked:
        return {}
    layer: dict[str, Any] = {key: index[key] for key in ("embedder", "model") if index.get(key) and key not in asked}
    return {**layer, "ollama.model": None} if "model" in layer else layer  # the file's old spelling


def _build(v: dict[str, Any], where: Callable[[str], str], *, base: Path, config_path: Path | None) -> Config:
    """Validate resolved values and convert each into its Config field (Setting.to, .convert);
    `where(key)` names the source of a key's value in errors."""
    for setting in SETTINGS:
        if setting.choices:
            _choice(v, setting.key, setting.choices, where(setting.key))
    model = _model(v, where)
    if not COLLECTION_RE.match(v["collection"]):
        raise ConfigError(f"{where('collection')}: collection '{v['collection']}' must match {COLLECTION_RE.pattern}")
    if v["backend"] == "qdrant":
        require_qdrant_target(v["qdrant.url"], v["qdrant.path"], where=where("backend"))
    _check_bounds(v, where)
    root = project_root(base, v["root"], where("root"))
    ext = v["ext"] if v["ext"] is not None else list(DEFAULT_EXTS)
    ext = normalize_exts(ext.split(",") if isinstance(ext, str) else [str(e) for e in ext])
    if not ext:
        raise ConfigError(f"{where('ext')}: key 'ext' lists no extension")
    _check_globs(v, where)
    resolved = Resolved(v, root=root, base=base, model=model, ext=ext)
    fields: dict[str, dict[str, Any]] = {name: {} for name in ("", *SECTIONS)}
    for setting in SETTINGS:
        if setting.field is not None:
            record, _, name = setting.field.rpartition(".")
            fields[record][name] = setting.convert(v[setting.key], resolved)
    own = config_path.relative_to(root).as_posix() if config_path and config_path.is_relative_to(root) else None
    fields["walk"].update(root=root, own_config=own)
    fields["similarity"]["duplicate_cosine_min_score"] = float(
        _or(v["similarity.duplicate_min_score"], resolved.similarity["duplicate_cosine_min_score"]))
    records = {name: record(**fields[name]) for name, record in SECTIONS.items()}
    # config_asks: the front end that opens the index sets it (project.file_asks)
    return Config(**fields[""], **records, root=root, config_path=config_path, model=model, config_asks=None)


def _model(v: dict[str, Any], where: Callable[[str], str]) -> str:
    """The model asked for (or the embedder's default), in the one spelling the index records."""
    model = v["model"] or v["ollama.model"] or DEFAULT_MODELS[v["embedder"]]
    if v["ollama.model"] and v["model"] and v["ollama.model"] != v["model"]:
        raise ConfigError(
            f"{where('model')}: ollama.model '{v['ollama.model']}' contradicts model '{v['model']}'; "
            "keep one of them"
        )
    if v["embedder"] == "local" and model_family(model) == "all-minilm-l6-v2":
        # one spelling, so the index records one name; the int8 variant is a model of its own
        return MINILM + ("-int8" if model.lower().endswith("-int8") else "")
    if v["embedder"] == "local" and model.lower() == MINILM_STATIC:
        return MINILM_STATIC
    return model


def require_qdrant_target(url: str | None, path: str | Path | None, *, where: str = "") -> None:
    """`backend: qdrant` needs a server (qdrant.url, QDRANT_URL) or a local directory (qdrant.path);
    `where` names the source of the backend setting in the message."""
    if not url and not path:
        raise ConfigError(f"{where + ': ' if where else ''}backend 'qdrant' needs qdrant.url (or QDRANT_URL) "
                          "for a server, or qdrant.path for local mode; set one of them")


def _check_bounds(v: dict[str, Any], where: Callable[[str], str]) -> None:
    for setting in SETTINGS:
        value = v[setting.key]
        if setting.bound and value is not None:
            allowed, what = _BOUNDS[setting.bound]
            if not allowed(value):
                raise ConfigError(f"{where(setting.key)}: key '{setting.key}' must be {what}, got {value}")


def _check_globs(v: dict[str, Any], where: Callable[[str], str]) -> None:
    for key in ("include", "exclude"):
        for pattern in v[key]:
            try:
                check_glob(str(pattern))
            except GlobError as exc:
                raise ConfigError(f"{where(key)}: bad {key} glob: {exc.pattern}: {exc.reason}") from None


def _user_cache(env: Mapping[str, str]) -> Path:
    """The XDG cache directory: $XDG_CACHE_HOME when absolute, else ~/.cache."""
    given = env.get("XDG_CACHE_HOME", "")
    return Path(given) if given and Path(given).is_absolute() else Path(env.get("HOME") or Path.home()) / ".cache"


def model_family(model: str) -> str:
    """A model name without its hub owner, Ollama tag or quantisation, lower-cased: the
    similarity-scale key."""
    name = model.lower().rsplit("/", 1)[-1].split(":", 1)[0].removesuffix("-int8")
    return "all-minilm-l6-v2" if name == "all-minilm" else name


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _choice(v: dict[str, Any], key: str, allowed: tuple[str, ...], where: str) -> None:
    if v[key] not in allowed:
        raise ConfigError(
            f"{where}: unknown {key} '{v[key]}'; choose one of: {', '.join(allowed)}"
        )


def resolve_prefix_style(style: str, model: str) -> PrefixStyle:
    """`auto` picks the prefix convention from the model name (nomic, e5, qwen, else none)."""
    if style != "auto":
        return cast(PrefixStyle, style)
    lowered = model.lower()
    for name in PREFIX_STYLES:
        if name in lowered:
            return name
    return "none"
