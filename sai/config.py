"""Configuration: defaults, then `sai-cfg.yml`, then environment, then flags; validated once.

`load_config()` returns a frozen `Config`; nothing below the front ends reads the environment.
"""

from __future__ import annotations

import errno
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sai.errors import ConfigError, GlobError
from sai.globs import check_glob
from sai.languages import DEFAULT_EXTS, normalize_exts

CONFIG_NAMES = ("sai-cfg.yml", "sai-cfg.yaml")
ALWAYS_PRUNED = (
    ".git", "node_modules", "dist", "build", "target", ".next", "coverage", ".turbo",
    "__pycache__", ".venv", "venv", ".index",
)
COLLECTION_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
DEFAULT_MODELS = {"ollama": "nomic-embed-text", "local": "all-MiniLM-L6-v2"}
PREFIX_STYLES = ("nomic", "e5", "qwen", "none")

# Similarity scales differ by model, so the defaults are per model family (model_family());
# unknown models get the generic row. find_similar_min_score is a cosine; duplicate_min_score is
# a duplicate score, the mean of cosine and token-shape similarity (sai/duplicates.py).
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
DUPLICATE_METRICS = ("duplicate", "cosine")
BACKENDS = ("duckdb", "qdrant")
SECRET_KEYS = frozenset({"qdrant.api_key"})  # never shown: not in errors, status or repr

# key -> (allowed python types, default); nested sections use dotted keys.
_SCHEMA: dict[str, tuple[tuple[type, ...], Any]] = {
    "backend": ((str,), "duckdb"),
    "embedder": ((str,), "ollama"),
    "model": ((str,), None),
    "vector_dim": ((int,), None),
    "collection": ((str,), "source_code"),
    "root": ((str,), "."),
    "ext": ((list, str), None),
    "chunker": ((str,), "ast"),
    "max_chunk_chars": ((int,), 2000),
    "prefix_style": ((str,), "auto"),
    "exclude_dirs": ((list,), []),
    "include": ((list,), []),
    "exclude": ((list,), []),
    "respect_gitignore": ((bool,), True),
    "max_file_bytes": ((int,), 1048576),
    "skip_generated_marker": ((bool,), True),
    "strip_comments": ((bool,), False),
    "honor_noindex_marker": ((bool,), True),
    "honor_noduplicate_marker": ((bool,), True),
    "duckdb.path": ((str,), ".index/code.duckdb"),
    "duckdb.lock_timeout_s": ((int, float), 30.0),
    "qdrant.url": ((str,), None),
    "qdrant.api_key": ((str,), None),
    "qdrant.path": ((str,), None),
    "qdrant.timeout_s": ((int, float), 10.0),
    "qdrant.prefer_grpc": ((bool,), False),
    "ollama.url": ((str,), None),
    "ollama.model": ((str,), None),
    "ollama.timeout_s": ((int, float), 60.0),
    "ollama.batch_size": ((int,), 32),
    "ollama.parallel": ((int,), 4),
    "similarity.find_similar_min_score": ((int, float), None),
    "similarity.duplicate_min_score": ((int, float), None),
    "similarity.duplicate_min_cluster_size": ((int,), 2),
    "similarity.duplicate_metric": ((str,), "duplicate"),
    "similarity.top_k": ((int,), 10),
}
_SECTIONS = {key.split(".")[0] for key in _SCHEMA if "." in key}
# Environment variables that may set a key (flag > env > file > default).
ENV_KEYS = {
    "SAI_EMBEDDER": "embedder", "SAI_MODEL": "model", "SAI_COLLECTION": "collection",
    "SAI_ROOT": "root", "SAI_EXT": "ext", "SAI_CHUNKER": "chunker",
    "SAI_DB_PATH": "duckdb.path", "OLLAMA_HOST": "ollama.url", "SAI_BACKEND": "backend",
    "QDRANT_URL": "qdrant.url", "QDRANT_API_KEY": "qdrant.api_key",
}


@dataclass(frozen=True)
class Config:
    """Every setting SAI uses, resolved and validated."""

    root: Path
    db_path: Path
    config_path: Path | None
    backend: str = "duckdb"
    embedder: str = "ollama"
    model: str = "nomic-embed-text"
    vector_dim: int | None = None
    collection: str = "source_code"
    ext: tuple[str, ...] = DEFAULT_EXTS
    chunker: str = "ast"
    max_chunk_chars: int = 2000
    prefix_style: str = "nomic"
    exclude_dirs: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    respect_gitignore: bool = True
    max_file_bytes: int = 1048576
    skip_generated_marker: bool = True
    strip_comments: bool = False
    honor_noindex_marker: bool = True
    honor_noduplicate_marker: bool = True
    lock_timeout_s: float = 30.0
    ollama_url: str = "http://localhost:11434"
    ollama_timeout_s: float = 60.0
    ollama_batch_size: int = 32
    ollama_parallel: int = 4
    find_similar_min_score: float = 0.85
    duplicate_min_score: float = 0.80
    duplicate_metric: str = "duplicate"
    duplicate_cosine_min_score: float = 0.93
    duplicate_min_cluster_size: int = 2
    top_k: int = 10
    qdrant_url: str | None = None
    qdrant_api_key: str | None = field(default=None, repr=False)
    qdrant_path: Path | None = None
    qdrant_timeout_s: float = 10.0
    qdrant_prefer_grpc: bool = False

    @property
    def index_location(self) -> str:
        """Where the index lives, for messages: the DuckDB file, the local Qdrant directory or its URL."""
        if self.backend == "qdrant":
            return str(self.qdrant_path) if self.qdrant_path is not None else str(self.qdrant_url)
        return str(self.db_path)

    @property
    def pruned_dirs(self) -> tuple[str, ...]:
        return tuple(sorted(set(ALWAYS_PRUNED) | set(self.exclude_dirs)))


def find_config_file(explicit: str | None, env: Mapping[str, str], cwd: Path) -> Path | None:
    """The config file to read: --config, else SAI_CONFIG, else sai-cfg.yml/.yaml in cwd."""
    chosen = explicit or env.get("SAI_CONFIG")
    if chosen:
        try:
            path = resolve_path(cwd / chosen)
        except (ValueError, OSError):  # a NUL byte; a symlink loop
            raise ConfigError(f"config file {chosen!r} cannot be resolved; pass an existing file") from None
        if not path.is_file():
            raise ConfigError(f"config file {chosen} not found; pass an existing file or run `sai init`")
        return path
    for name in CONFIG_NAMES:
        if (cwd / name).is_file():
            return (cwd / name).resolve()
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
        keys = ", ".join(k for k in sorted(_SCHEMA) if k.startswith(f"{name}."))
        raise ConfigError(f"{path}: key '{name}' must be a mapping with keys {keys}, got {value!r}")
    return {f"{name}.{sub}": subvalue for sub, subvalue in value.items()}


def _check_type(key: str, value: Any, *, source: str) -> None:
    if key not in _SCHEMA:
        allowed = ", ".join(sorted(_SCHEMA))
        raise ConfigError(f"{source}: unknown key '{key}'; allowed keys: {allowed}")
    types, _ = _SCHEMA[key]
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
) -> Config:
    """Resolve settings (flag > env > file > default) and validate them into a Config.

    `flags` uses the dotted schema keys (e.g. {"model": "x", "collection": "y"}); None values
    are ignored. The project root is `root` resolved against the config file's directory.
    """
    env = env or {}
    cwd = (cwd or Path.cwd()).resolve()
    path = find_config_file(config_file, env, cwd)
    values: dict[str, Any] = {key: default for key, (_, default) in _SCHEMA.items()}
    values.update(read_config_file(path) if path else {})
    origins: dict[str, str] = {}  # where a value that is not the file's came from, for errors
    for var, key in ENV_KEYS.items():
        if env.get(var):
            values[key], origins[key] = env[var], f"environment variable {var}"
    for key, value in (flags or {}).items():
        if value is not None:
            _check_type(key, value, source="command line")
            values[key], origins[key] = value, "command line"
    base = path.parent if path else cwd
    file = str(path) if path else "configuration"
    return _build(values, lambda key: origins.get(key, file), base=base, config_path=path)


def _build(v: dict[str, Any], where: Callable[[str], str], *, base: Path, config_path: Path | None) -> Config:
    """Validate resolved values; `where(key)` names the source of a key's value in errors."""
    _choice(v, "backend", BACKENDS, where("backend"))
    _choice(v, "embedder", ("ollama", "local"), where("embedder"))
    _choice(v, "chunker", ("ast", "lines"), where("chunker"))
    _choice(v, "prefix_style", ("auto", *PREFIX_STYLES), where("prefix_style"))
    _choice(v, "similarity.duplicate_metric", DUPLICATE_METRICS, where("similarity.duplicate_metric"))
    model = v["model"] or v["ollama.model"] or DEFAULT_MODELS[v["embedder"]]
    if v["ollama.model"] and v["model"] and v["ollama.model"] != v["model"]:
        raise ConfigError(
            f"{where('model')}: ollama.model '{v['ollama.model']}' contradicts model '{v['model']}'; "
            "keep one of them"
        )
    if not COLLECTION_RE.match(v["collection"]):
        raise ConfigError(
            f"{where('collection')}: collection '{v['collection']}' must match ^[A-Za-z_][A-Za-z0-9_]*$"
        )
    _check_qdrant(v, where)
    for key in ("max_chunk_chars", "max_file_bytes", "ollama.batch_size", "ollama.parallel", "similarity.top_k",
                "ollama.timeout_s", "vector_dim", "qdrant.timeout_s"):
        if v[key] is not None and v[key] <= 0:
            raise ConfigError(f"{where(key)}: key '{key}' must be a positive number, got {v[key]}")
    if v["duckdb.lock_timeout_s"] < 0:
        raise ConfigError(f"{where('duckdb.lock_timeout_s')}: key 'duckdb.lock_timeout_s' must be "
                          f"0 or more seconds, got {v['duckdb.lock_timeout_s']}")
    root = project_root(base, v["root"], where("root"))
    ext = v["ext"] if v["ext"] is not None else list(DEFAULT_EXTS)
    ext = normalize_exts(ext.split(",") if isinstance(ext, str) else [str(e) for e in ext])
    if not ext:
        raise ConfigError(f"{where('ext')}: key 'ext' lists no extension")
    if v["embedder"] == "local" and model_family(model) == "all-minilm-l6-v2":
        model = DEFAULT_MODELS["local"]  # one spelling, so the index records one name
    sims = SIMILARITY_DEFAULTS.get(model_family(model), SIMILARITY_DEFAULTS["*"])
    _check_similarity(v, where)
    _check_globs(v, where)
    return Config(
        root=root,
        db_path=(root / v["duckdb.path"]).resolve(),
        config_path=config_path,
        backend=v["backend"],
        embedder=v["embedder"],
        model=model,
        vector_dim=v["vector_dim"],
        collection=v["collection"],
        ext=ext,
        chunker=v["chunker"],
        max_chunk_chars=v["max_chunk_chars"],
        prefix_style=resolve_prefix_style(v["prefix_style"], model),
        exclude_dirs=tuple(str(d) for d in v["exclude_dirs"]),
        include=tuple(str(g) for g in v["include"]),
        exclude=tuple(str(g) for g in v["exclude"]),
        respect_gitignore=v["respect_gitignore"],
        max_file_bytes=v["max_file_bytes"],
        skip_generated_marker=v["skip_generated_marker"],
        strip_comments=v["strip_comments"],
        honor_noindex_marker=v["honor_noindex_marker"],
        honor_noduplicate_marker=v["honor_noduplicate_marker"],
        lock_timeout_s=float(v["duckdb.lock_timeout_s"]),
        ollama_url=v["ollama.url"] or "http://localhost:11434",
        ollama_timeout_s=float(v["ollama.timeout_s"]),
        ollama_batch_size=v["ollama.batch_size"],
        ollama_parallel=v["ollama.parallel"],
        find_similar_min_score=float(
            _or(v["similarity.find_similar_min_score"], sims["find_similar_min_score"])
        ),
        duplicate_min_score=float(
            _or(v["similarity.duplicate_min_score"], sims["duplicate_min_score"])
        ),
        duplicate_metric=v["similarity.duplicate_metric"],
        duplicate_cosine_min_score=float(
            _or(v["similarity.duplicate_min_score"], sims["duplicate_cosine_min_score"])
        ),
        duplicate_min_cluster_size=v["similarity.duplicate_min_cluster_size"],
        top_k=v["similarity.top_k"],
        qdrant_url=v["qdrant.url"] or None,
        qdrant_api_key=v["qdrant.api_key"] or None,
        qdrant_path=(root / v["qdrant.path"]).resolve() if v["qdrant.path"] else None,
        qdrant_timeout_s=float(v["qdrant.timeout_s"]),
        qdrant_prefer_grpc=v["qdrant.prefer_grpc"],
    )


def _check_qdrant(v: dict[str, Any], where: Callable[[str], str]) -> None:
    """`backend: qdrant` needs a server (qdrant.url, QDRANT_URL) or a local directory (qdrant.path)."""
    if v["backend"] == "qdrant" and not v["qdrant.url"] and not v["qdrant.path"]:
        raise ConfigError(f"{where('backend')}: backend 'qdrant' needs qdrant.url (or QDRANT_URL) for a "
                          "server, or qdrant.path for local mode; set one of them")


def project_root(base: Path, root: str, where: str) -> Path:
    """`root` resolved against `base`: an existing directory this process can list."""
    try:
        resolved = resolve_path(base / root)
    except ValueError:  # an embedded NUL byte
        raise ConfigError(f"project root {root!r} contains a NUL byte; fix `root` ({where})") from None
    except OSError as exc:
        raise ConfigError(f"project root {root} cannot be resolved ({_reason(exc)}); "
                          f"fix `root` ({where})") from None
    if not resolved.is_dir():
        raise ConfigError(f"project root {resolved} is not a directory; fix `root` ({where})")
    try:
        os.scandir(resolved).close()
    except OSError as exc:
        raise ConfigError(f"project root {resolved} cannot be read ({exc.strerror}); "
                          f"fix its permissions or `root` ({where})") from None
    return resolved


def _reason(exc: OSError) -> str:
    return "a symlink loop" if exc.errno == errno.ELOOP else str(exc.strerror or exc)


def resolve_path(path: Path) -> Path:
    """`path` made absolute with its symlinks resolved, as Path.resolve() does, except that a
    symlink loop raises OSError(ELOOP) on every Python (Python 3.13's resolve() hands a looping
    path back unresolved, older ones raise RuntimeError); a NUL byte raises ValueError."""
    try:
        return path.resolve(strict=True)
    except FileNotFoundError:
        return path.resolve()  # a path that does not exist (yet) is fine
    except RuntimeError as exc:
        raise OSError(errno.ELOOP, "symlink loop", str(path)) from exc


def _check_similarity(v: dict[str, Any], where: Callable[[str], str]) -> None:
    for key in ("similarity.find_similar_min_score", "similarity.duplicate_min_score"):
        if v[key] is not None and not -1.0 <= v[key] <= 1.0:
            raise ConfigError(f"{where(key)}: key '{key}' must be a similarity in [-1, 1], got {v[key]}")
    key = "similarity.duplicate_min_cluster_size"
    if v[key] < 1:
        raise ConfigError(f"{where(key)}: key '{key}' must be at least 1, got {v[key]}")


def _check_globs(v: dict[str, Any], where: Callable[[str], str]) -> None:
    for key in ("include", "exclude"):
        for pattern in v[key]:
            try:
                check_glob(str(pattern))
            except GlobError as exc:
                raise ConfigError(f"{where(key)}: bad {key} glob: {exc.pattern}: {exc.reason}") from None


def model_family(model: str) -> str:
    """A model name without its hub owner or Ollama tag, lower-cased: the similarity-scale key."""
    name = model.lower().rsplit("/", 1)[-1].split(":", 1)[0]
    return "all-minilm-l6-v2" if name == "all-minilm" else name


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _choice(v: dict[str, Any], key: str, allowed: tuple[str, ...], where: str) -> None:
    if v[key] not in allowed:
        raise ConfigError(
            f"{where}: unknown {key} '{v[key]}'; choose one of: {', '.join(allowed)}"
        )


def resolve_prefix_style(style: str, model: str) -> str:
    """`auto` picks the prefix convention from the model name (nomic, e5, qwen, else none)."""
    if style != "auto":
        return style
    lowered = model.lower()
    for name in ("nomic", "e5", "qwen"):
        if name in lowered:
            return name
    return "none"
