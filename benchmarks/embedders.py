"""The offline embedder's runtimes side by side: throughput, cold start, RSS and agreement.

Each candidate runs in a fresh child process (so its imports, load time and memory are its own)
over the same real code chunks (the first --chunks AST chunks of the stdlib, sai's chunker):

- cold start: seconds from the child's start until the first query vector exists (imports,
  model load, ONNX build excluded: the cache is warmed beforehand), and that query's ms;
- throughput: chunks/s embedding the whole list, best of --rounds passes (after one warm-up);
- RSS: the child's resident set after that (MB) and its peak;
- agreement with sentence-transformers (today's runtime): min and mean cosine per chunk, and
  the mean overlap of each chunk's 10 nearest chunks (a retrieval-level check).

Candidates: `st` (sentence-transformers on torch, today's), `ort-fp32` and `ort-int8` (SAI's
local embedder: the graph built from the safetensors weights, ONNX Runtime), `numpy` (the same
forward pass in numpy), and thread / batch variants of `ort-fp32`. Children run in the order
given, then again in reverse (--rounds-order), so drift on a shared machine hits all alike;
the table reports each one's ratio to `st`.

    .venv/bin/python benchmarks/embedders.py [--chunks 512] [--candidates st,ort-fp32,...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

STARTED = time.perf_counter()
CANDIDATES = ("st", "ort-fp32", "ort-int8", "numpy", "ort-fp32-t1", "ort-fp32-b8", "ort-fp32-b128")
QUERY = "load the configuration file and reject unknown keys"


# -- the children --------------------------------------------------------------------------------

def make_candidate(name: str, cache: Path):
    """An object with embed_documents / embed_query for the candidate `name`."""
    if name == "st":
        return SentenceTransformersRuntime()
    if name == "numpy":
        return NumpyRuntime()
    from sai.embedders.local import INT8_MODEL_NAME, LocalEmbedder

    parts = name.split("-")
    model = INT8_MODEL_NAME if parts[1] == "int8" else "all-MiniLM-L6-v2"
    options: dict = {"model": model, "cache_dir": cache}
    for part in parts[2:]:
        if part.startswith("t"):
            options["threads"] = int(part[1:])
        elif part.startswith("b"):
            options["batch_size"] = int(part[1:])
    return LocalEmbedder(**options)


class SentenceTransformersRuntime:
    """What SAI ran before: sentence-transformers on torch, batch 32, its own length sort."""

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        from sai.embedders.minilm import model_dir

        self.model = SentenceTransformer(str(model_dir()), device="cpu")

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


class NumpyRuntime:
    """The same forward pass in numpy (BLAS matmuls), batches sorted by length like SAI's."""

    def __init__(self) -> None:
        from sai.embedders.minilm import load_tokenizer, model_dir, read_shape, read_weights

        path = model_dir()
        self.shape = read_shape(path)
        self.w = {k: v.astype(np.float32) for k, v in read_weights(path).items() if v.dtype != np.int64}
        self.tokenizer = load_tokenizer(path, self.shape.max_seq_length)

    def embed_documents(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch([t.strip() for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), self.shape.hidden), dtype=np.float32)
        for start in range(0, len(order), 32):
            batch = order[start : start + 32]
            out[batch] = self.forward([encodings[i].ids for i in batch])
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def forward(self, ids_list: list[list[int]]) -> np.ndarray:
        w, s = self.w, self.shape
        longest = max(len(i) for i in ids_list)
        ids = np.zeros((len(ids_list), longest), dtype=np.int64)
        mask = np.zeros(ids.shape, dtype=np.float32)
        for row, item in enumerate(ids_list):
            ids[row, : len(item)], mask[row, : len(item)] = item, 1
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:longest]
        x = _ln(x + w["embeddings.token_type_embeddings.weight"][0], w, "embeddings.LayerNorm", s.eps)
        additive = ((1.0 - mask) * -10000.0)[:, None, None, :]
        b, t, d, h = x.shape[0], longest, s.hidden, s.heads
        for layer in range(s.layers):
            p = f"encoder.layer.{layer}."
            def heads(name: str, x=x, p=p) -> np.ndarray:
                return _lin(x, w, p + f"attention.self.{name}").reshape(b, t, h, d // h).transpose(0, 2, 1, 3)
            q, k, v = heads("query"), heads("key"), heads("value")
            scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(d // h) + additive
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            context = (scores / scores.sum(-1, keepdims=True)) @ v
            context = context.transpose(0, 2, 1, 3).reshape(b, t, d)
            x = _ln(_lin(context, w, p + "attention.output.dense") + x, w, p + "attention.output.LayerNorm", s.eps)
            inner = _lin(x, w, p + "intermediate.dense")
            inner = 0.5 * inner * (1.0 + _erf(inner / np.float32(np.sqrt(2.0))))
            x = _ln(_lin(inner, w, p + "output.dense") + x, w, p + "output.LayerNorm", s.eps)
        return (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)


def _lin(x: np.ndarray, w: dict, prefix: str) -> np.ndarray:
    return x @ w[prefix + ".weight"].T + w[prefix + ".bias"]


def _ln(x: np.ndarray, w: dict, prefix: str, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w[prefix + ".weight"] + w[prefix + ".bias"]


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to 1.2e-7 (Numerical Recipes' erfc Chebyshev fit): numpy has no erf of its own."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    erfc = t * np.exp(poly)
    return np.where(x >= 0, 1.0 - erfc, erfc - 1.0).astype(np.float32)


def rss_mb(field: str = "VmRSS") -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(name: str, texts_file: Path, out: Path, cache: Path, rounds: int) -> None:
    texts = json.loads(texts_file.read_text(encoding="utf-8"))
    embedder = make_candidate(name, cache)
    start = time.perf_counter()
    embedder.embed_query(QUERY)
    first_query_ms = 1000 * (time.perf_counter() - start)
    cold = time.perf_counter() - STARTED
    queries = []
    for _ in range(5):
        start = time.perf_counter()
        embedder.embed_query(QUERY)
        queries.append(1000 * (time.perf_counter() - start))
    embedder.embed_documents(texts[:64])  # warm-up
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        vectors = embedder.embed_documents(texts)
        best = min(best, time.perf_counter() - start)
    np.save(out, np.asarray(vectors, dtype=np.float32))
    print(json.dumps({
        "name": name, "cold_s": cold, "first_query_ms": first_query_ms, "query_ms": float(np.median(queries)),
        "chunks_per_s": len(texts) / best, "rss_mb": rss_mb(), "peak_rss_mb": rss_mb("VmHWM"),
    }), flush=True)


# -- the parent -----------------------------------------------------------------------------------

def run_child(name: str, work: Path, cache: Path, rounds: int) -> dict:
    out = work / f"{name}.npy"
    done = subprocess.run(
        [sys.executable, __file__, "--child", name, "--work", str(work), "--cache", str(cache),
         "--rounds", str(rounds)], capture_output=True, text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"{name} failed: {done.stderr.strip()[-2000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    result["vectors"] = np.load(out)
    return result


def neighbour_overlap(a: np.ndarray, b: np.ndarray, k: int = 10) -> float:
    """Mean share of each chunk's k nearest chunks under `a` that are also nearest under `b`."""
    def nearest(v: np.ndarray) -> np.ndarray:
        sims = v @ v.T
        np.fill_diagonal(sims, -np.inf)
        return np.argsort(-sims, axis=1)[:, :k]
    na, nb = nearest(a), nearest(b)
    return float(np.mean([len(set(x) & set(y)) / k for x, y in zip(na, nb, strict=True)]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=512)
    parser.add_argument("--candidates", default=",".join(CANDIDATES))
    parser.add_argument("--rounds", type=int, default=2, help="timed passes per child (best kept)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cache", type=Path, help="where the ONNX files are built (default: a temporary dir)")
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.work / "texts.json", args.work / f"{args.child}.npy", args.cache, args.rounds)
        return 0
    sys.path.insert(0, str(Path(__file__).parent))
    from _common import stdlib_chunks

    names = args.candidates.split(",")
    with tempfile.TemporaryDirectory(prefix="sai-embedders-") as tmp:
        work = Path(tmp)
        cache = args.cache or work / "cache"
        texts = [c.text for c in stdlib_chunks(args.chunks)]
        (work / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
        print(f"{len(texts)} stdlib chunks, mean {np.mean([len(t) for t in texts]):.0f} chars; "
              f"load before {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        from sai.embedders.local import INT8_MODEL_NAME, LocalEmbedder

        for model in ("all-MiniLM-L6-v2", INT8_MODEL_NAME):  # build the ONNX files outside the timing
            start = time.perf_counter()
            LocalEmbedder(model=model, cache_dir=cache).load()
            print(f"  first use of {model}: {time.perf_counter() - start:.1f} s (ONNX file built)")
        results: dict[str, list[dict]] = {n: [] for n in names}
        for name in [*names, *reversed(names)]:
            results[name].append(run_child(name, work, cache, args.rounds))
        print_table(results, names)
    print(f"load after {os.getloadavg()[0]:.1f}")
    return 0


def print_table(results: dict[str, list[dict]], names: list[str]) -> None:
    def best(name: str, key: str, pick=max) -> float:
        return pick(r[key] for r in results[name])
    base = results.get("st")
    reference = base[0]["vectors"] if base else None
    print(f"{'candidate':<14} {'chunks/s':>9} {'x st':>6} {'cold s':>7} {'query ms':>9} {'RSS MB':>7} "
          f"{'peak MB':>8} {'cos min':>9} {'cos mean':>9} {'top10 ovl':>9}")
    for name in names:
        rate = best(name, "chunks_per_s")
        ratio = rate / best("st", "chunks_per_s") if base else float("nan")
        vectors = results[name][0]["vectors"]
        if reference is not None:
            cos = (vectors * reference).sum(1)
            agree = f"{cos.min():9.6f} {cos.mean():9.6f} {neighbour_overlap(vectors, reference):9.3f}"
        else:
            agree = ""
        print(f"{name:<14} {rate:9.1f} {ratio:6.2f} {best(name, 'cold_s', min):7.2f} "
              f"{best(name, 'query_ms', min):9.1f} {best(name, 'rss_mb', min):7.0f} "
              f"{best(name, 'peak_rss_mb', min):8.0f} {agree}")


if __name__ == "__main__":
    sys.exit(main())
