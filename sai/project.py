"""A project: its config, its index file and its embedder, opened once and shared."""

from __future__ import annotations

import threading

from sai.chunking.base import CHUNKER_VERSION
from sai.chunking.references import REFS_VERSION
from sai.config import Config, read_config_file
from sai.embedders import Embedder, make_embedder
from sai.errors import ConfigError, IndexMismatchError, StoreError
from sai.models import SCHEMA_VERSION, IndexMeta
from sai.store import IndexReader, open_store
from sai.store.base import Store
from sai.text.lexical import LEXEMES_VERSION
from sai.text.shape import SHAPE_VERSION

# meta keys that must match between an index and the config that opens it
# Chunking settings are not checked: a change re-chunks every file on the next index run.
_CHECKED = ("schema_version", "embedder", "model", "prefix_style")
UPGRADABLE_FROM = 2  # index formats an index run upgrades in place (the store's upgrade())


class Project:
    """What every front end holds: config, store and a lazily created embedder."""

    def __init__(self, config: Config, *, embedder: Embedder | None = None, store: Store | None = None) -> None:
        self.config = config
        self.store = store or open_store(config)
        self._embedder = embedder
        self._embedder_lock = threading.Lock()

    @property
    def embedder(self) -> Embedder:
        """The embedder, created on first use (once, even when threads ask at the same time)."""
        with self._embedder_lock:
            if self._embedder is None:
                self._embedder = make_embedder(self.config)
            return self._embedder

    def expected_meta(self, vector_dim: int) -> IndexMeta:
        return IndexMeta(
            backend=self.config.backend,
            embedder=self.config.embedder,
            model=self.config.model,
            prefix_style=self.config.prefix_style,
            vector_dim=vector_dim,
            chunker=self.config.chunker,
            chunker_version=CHUNKER_VERSION,
            schema_version=SCHEMA_VERSION,
            chunking=self.chunking_signature(),
        )

    def chunking_signature(self) -> str:
        """Every setting that shapes chunks; when it changes, every file is chunked again."""
        c = self.config
        return (f"{c.chunker}/{CHUNKER_VERSION}/{c.max_chunk_chars}/strip={c.strip_comments}/"
                f"noindex={c.honor_noindex_marker}/nodup={c.honor_noduplicate_marker}/"
                f"lexemes={LEXEMES_VERSION}/shape={SHAPE_VERSION}"
                f"/refs={REFS_VERSION if c.index_references else 0}")

    def check_meta(self, meta: dict[str, str], *, vector_dim: int | None = None) -> None:
        """Raise IndexMismatchError when the index was built differently from this config, and
        ConfigError when the embedder's vectors (`vector_dim`: their length) contradict the config."""
        self._check_model_dim(vector_dim)
        if not meta:
            return
        expected = self.expected_meta(vector_dim or self.config.vector_dim or 0).__dict__
        for key in _CHECKED:
            if str(expected[key]) != meta.get(key):
                raise IndexMismatchError(self._mismatch(key, meta.get(key), expected[key]))
        stored_dim = int(meta.get("vector_dim", "0"))
        wanted = vector_dim or self.config.vector_dim
        if wanted and stored_dim and stored_dim != wanted:  # 0: no vector stored yet
            # the model's own vectors changed: only a rebuild helps
            raise IndexMismatchError(self._mismatch("vector_dim" if not vector_dim else "model_output",
                                                    stored_dim, wanted))

    def indexed_meta(self, reader: IndexReader) -> dict[str, str]:
        """The index's meta, checked against this config; an index without the collection says
        to run `sai` (every question asks this before it reads or embeds anything)."""
        if not reader.has_index():
            raise StoreError(f"the index at {self.store.location} has no collection '{self.config.collection}'; "
                             "run `sai` to build it")
        meta = reader.meta()
        self.check_meta(meta)
        return meta

    def _check_model_dim(self, vector_dim: int | None) -> None:
        """The config's vector_dim, when set, holds for every vector the model gives: checked on
        the first embedding of a run, before anything is written."""
        wanted = self.config.vector_dim
        if vector_dim and wanted and vector_dim != wanted:
            raise ConfigError(
                f"the model {self.config.model} gives vectors of {vector_dim} dimensions, but "
                f"vector_dim in the config is {wanted}; set vector_dim to {vector_dim} (or remove "
                f"it), or choose a model that gives {wanted}"
            )

    def upgrade(self) -> bool:
        """Bring an index written by an older SAI to this version's format; True when it did.

        Nothing is re-embedded: the next index run chunks every file again and reuses vectors.
        """
        if not self.store.exists:
            return False
        with self.store.read() as reader:
            stored = _schema_number(reader.meta().get("schema_version")) if reader.has_index() else SCHEMA_VERSION
        if not UPGRADABLE_FROM <= stored < SCHEMA_VERSION:
            return False
        if not self.store.can_upgrade:
            raise StoreError(f"the index '{self.config.collection}' at {self.store.location} has index format "
                             f"{stored}, which SAI cannot upgrade on the {self.store.backend} backend; "
                             "rebuild it with `sai --recreate`")
        self.store.upgrade(stored)
        return True

    def _mismatch(self, key: str, stored: object, wanted: object) -> str:
        if key == "schema_version" and UPGRADABLE_FROM <= _schema_number(str(stored)) < SCHEMA_VERSION:
            return (
                f"the index '{self.config.collection}' at {self.store.location} was written by an "
                f"older SAI (index format {stored}); run `sai` in the project to upgrade it in place "
                "(nothing is re-embedded)"
            )
        if key == "model_output":
            return (f"the index '{self.config.collection}' at {self.store.location} was built with vector_dim "
                    f"{stored}, but the model now answers with {wanted}-d vectors; {_REBUILD}")
        what = "an index format of another SAI version" if key == "schema_version" else f"{key} {stored}"
        return (
            f"the index '{self.config.collection}' at {self.store.location} was built with {what}, "
            f"but this run uses {key} {wanted}; {_FIXES.get(key, _REBUILD).format(stored=stored)}"
        )

    def close(self) -> None:
        self.store.close()


_REBUILD = "rebuild it with `sai --recreate` or choose another collection"
# what to do about a difference a setting makes (an index of another format can only be rebuilt)
_FIXES = {
    "embedder": "leave out the embedder asked for (--embedder, SAI_EMBEDDER) to use the index's own, "
                "or give another --collection",
    "model": "leave out the model asked for (--model, SAI_MODEL) to use the index's own, or give another --collection",
    "prefix_style": "set prefix_style: {stored} in sai-cfg.yml, or give another --collection",
    "vector_dim": "set vector_dim: {stored} in sai-cfg.yml (or leave it out), or give another --collection",
}


def built_with(store: Store) -> dict[str, str]:
    """The embedder and model an existing index was built with ({} when there is none): what
    load_config(index=…) searches it with unless the user asks for others."""
    if not store.exists:
        return {}
    with store.read() as reader:
        meta = reader.meta() if reader.has_index() else {}
    return {key: meta[key] for key in ("embedder", "model") if meta.get(key)}


def file_asks(asked: Config, answering: Config) -> tuple[str, str] | None:
    """The embedder and model that `asked` (the config without the index's) builds with, when
    its file names one that differs from `answering`'s (the index's): what `sai --recreate`
    would build; None when the file names neither or the same."""
    named = read_config_file(asked.config_path).keys() if asked.config_path else set()
    differs = ("embedder" in named and asked.embedder != answering.embedder) or (
        bool({"model", "ollama.model"} & named) and asked.model != answering.model)
    return (asked.embedder, asked.model) if differs else None


def _schema_number(value: str | None) -> int:
    """A stored schema_version as a number; anything unreadable counts as this version's."""
    return int(value) if value and value.isdigit() else SCHEMA_VERSION


def chunks_part(signature: str) -> str:
    """A chunking signature without its references' part (`chunking_signature` writes `/refs=N`
    last): what the chunks themselves depend on."""
    return signature.partition("/refs=")[0]
