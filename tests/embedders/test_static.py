"""The static embedder (`model: minilm-static`): its distilled table, its vectors, its place as a
model of its own through the CLI.

The full table distils all 30,522 tokens (tens of seconds on two cores, docs/embedders.md); these
tests distil the commonest tokens and those of the texts they embed through the same code path,
and place that table where the default recipe's would be, so the embedder and the CLI load it as
they would the real one.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from fixtures_tree import TREE, many_functions, write_tree

from sai.cli.commands import main
from sai.config import load_config
from sai.embedders import make_embedder
from sai.embedders.local import LocalEmbedder
from sai.embedders.minilm import load_tokenizer, model_dir, read_shape
from sai.embedders.onnx_model import open_session
from sai.embedders.static import StaticEmbedder
from sai.embedders.static_table import Recipe, _vocabulary, build, distill, table_file
from sai.errors import EmbedderError
from sai.indexing.indexer import index
from sai.project import Project

COMMONEST = 2500  # ids below: specials, [unused…], single characters, then the ~500 commonest words
TEXTS = [
    *TREE.values(), "sum the prices of the items", "def total_price(items):\n    return sum(i.price for i in items)",
    "def read_config(path):\n    with open(path) as f:\n        return yaml.safe_load(f)",
    "compute the total price", "get user name getusername", "import os class Stack def push self x f pass",
]


@pytest.fixture(scope="session")
def xdg_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """$XDG_CACHE_HOME whose sai/ holds the fp32 ONNX file and a default-recipe table of SLICE tokens."""
    pytest.importorskip("onnxruntime", reason="the 'local' extra is not installed")
    home = tmp_path_factory.mktemp("xdg")
    path = model_dir()
    shape = read_shape(path)
    tokenizer = load_tokenizer(path, shape.max_seq_length)
    used = {i for e in tokenizer.encode_batch([t.lower() for t in TEXTS]) for i in e.ids}
    build(home / "sai", path, shape, Recipe(), threads=2, ids=sorted(used | set(range(COMMONEST))))
    return home


@pytest.fixture(scope="session")
def static(xdg_cache: Path) -> StaticEmbedder:
    return StaticEmbedder(cache_dir=xdg_cache / "sai")


def test_vectors_are_unit_length_float32_of_the_tables_dimension(static):
    vectors = static.embed_documents(["def total_price(items):\n    return sum(i.price for i in items)", "x = 1"])
    assert vectors.shape == (2, 256) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert static.embed_query("total price").shape == (256,)
    assert static.embed_documents([]).shape == (0, 256)


def test_the_same_text_gives_the_same_vector_alone_or_in_a_batch(static):
    texts = ["import os\n" * 3000, "def f(): pass", "", "class Stack:\n    def push(self, x): ..."]
    together = static.embed_documents(texts)
    alone = np.stack([static.embed_documents([t])[0] for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-6)
    assert not together[2].any()  # no token: a zero vector, which matches nothing
    np.testing.assert_array_equal(static.embed_query("def f(): pass"), together[1])


def test_the_query_is_closest_to_the_matching_function(static):
    match = "def total_price(items):\n    return sum(i.price for i in items)"
    other = "def read_config(path):\n    with open(path) as f:\n        return yaml.safe_load(f)"
    documents = static.embed_documents([match, other])
    query = static.embed_query("compute the total price")
    assert float(documents[0] @ query) > float(documents[1] @ query) + 0.1


def test_camel_case_identifiers_embed_as_their_words(xdg_cache, static):
    words = static.embed_query("get user name")
    assert float(static.embed_query("getUserName") @ words) > 0.99
    unsplit = StaticEmbedder(cache_dir=xdg_cache / "sai", identifiers="whole")
    assert float(unsplit.embed_query("getUserName") @ words) < 0.9


def test_the_distillation_is_deterministic_and_zeroes_the_special_tokens(xdg_cache):
    path = model_dir()
    shape = read_shape(path)
    session = open_session(xdg_cache / "sai", path, shape, precision="fp32", threads=2)
    vocabulary = _vocabulary(load_tokenizer(path, shape.max_seq_length))
    ids = [*range(0, 110), *range(1990, 2300)]  # specials and [unused…], then 310 tokens
    first = distill(session, vocabulary, Recipe(64, 1e-4), ids=ids)
    second = distill(session, vocabulary, Recipe(64, 1e-4), ids=ids)
    np.testing.assert_array_equal(first, second)
    assert first.shape == (len(vocabulary), 64)
    for special in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused7]"):
        assert not first[vocabulary.index(special)].any()
    assert not first[2300:].any() and not first[110:1990].any() and first[1990:2300].all(axis=1).all()
    flat = distill(session, vocabulary, Recipe(64, None), ids=ids)
    # SIF weighs a frequent (low-rank) token down, a rare one less so
    frequent, rare = vocabulary.index("the"), 2299
    ratio = np.linalg.norm(first, axis=1) / np.maximum(np.linalg.norm(flat, axis=1), 1e-12)
    assert ratio[frequent] < ratio[rare]


def test_the_table_file_names_the_recipe_and_the_installed_weights(tmp_path):
    path = model_dir()
    names = {table_file(tmp_path, path, r).name for r in (Recipe(), Recipe(384), Recipe(256, None))}
    assert len(names) == 3
    assert all(n.startswith("minilm-static-") and n.endswith(".npy") for n in names)
    digest = table_file(tmp_path, path, Recipe()).stem.rsplit("-", 1)[-1]
    assert len(digest) == 12


def test_the_config_names_the_static_model_in_one_spelling(tmp_path):
    config = load_config(cwd=tmp_path, env={"XDG_CACHE_HOME": str(tmp_path)},
                         flags={"embedder": "local", "model": "MiniLM-Static"})
    assert config.model == "minilm-static"
    embedder = make_embedder(config)
    assert isinstance(embedder, StaticEmbedder) and embedder.model == "minilm-static"
    assert embedder.cache_dir == tmp_path / "sai"
    with pytest.raises(EmbedderError, match="minilm-static"):
        LocalEmbedder(model="minilm-statik")


def test_an_index_built_with_the_static_model_is_searched_with_it_through_the_cli(
    tmp_path: Path, xdg_cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    root = write_tree(tmp_path / "p")
    (root / "sai-cfg.yml").write_text("embedder: local\nmodel: minilm-static\n", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg_cache))
    monkeypatch.chdir(root)
    assert main(["--silent"]) == 0
    capsys.readouterr()
    assert main(["--json", "--query-only", "--query", "sum the prices of the items", "--mode", "semantic"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits[0]["path"] == "billing.py" and hits[0]["symbol"] == "total_price"
    assert main(["--json", "status"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["model"], status["vector_dim"], status["pending_vectors"]) == ("minilm-static", 256, 0)
    # another model asked for is refused in one line, as for any model change; --recreate switches
    assert main(["--model", "all-MiniLM-L6-v2-int8", "--query-only", "--query", "x"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "built with model minilm-static" in err


@pytest.mark.parametrize("files", [10, 200])  # prepared in this process; by the pool of worker processes
def test_a_first_build_with_the_static_model_stores_every_chunk_with_its_vector_before_the_first_answer(
    tmp_path: Path, xdg_cache: Path, monkeypatch: pytest.MonkeyPatch, static: StaticEmbedder, files: int,
) -> None:
    """The static table embeds in the indexer's CPU stage (`with_chunks`): no chunk waits for a
    vector when the chunks are searchable, and each holds the vector the model gives its text."""
    root = write_tree(tmp_path / "p", many_functions(2 * files, per_file=2))
    (root / "sai-cfg.yml").write_text("embedder: local\nmodel: minilm-static\n", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg_cache))  # the worker processes inherit it
    project = Project(load_config(flags={}, env={"XDG_CACHE_HOME": str(xdg_cache)}, cwd=root))
    waiting: list[int] = []
    try:
        report = index(project, on_searchable=waiting.append)
        with project.store.read() as reader:
            rows, vectors, _ = reader.all_chunks()
            texts = reader.texts_by_id([row.id for row in rows])
    finally:
        project.close()
    assert waiting == [0] and report.chunks == len(rows) >= 2 * files
    np.testing.assert_allclose(vectors, static.embed_documents([texts[row.id] for row in rows]), atol=1e-6)
