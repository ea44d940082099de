"""The static model's table: one vector per token of MiniLM's vocabulary, distilled on this machine.

Model2vec's recipe (github.com/MinishLab/model2vec, `distill`), with what SAI already installs:
each vocabulary token goes through the bundled MiniLM (its fp32 ONNX graph) alone between the
separator and class tokens, `[SEP] token [CLS]`, and the mean of the three output states is the
token's vector; the vectors are centred and projected on their first `dimension` principal axes
(numpy's SVD); each row is then weighted by SIF, a / (a + p), with p the token's probability under
Zipf's law of its rank in the vocabulary (the tokenizer lists tokens roughly by frequency). The
special and `[unused…]` tokens get zero rows. A chunk's vector is then the normalised sum of its
tokens' rows (sai/embedders/static.py).

The table is built once into the model cache (a .npy file, written atomically) whose name carries
the recipe and a digest of the installed weights, so a changed wheel or recipe builds a new one.
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sai.embedders.minilm import BertShape, load_tokenizer
from sai.embedders.onnx_model import model_file, open_session
from sai.errors import EmbedderError

# Part of the file name: a change to the recipe must not reuse a table an older one wrote.
TABLE_VERSION = 1
_SPECIAL = re.compile(r"^\[(?:unused\d+|PAD|UNK|CLS|SEP|MASK)\]$")
_BATCH = 1024  # three-token inputs per ONNX Runtime run
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Recipe:
    """How a table is distilled: its vector length and its SIF coefficient (None: no weighting)."""

    dimension: int = 256
    sif: float | None = 1e-4

    @property
    def tag(self) -> str:
        return f"d{self.dimension}-" + (f"sif{self.sif:g}" if self.sif else "flat")


def table_file(cache_dir: Path, model_path: Path, recipe: Recipe) -> Path:
    """Where the table of this installed model and recipe lives (the ONNX file's digest in its name)."""
    digest = model_file(cache_dir, model_path, "fp32").stem.rsplit("-", 1)[-1]
    return cache_dir / f"minilm-static-{recipe.tag}-v{TABLE_VERSION}-{digest}.npy"


def load_table(cache_dir: Path, model_path: Path, shape: BertShape, recipe: Recipe, *, threads: int) -> np.ndarray:
    """The table, memory-mapped from the cache, built first if missing or unreadable."""
    path = table_file(cache_dir, model_path, recipe)
    if path.is_file():
        try:
            return _checked(np.load(path, mmap_mode="r"), recipe)
        except (OSError, ValueError) as exc:
            _log.warning("the cached static table %s is unreadable (%s); building it again", path, exc)
    build(cache_dir, model_path, shape, recipe, threads=threads)
    return _checked(np.load(path, mmap_mode="r"), recipe)


def build(cache_dir: Path, model_path: Path, shape: BertShape, recipe: Recipe, *, threads: int,
          ids: Sequence[int] | None = None) -> Path:
    """Distil the table into the cache (`ids`: only those tokens, for a small test table)."""
    path = table_file(cache_dir, model_path, recipe)
    _log.warning("building the minilm-static table in %s (once)", path.parent)
    tokenizer = load_tokenizer(model_path, shape.max_seq_length)
    session = open_session(cache_dir, model_path, shape, precision="fp32", threads=threads)
    _save(path, distill(session, _vocabulary(tokenizer), recipe, ids=ids))
    return path


def distill(session: Any, vocabulary: Sequence[str], recipe: Recipe, *, ids: Sequence[int] | None = None) -> np.ndarray:
    """The table (len(vocabulary), recipe.dimension) float32; `ids` limits the forward passes to
    those tokens (a small table for tests: every other row stays zero)."""
    keep = [i for i in (range(len(vocabulary)) if ids is None else ids) if not _SPECIAL.match(vocabulary[i])]
    states = _token_states(session, vocabulary, keep)
    if recipe.dimension > min(states.shape):
        raise EmbedderError(f"a static table of {recipe.dimension} dimensions needs at least that many tokens")
    centred = states - states.mean(axis=0)
    _, _, axes = np.linalg.svd(centred, full_matrices=False)
    # A component's sign is arbitrary; fix it so every build gives the same table.
    axes = axes[: recipe.dimension]
    axes *= np.sign(axes[np.arange(len(axes)), np.abs(axes).argmax(axis=1)])[:, None]
    projected = centred @ axes.T
    if recipe.sif:
        inverse_rank = 1.0 / np.arange(2, len(keep) + 2)
        projected *= (recipe.sif / (recipe.sif + inverse_rank / inverse_rank.sum()))[:, None]
    table = np.zeros((len(vocabulary), recipe.dimension), dtype=np.float32)
    table[keep] = projected
    return table


def _token_states(session: Any, vocabulary: Sequence[str], keep: list[int]) -> np.ndarray:
    cls, sep = vocabulary.index("[CLS]"), vocabulary.index("[SEP]")
    ids = np.asarray(keep, dtype=np.int64)
    inputs = np.stack([np.full_like(ids, sep), ids, np.full_like(ids, cls)], axis=1)
    mask = np.ones_like(inputs)
    out = [session.run(["embedding"], {"input_ids": inputs[s : s + _BATCH], "attention_mask": mask[s : s + _BATCH]})[0]
           for s in range(0, len(inputs), _BATCH)]
    return np.concatenate(out).astype(np.float64)


def _vocabulary(tokenizer: Any) -> list[str]:
    """Tokens by id."""
    vocab: dict[str, int] = tokenizer.get_vocab(with_added_tokens=True)
    tokens = [""] * (max(vocab.values()) + 1)
    for token, index in vocab.items():
        tokens[index] = token
    return tokens


def _checked(table: np.ndarray, recipe: Recipe) -> np.ndarray:
    if table.ndim != 2 or table.shape[1] != recipe.dimension or table.dtype != np.float32:
        raise ValueError(f"a table of shape {table.shape} {table.dtype}, not (n, {recipe.dimension}) float32")
    return table


def _save(path: Path, table: np.ndarray) -> None:
    """Write the table at `path` atomically (a half-written file never carries its name)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".building-", suffix=".npy", delete=False) as handle:
            np.save(handle, table)
        os.replace(handle.name, path)
    except OSError as exc:
        raise EmbedderError(
            f"cannot write the static table into {path.parent} ({exc}); set local.cache_dir to a writable directory"
        ) from exc
