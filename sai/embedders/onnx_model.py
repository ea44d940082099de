"""The ONNX file of the bundled MiniLM: built once on this machine from the installed weights,
kept in a cache directory, rebuilt when missing or unreadable; and its ONNX Runtime session.

Nothing is downloaded: the graph is written with the `onnx` helper API from model.safetensors
(sai/embedders/onnx_graph.py), and the int8 variant is ONNX Runtime's dynamic quantisation of it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

from sai.embedders.install import missing
from sai.embedders.minilm import MODEL_NAME, BertShape, read_weights
from sai.errors import EmbedderError

Precision = Literal["fp32", "int8"]
# Part of the file name: a change to the graph builder must not reuse a file an older one wrote.
GRAPH_VERSION = 1
_log = logging.getLogger(__name__)


def model_file(cache_dir: Path, model_path: Path, precision: Precision) -> Path:
    """Where the ONNX file of this installed model lives: its name carries a digest of the weights
    file's header (every tensor's name, shape and offset) and size, so a different model gets a
    file of its own."""
    weights = model_path / "model.safetensors"
    digest = hashlib.sha256()
    with weights.open("rb") as handle:
        digest.update(handle.read(1 << 16))
    digest.update(str(weights.stat().st_size).encode())
    return cache_dir / f"{MODEL_NAME}-{precision}-v{GRAPH_VERSION}-{digest.hexdigest()[:12]}.onnx"


def open_session(
    cache_dir: Path, model_path: Path, shape: BertShape, *, precision: Precision, threads: int
) -> Any:
    """An ONNX Runtime session on the cached file, building (or rebuilding) it first if needed."""
    ort = _import_runtime()
    path = model_file(cache_dir, model_path, precision)
    if path.is_file():
        try:
            return _session(ort, path, threads)
        except _runtime_errors(ort) as exc:
            _log.warning("the cached model %s is unreadable (%s); building it again", path, exc)
    build(path, model_path, shape, precision=precision)
    try:
        return _session(ort, path, threads)
    except _runtime_errors(ort) as exc:
        raise EmbedderError(f"ONNX Runtime cannot load {path} ({exc}); delete it and retry") from exc


def build(path: Path, model_path: Path, shape: BertShape, *, precision: Precision) -> None:
    """Write the ONNX file at `path` (atomically: a half-written file never carries its name)."""
    try:
        import onnx

        from sai.embedders.onnx_graph import build_model
    except ImportError as exc:
        raise missing("the onnx package (to build its model file)") from exc
    _log.warning("building the %s %s model for ONNX Runtime in %s (once)", MODEL_NAME, precision, path.parent)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=".building-") as work:
            # The weights go in a file beside the graph: ONNX Runtime then holds one copy of them
            # rather than the protobuf's and its own (RSS 108 MB rather than 168 MB after loading
            # the fp32 model). Its copy is private memory: servers do not share it.
            graph = Path(work) / path.name
            onnx.save(build_model(read_weights(model_path), shape), str(graph), save_as_external_data=True,
                      all_tensors_to_one_file=True, location=path.name + ".data", size_threshold=1024)
            if precision == "int8":  # its weights are a quarter the size: kept inside the graph
                _quantize(Path(work) / "int8.onnx", graph)
                graph = Path(work) / "int8.onnx"
            else:
                os.replace(Path(work) / (path.name + ".data"), path.with_name(path.name + ".data"))
            os.replace(graph, path)  # last: the graph's name appears only once its weights are in place
    except OSError as exc:
        raise EmbedderError(
            f"cannot write the local model into {path.parent} ({exc}); set local.cache_dir to a writable directory"
        ) from exc


def _quantize(int8: Path, fp32: Path) -> None:
    from onnx import TensorProto
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Per-channel scales keep vectors within cosine 0.99 of fp32 (per-tensor: 0.95, benchmarks/
    # embedders.py). Shape inference does not know the contrib operators' outputs: all are float.
    # The quantiser advises pre-processing on the root logger, which would reach the user.
    root = logging.getLogger()
    root.addFilter(_drop_advice)
    try:
        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True,
                         extra_options={"DefaultTensorType": TensorProto.FLOAT})
    finally:
        root.removeFilter(_drop_advice)


def _drop_advice(record: logging.LogRecord) -> bool:
    return "pre-processing before quantization" not in record.getMessage()


def _session(ort: Any, path: Path, threads: int) -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: the optimiser's notes are not the user's business
    # Without the arena, a batch's buffers go back when it is done: a process that embedded 96
    # chunks holds 204-229 MB rather than 410 MB, at the same throughput (docs/embedders.md).
    options.enable_cpu_mem_arena = False
    # Threads that spin while waiting steal the core a busy machine's other work needs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _runtime_errors(ort: Any) -> tuple[type[BaseException], ...]:
    state = ort.capi.onnxruntime_pybind11_state
    return (state.InvalidProtobuf, state.Fail, state.NoSuchFile, state.InvalidGraph, state.RuntimeException)


def _import_runtime() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:
        raise missing("ONNX Runtime") from exc
    return onnxruntime
