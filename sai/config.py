"""Configuration: defaults, then `sai-cfg.yml`, then environment, then flags; validated once.

`load_config()` returns a frozen `Config`, its sections nested frozen records, every field
filled by the row of sai/settings.py that declares it; nothing below the front ends reads the
environment.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sai.errors import ConfigError, GlobError
from sai.models import BackendName, ChunkerName, DuplicateMetric, EmbedderName, PrefixStyle
from sai.settings import (
    BOUNDS,
    COLLECTION_RE,
    DEFAULT_MODELS,
    ENV_KEYS,
    MINILM,
    MINILM_STATIC,
    SCHEMA,
    SECRET_KEYS,
    SETTINGS,
    Resolved,
    by_model,
    model_family,
)
from sai.source.files import WalkFilters
from sai.source.globs import check_glob
from sai.source.languages import DEFAULT_EXTS, normalize_exts
from sai.source.paths import project_root, resolve_path

CONFIG_NAMES = ("sai-cfg.yml", "sai-cfg.yaml")
_SECTIONS = {key.split(".")[0] for key in SCHEMA if "." in key}  # the file's sections (`ollama:`)


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
    duplicate_cosine_min_score and duplicate_semantic_min_score are duplicate_min_score's readings
    for `duplicate_metric: cosine` and `semantic`."""

    find_similar_min_score: float
    duplicate_min_score: float
    duplicate_cosine_min_score: float
    duplicate_semantic_min_score: float
    duplicate_min_cluster_size: int
    duplicate_metric: DuplicateMetric
    top_k: int


# Config's records, each filled by the settings whose field starts with its name (Setting.to)
RECORDS: dict[str, type] = {
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
    fields: dict[str, dict[str, Any]] = {name: {} for name in ("", *RECORDS)}
    for setting in SETTINGS:
        if setting.field is not None:
            record, _, name = setting.field.rpartition(".")
            fields[record][name] = setting.convert(v[setting.key], resolved)
    own = config_path.relative_to(root).as_posix() if config_path and config_path.is_relative_to(root) else None
    fields["walk"].update(root=root, own_config=own)
    # duplicate_min_score as `duplicate_metric: cosine` and `semantic` read it: the same key, their own
    # model defaults
    cosine = by_model("duplicate_cosine_min_score")(v["similarity.duplicate_min_score"], resolved)
    fields["similarity"]["duplicate_cosine_min_score"] = cosine
    semantic = by_model("duplicate_semantic_min_score")(v["similarity.duplicate_min_score"], resolved)
    fields["similarity"]["duplicate_semantic_min_score"] = semantic
    records = {name: record(**fields[name]) for name, record in RECORDS.items()}
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
            allowed, what = BOUNDS[setting.bound]
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


def _choice(v: dict[str, Any], key: str, allowed: tuple[str, ...], where: str) -> None:
    if v[key] not in allowed:
        raise ConfigError(
            f"{where}: unknown {key} '{v[key]}'; choose one of: {', '.join(allowed)}"
        )
