"""Embedding models behind one seam: `embed_documents` and `embed_query`.

This module owns the name -> implementation mapping, one entry per name in models.EMBEDDERS;
an implementation is imported only when a config chooses it (the local one loads ONNX Runtime).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sai.embedders.base import Embedder
from sai.models import EmbedderName

if TYPE_CHECKING:
    from sai.config import Config


def _ollama(config: Config) -> Embedder:
    from sai.embedders.ollama import OllamaEmbedder

    return OllamaEmbedder(
        model=config.model,
        url=config.ollama.url,
        timeout_s=config.ollama.timeout_s,
        backoff_s=config.ollama.backoff_s,
        batch_size=config.ollama.batch_size,
        parallel=config.ollama.parallel,
        prefix_style=config.prefix_style,
    )


def _local(config: Config) -> Embedder:
    from sai.settings import MINILM_STATIC

    if config.model == MINILM_STATIC:
        from sai.embedders.static import StaticEmbedder

        return StaticEmbedder(cache_dir=config.local.cache_dir)
    from sai.embedders.local import LocalEmbedder

    return LocalEmbedder(model=config.model, prefix_style=config.prefix_style, cache_dir=config.local.cache_dir)


EMBEDDER_FACTORIES: dict[EmbedderName, Callable[[Config], Embedder]] = {"ollama": _ollama, "local": _local}


def make_embedder(config: Config) -> Embedder:
    """The embedder a config names; heavy imports happen only for the one chosen."""
    return EMBEDDER_FACTORIES[config.embedder](config)


__all__ = ["EMBEDDER_FACTORIES", "Embedder", "make_embedder"]
