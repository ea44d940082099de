"""The MiniLM forward pass written as an ONNX graph from the safetensors weights, no torch needed.

Inputs `input_ids` and `attention_mask` (int64, batch x tokens); output `embedding` (batch x
hidden): the mean of the last layer over the unmasked tokens, as sentence-transformers' Pooling
computes it (normalisation happens outside). Each layer is ONNX Runtime's fused BERT operators, as
its transformer optimiser would leave an exported model; the vectors agree with
sentence-transformers' to 1e-6 (tests/embedders/test_embedders.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sai.embedders.minilm import BertShape

OPSET = 17
MS_DOMAIN = "com.microsoft"  # ONNX Runtime's contrib operators
Weights = dict[str, np.ndarray]


class _Graph:
    """Collects nodes and initialisers; each helper returns its output's name."""

    def __init__(self, helper: Any, numpy_helper: Any) -> None:
        self.helper, self.numpy_helper = helper, numpy_helper
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(self.numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, *inputs: str, domain: str = "", **attrs: Any) -> str:
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(self.helper.make_node(op_type, list(inputs), [out], domain=domain, **attrs))
        return out

    def layer_norm(self, x: str, weights: Weights, prefix: str, eps: float) -> str:
        scale = self.const(f"{prefix}.weight", weights[f"{prefix}.weight"])
        bias = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=eps)


def build_model(weights: Weights, shape: BertShape) -> Any:
    """The ModelProto of the whole encoder plus mean pooling."""
    from onnx import TensorProto, helper, numpy_helper

    g = _Graph(helper, numpy_helper)
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    mask_index = g.op("Cast", "attention_mask", to=TensorProto.INT32)  # Attention's 2-D 0/1 mask
    hidden = _embeddings(g, weights, shape)
    for layer in range(shape.layers):
        hidden = _layer(g, weights, shape, hidden, mask_index, f"encoder.layer.{layer}")
    g.const("mask_last", np.array([2], dtype=np.int64))
    g.const("axis_tokens", np.array([1], dtype=np.int64))
    g.const("tiny", np.array(1e-9, dtype=np.float32))
    mask3 = g.op("Unsqueeze", mask, "mask_last")
    summed = g.op("ReduceSum", g.op("Mul", hidden, mask3), "axis_tokens", keepdims=0)
    counts = g.op("Max", g.op("ReduceSum", mask3, "axis_tokens", keepdims=0), "tiny")
    g.nodes.append(helper.make_node("Div", [summed, counts], ["embedding"]))
    graph = helper.make_graph(
        g.nodes, "minilm",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
         for name in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", shape.hidden])],
        g.initializers,
    )
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid(MS_DOMAIN, 1)]
    return helper.make_model(graph, opset_imports=opsets, producer_name="sai")


def _embeddings(g: _Graph, weights: Weights, shape: BertShape) -> str:
    words = g.op("Gather", g.const("word_embeddings", weights["embeddings.word_embeddings.weight"]), "input_ids")
    # Positions 0..tokens-1; token type 0 throughout (one segment), folded into the positions.
    positions = weights["embeddings.position_embeddings.weight"] + weights["embeddings.token_type_embeddings.weight"][0]
    g.const("position_table", positions.astype(np.float32))
    g.const("zero_1d", np.array([0], dtype=np.int64))
    tokens = g.op("Shape", "input_ids", start=1, end=2)  # 1-D, as Slice wants its bounds
    positions_used = g.op("Slice", "position_table", "zero_1d", tokens, "zero_1d")
    summed = g.op("Add", words, positions_used)
    return g.layer_norm(summed, weights, "embeddings.LayerNorm", shape.eps)


def _layer(g: _Graph, weights: Weights, shape: BertShape, x: str, mask: str, prefix: str) -> str:
    """One encoder layer from ONNX Runtime's fused BERT operators (com.microsoft): Attention
    (q, k, v in one matrix), SkipLayerNormalization (residual + LayerNorm) and BiasGelu."""
    names = ("query", "key", "value")
    qkv_w = np.concatenate([weights[f"{prefix}.attention.self.{n}.weight"].T for n in names], axis=1)
    qkv_b = np.concatenate([weights[f"{prefix}.attention.self.{n}.bias"] for n in names])
    attended = g.op("Attention", x, g.const(f"{prefix}.qkv_w", qkv_w), g.const(f"{prefix}.qkv_b", qkv_b), mask,
                    domain=MS_DOMAIN, num_heads=shape.heads)
    projected = g.op("MatMul", attended, _weight_t(g, weights, f"{prefix}.attention.output.dense"))
    x = _skip_norm(g, weights, shape, projected, x, f"{prefix}.attention.output")
    inner = g.op("MatMul", x, _weight_t(g, weights, f"{prefix}.intermediate.dense"))
    bias = g.const(f"{prefix}.intermediate.dense.bias", weights[f"{prefix}.intermediate.dense.bias"])
    inner = g.op("BiasGelu", inner, bias, domain=MS_DOMAIN)  # the exact (erf) gelu BERT uses
    out = g.op("MatMul", inner, _weight_t(g, weights, f"{prefix}.output.dense"))
    return _skip_norm(g, weights, shape, out, x, f"{prefix}.output")


def _weight_t(g: _Graph, weights: Weights, prefix: str) -> str:
    return g.const(f"{prefix}.weight_t", weights[f"{prefix}.weight"].T)


def _skip_norm(g: _Graph, weights: Weights, shape: BertShape, out: str, residual: str, prefix: str) -> str:
    """LayerNorm(out + dense bias + residual), the bias of the dense layer before it folded in."""
    return g.op("SkipLayerNormalization", out, residual,
                g.const(f"{prefix}.LayerNorm.weight", weights[f"{prefix}.LayerNorm.weight"]),
                g.const(f"{prefix}.LayerNorm.bias", weights[f"{prefix}.LayerNorm.bias"]),
                g.const(f"{prefix}.dense.bias", weights[f"{prefix}.dense.bias"]),
                domain=MS_DOMAIN, epsilon=shape.eps)
