"""Configuration: defaults, file, environment and flags, validation, and the shipped template."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest

from sai.cfg_template import TEMPLATE
from sai.cli.commands import main
from sai.config import Config, load_config, read_config_file
from sai.errors import ConfigError
from sai.settings import ALWAYS_PRUNED, SCHEMA, SIMILARITY_DEFAULTS
from sai.source.languages import DEFAULT_EXTS

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own OLLAMA_HOST / SAI_* settings must not leak into these tests."""
    for var in ("OLLAMA_HOST", "SAI_CONFIG", "SAI_EMBEDDER", "SAI_MODEL", "SAI_COLLECTION",
                "SAI_ROOT", "SAI_EXT", "SAI_CHUNKER", "SAI_DB_PATH"):
        monkeypatch.delenv(var, raising=False)


def write_cfg(where: Path, text: str, name: str = "sai-cfg.yml") -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / name
    path.write_text(text, encoding="utf-8")
    return path


def load(where: Path, *, env: dict[str, str] | None = None, **flags: object) -> Config:
    return load_config(flags=flags, env=env or {}, cwd=where)


def config_error(where: Path, text: str, **flags: object) -> str:
    path = write_cfg(where, text)
    with pytest.raises(ConfigError) as info:
        load(where, **flags)
    message = str(info.value)
    assert "\n" not in message
    assert str(path.resolve()) in message
    return message


# --- defaults and discovery -------------------------------------------------------------------


def test_without_a_config_file_every_setting_is_the_default(tmp_path: Path) -> None:
    config = load(tmp_path)
    assert config.config_path is None
    assert config.root == tmp_path.resolve()
    assert config.db_path == tmp_path.resolve() / ".index" / "code.duckdb"
    assert (config.backend, config.embedder, config.model) == (
        "duckdb", "ollama", "nomic-embed-text"
    )
    assert (config.collection, config.chunker, config.prefix_style) == (
        "source_code", "ast", "nomic"
    )
    assert config.walk.exts == DEFAULT_EXTS
    assert config.max_chunk_chars == 2000 and config.walk.max_bytes == 1048576
    assert config.walk.respect_gitignore and config.walk.skip_generated and not config.strip_comments
    assert config.honor_noindex_marker and config.honor_noduplicate_marker
    assert config.ollama.url == "http://localhost:11434"
    assert (config.ollama.timeout_s, config.ollama.batch_size) == (60.0, 32)
    assert (config.similarity.find_similar_min_score, config.similarity.duplicate_min_score) == (0.65, 0.80)
    assert (config.similarity.duplicate_min_cluster_size, config.similarity.top_k) == (2, 10)
    assert config.vector_dim is None
    assert config.walk.pruned_dirs == tuple(sorted(ALWAYS_PRUNED))


def test_cli_notes_on_stderr_that_built_in_defaults_are_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["status"]) == 0
    out, err = capsys.readouterr()
    root = tmp_path.resolve()
    assert err == f"note: no sai-cfg.yml found; using built-in defaults (root {root})\n"
    assert "collection: source_code\n" in out
    assert main(["status", "--silent"]) == 0
    assert capsys.readouterr().err == ""


def test_config_file_is_found_in_cwd_as_yml_or_yaml(tmp_path: Path) -> None:
    write_cfg(tmp_path / "a", "collection: from_yml\n")
    write_cfg(tmp_path / "b", "collection: from_yaml\n", name="sai-cfg.yaml")
    assert load(tmp_path / "a").collection == "from_yml"
    assert load(tmp_path / "b").collection == "from_yaml"
    assert load(tmp_path / "b").config_path == (tmp_path / "b" / "sai-cfg.yaml").resolve()


def test_sai_config_env_names_the_file_and_config_flag_beats_it(tmp_path: Path) -> None:
    write_cfg(tmp_path / "env", "collection: via_env\n")
    write_cfg(tmp_path / "flag", "collection: via_flag\n")
    env = {"SAI_CONFIG": "env/sai-cfg.yml"}
    assert load_config(env=env, cwd=tmp_path).collection == "via_env"
    both = load_config(config_file="flag/sai-cfg.yml", env=env, cwd=tmp_path)
    assert both.collection == "via_flag"


def test_missing_explicit_config_file_is_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"config file nope\.yml not found.*sai init"):
        load_config(config_file="nope.yml", env={}, cwd=tmp_path)


def test_empty_config_file_means_defaults(tmp_path: Path) -> None:
    path = write_cfg(tmp_path, "# nothing set\n")
    config = load(tmp_path)
    assert config.config_path == path.resolve() and config.walk.own_config == "sai-cfg.yml"
    path.unlink()
    assert _without_file(config) == load(tmp_path)


def _without_file(config: Config) -> Config:
    """The config as it would be had no file been found: no path, no own file the walk skips."""
    return dataclasses.replace(config, config_path=None, walk=dataclasses.replace(config.walk, own_config=None))


# --- precedence --------------------------------------------------------------------------------


def test_precedence_is_flag_then_env_then_file_then_default(tmp_path: Path) -> None:
    assert load(tmp_path).model == "nomic-embed-text"
    write_cfg(tmp_path, "model: file-model\ncollection: file_coll\n")
    assert load(tmp_path).model == "file-model"
    env = {"SAI_MODEL": "env-model"}
    assert load(tmp_path, env=env).model == "env-model"
    assert load(tmp_path, env=env, model="flag-model").model == "flag-model"
    # a None flag (option not given) does not override
    assert load(tmp_path, env=env, model=None).model == "env-model"
    assert load(tmp_path, env=env).collection == "file_coll"


def test_cli_flag_beats_env_beats_file_for_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_cfg(tmp_path, "model: file-model\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SAI_MODEL", "env-model")
    assert main(["status"]) == 0
    assert "model: env-model\n" in capsys.readouterr().out
    assert main(["status", "--model", "flag-model"]) == 0
    assert "model: flag-model\n" in capsys.readouterr().out
    monkeypatch.delenv("SAI_MODEL")
    assert main(["status"]) == 0
    assert "model: file-model\n" in capsys.readouterr().out


def test_ollama_host_env_overrides_the_file_url(tmp_path: Path) -> None:
    write_cfg(tmp_path, "ollama:\n  url: http://file:1\n")
    assert load(tmp_path).ollama.url == "http://file:1"
    assert load(tmp_path, env={"OLLAMA_HOST": "http://env:2"}).ollama.url == "http://env:2"


def test_default_model_follows_the_embedder(tmp_path: Path) -> None:
    assert load(tmp_path, embedder="local").model == "all-MiniLM-L6-v2-int8"
    assert load(tmp_path, env={"SAI_EMBEDDER": "local"}).model == "all-MiniLM-L6-v2-int8"
    assert load(tmp_path).model == "nomic-embed-text"


# --- root, db path, ext --------------------------------------------------------------------------


def test_root_is_resolved_against_the_config_files_directory(tmp_path: Path) -> None:
    (tmp_path / "proj" / "src").mkdir(parents=True)
    write_cfg(tmp_path / "proj" / "conf", "root: ../src\nduckdb:\n  path: db/x.duckdb\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = load_config(config_file="../proj/conf/sai-cfg.yml", env={}, cwd=elsewhere)
    assert config.root == (tmp_path / "proj" / "src").resolve()
    assert config.db_path == (tmp_path / "proj" / "src" / "db" / "x.duckdb").resolve()


def test_root_defaults_to_the_config_files_directory_not_the_cwd(tmp_path: Path) -> None:
    write_cfg(tmp_path / "proj", "collection: c\n")
    config = load_config(config_file="proj/sai-cfg.yml", env={}, cwd=tmp_path)
    assert config.root == (tmp_path / "proj").resolve()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ext: [.py, TS, go]\n", ("py", "ts", "go")),
        ("ext: '.py, .js'\n", ("py", "js")),
        ("ext: py\n", ("py",)),
        ("ext: [py, .py, PY]\n", ("py",)),
    ],
)
def test_ext_accepts_a_list_or_comma_string_ignoring_leading_dots(
    tmp_path: Path, text: str, expected: tuple[str, ...]
) -> None:
    write_cfg(tmp_path, text)
    assert load(tmp_path).walk.exts == expected


def test_ext_from_flag_and_env_are_comma_lists(tmp_path: Path) -> None:
    assert load(tmp_path, ext=".go,rs").walk.exts == ("go", "rs")
    assert load(tmp_path, env={"SAI_EXT": "ts,.tsx"}).walk.exts == ("ts", "tsx")


def test_empty_ext_list_is_an_error(tmp_path: Path) -> None:
    message = config_error(tmp_path, "ext: []\n")
    assert "'ext'" in message and "no extension" in message


def test_missing_root_is_an_error_naming_the_directory(tmp_path: Path) -> None:
    message = config_error(tmp_path, "root: ./nope\n")
    assert str(tmp_path.resolve() / "nope") in message
    assert "not a directory" in message and "`root`" in message


# --- validation ---------------------------------------------------------------------------------


def test_unknown_key_names_file_key_and_allowed_keys(tmp_path: Path) -> None:
    message = config_error(tmp_path, "collection: ok\nmodle: nomic-embed-text\n")
    assert str(tmp_path / "sai-cfg.yml") in message
    assert "unknown key 'modle'" in message
    allowed = message.split("allowed keys: ", 1)[1]
    assert set(allowed.split(", ")) == set(SCHEMA)


def test_unknown_nested_key_is_named_with_its_section(tmp_path: Path) -> None:
    message = config_error(tmp_path, "ollama:\n  host: http://x\n")
    assert "unknown key 'ollama.host'" in message and "ollama.url" in message


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        ("max_chunk_chars: big\n", "max_chunk_chars", "int"),
        ("respect_gitignore: 'yes'\n", "respect_gitignore", "bool"),
        ("similarity:\n  top_k: 2.5\n", "similarity.top_k", "int"),
        ("similarity:\n  top_k: true\n", "similarity.top_k", "int"),
        ("ext: 5\n", "ext", "list or str"),
        ("include: '*.py'\n", "include", "list"),
        ("ollama:\n  timeout_s: soon\n", "ollama.timeout_s", "int or float"),
    ],
)
def test_wrong_type_names_the_key_and_the_expected_type(
    tmp_path: Path, text: str, key: str, expected: str
) -> None:
    assert f"key '{key}' must be {expected}, got" in config_error(tmp_path, text)


def test_nested_key_written_at_top_level_is_unknown(tmp_path: Path) -> None:
    message = config_error(tmp_path, "top_k: 3\n")
    assert "unknown key 'top_k'" in message and "similarity.top_k" in message


def test_section_that_is_not_a_mapping_names_its_keys(tmp_path: Path) -> None:
    message = config_error(tmp_path, "ollama: http://localhost:11434\n")
    assert "key 'ollama' must be a mapping" in message and "ollama.url" in message


def test_empty_values_and_empty_sections_mean_the_default(tmp_path: Path) -> None:
    write_cfg(tmp_path, "collection:\nmax_chunk_chars:\nexclude_dirs:\nsimilarity:\nollama:\n")
    config = load(tmp_path)
    assert config.collection == "source_code" and config.max_chunk_chars == 2000
    assert config.walk.pruned == frozenset(ALWAYS_PRUNED) and config.similarity.top_k == 10


@pytest.mark.parametrize("value", ["0", "-5"])
def test_non_positive_sizes_are_errors(tmp_path: Path, value: str) -> None:
    message = config_error(tmp_path, f"max_chunk_chars: {value}\n")
    assert f"key 'max_chunk_chars' must be a positive number, got {value}" in message
    message = config_error(tmp_path, f"vector_dim: {value}\n")
    assert "key 'vector_dim' must be a positive number" in message
    message = config_error(tmp_path, f"ollama:\n  timeout_s: {value}\n")
    assert "key 'ollama.timeout_s' must be a positive number" in message


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
@pytest.mark.parametrize(
    "key", ["duckdb.lock_timeout_s", "ollama.timeout_s", "similarity.find_similar_min_score",
            "similarity.duplicate_min_score"],
)
def test_float_keys_refuse_nan_and_infinities(tmp_path: Path, key: str, value: str) -> None:
    section, name = key.split(".")
    message = config_error(tmp_path, f"{section}:\n  {name}: {value}\n")
    assert f"key '{key}' must be a finite number, got " in message


def test_a_negative_lock_timeout_is_an_error_and_zero_means_no_wait(tmp_path: Path) -> None:
    message = config_error(tmp_path, "duckdb:\n  lock_timeout_s: -1.5\n")
    assert "key 'duckdb.lock_timeout_s' must be 0 or more seconds, got -1.5" in message
    write_cfg(tmp_path, "duckdb:\n  lock_timeout_s: 0\n")
    assert load(tmp_path).lock_timeout_s == 0.0
    assert "key 'lock_timeout_s' must be 0 or more seconds" in config_error(tmp_path, "lock_timeout_s: -1\n")


@pytest.mark.parametrize(("text", "expected"), [
    ("", 30.0), ("lock_timeout_s: 5\n", 5.0), ("duckdb:\n  lock_timeout_s: 7\n", 7.0),
    ("lock_timeout_s: 5\nduckdb:\n  lock_timeout_s: 7\n", 5.0),
])
def test_lock_timeout_is_backend_neutral_and_its_old_duckdb_name_is_still_read(
    tmp_path: Path, text: str, expected: float,
) -> None:
    write_cfg(tmp_path, text + "backend: qdrant\nqdrant:\n  path: q\n")
    assert load(tmp_path).lock_timeout_s == expected


@pytest.mark.parametrize(
    ("text", "key", "item"),
    [
        ("include: [1, {a: b}]\n", "include", "1"),
        ("exclude: ['*.py', [x]]\n", "exclude", "['x']"),
        ("exclude_dirs: [vendor, null]\n", "exclude_dirs", "None"),
        ("ext: [py, {js: 1}]\n", "ext", "{'js': 1}"),
    ],
)
def test_list_items_must_be_strings(tmp_path: Path, text: str, key: str, item: str) -> None:
    message = config_error(tmp_path, text)
    assert f"key '{key}' must be a list of strings, got the item {item}; quote it" in message


def test_a_minimum_cluster_size_of_one_is_accepted_and_zero_is_not(tmp_path: Path) -> None:
    write_cfg(tmp_path, "similarity:\n  duplicate_min_cluster_size: 1\n")
    assert load(tmp_path).similarity.duplicate_min_cluster_size == 1
    message = config_error(tmp_path, "similarity:\n  duplicate_min_cluster_size: 0\n")
    assert "key 'similarity.duplicate_min_cluster_size' must be at least 1, got 0" in message


def test_a_root_that_is_a_file_a_symlink_loop_or_holds_a_nul_byte_is_an_error(
    tmp_path: Path,
) -> None:
    (tmp_path / "file.py").write_text("x = 1\n")
    (tmp_path / "loop").symlink_to("loop")
    cases = {"file.py": "is not a directory", "loop": "cannot be resolved (",
             "a\x00b": "contains a NUL byte"}
    for root, fragment in cases.items():
        with pytest.raises(ConfigError) as info:
            load(tmp_path, root=root)
        assert fragment in str(info.value) and "fix `root` (command line)" in str(info.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a directory whatever its mode")
def test_an_unreadable_root_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "locked").mkdir(mode=0)
    with pytest.raises(ConfigError, match="locked cannot be read \\(Permission denied\\)"):
        load(tmp_path, root="locked")


def test_an_unlistable_root_is_an_error_even_for_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As root a mode-000 directory stays readable, so the failing listing is simulated here."""
    def refuse(path: object) -> object:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("sai.source.paths.os.scandir", refuse)
    with pytest.raises(ConfigError) as info:
        load(tmp_path)
    assert str(info.value) == (
        f"project root {tmp_path.resolve()} cannot be read (Permission denied); "
        "fix its permissions or `root` (configuration)"
    )


def test_a_config_path_with_a_nul_byte_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot be resolved; pass an existing file"):
        load_config(config_file="a\x00.yml", env={}, cwd=tmp_path)


def test_malformed_yaml_names_the_file_and_line(tmp_path: Path) -> None:
    message = config_error(tmp_path, "root: .\nchunker: lines\n  bad: 1\n")
    assert str(tmp_path / "sai-cfg.yml") in message
    assert "not valid YAML at line 3" in message


def test_top_level_list_is_rejected(tmp_path: Path) -> None:
    message = config_error(tmp_path, "- root\n- ext\n")
    assert "must be a mapping of keys to values" in message


@pytest.mark.parametrize("name", ["my-coll", "1abc", "a b", "x;drop"])
def test_bad_collection_name_is_an_error(tmp_path: Path, name: str) -> None:
    message = config_error(tmp_path, f"collection: '{name}'\n")
    assert f"collection '{name}' must match ^[A-Za-z_][A-Za-z0-9_]*$" in message


def test_bad_collection_name_from_a_flag_is_an_error_too(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"collection 'a-b' must match"):
        load(tmp_path, collection="a-b")


def test_an_error_names_where_the_bad_value_came_from(tmp_path: Path) -> None:
    (tmp_path / "sai-cfg.yml").write_text("chunker: words\n")
    with pytest.raises(ConfigError) as from_file:
        load_config(cwd=tmp_path, env={})
    assert str(from_file.value).startswith(f"{tmp_path / 'sai-cfg.yml'}: unknown chunker 'words'")
    with pytest.raises(ConfigError) as from_env:
        load_config(cwd=tmp_path, env={"SAI_CHUNKER": "tree"})
    assert str(from_env.value).startswith("environment variable SAI_CHUNKER: unknown chunker 'tree'")
    with pytest.raises(ConfigError) as from_flag:
        load_config(cwd=tmp_path, env={}, flags={"chunker": "tree", "collection": "a-b"})
    assert str(from_flag.value).startswith("command line: unknown chunker 'tree'")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("embedder: openai\n", "unknown embedder 'openai'; choose one of: ollama, local"),
        ("backend: mysql\n", "unknown backend 'mysql'; choose one of: duckdb, qdrant"),
        ("chunker: words\n", "unknown chunker 'words'; choose one of: ast, lines"),
        ("prefix_style: bert\n", "unknown prefix_style 'bert'; choose one of: auto, nomic, e5"),
    ],
)
def test_unknown_choice_names_the_choices(tmp_path: Path, text: str, fragment: str) -> None:
    assert fragment in config_error(tmp_path, text)


def test_ollama_model_contradicting_model_is_an_error(tmp_path: Path) -> None:
    message = config_error(tmp_path, "model: nomic-embed-text\nollama:\n  model: all-minilm\n")
    assert "ollama.model 'all-minilm' contradicts model 'nomic-embed-text'" in message


def test_ollama_model_alone_or_agreeing_sets_the_model(tmp_path: Path) -> None:
    write_cfg(tmp_path, "ollama:\n  model: all-minilm\n")
    assert load(tmp_path).model == "all-minilm"
    write_cfg(tmp_path, "model: all-minilm\nollama:\n  model: all-minilm\n")
    assert load(tmp_path).model == "all-minilm"


# --- model-dependent defaults ----------------------------------------------------------------


def test_similarity_defaults_depend_on_the_model(tmp_path: Path) -> None:
    minilm = load(tmp_path, embedder="local")
    row = SIMILARITY_DEFAULTS["all-minilm-l6-v2"]
    assert (minilm.similarity.find_similar_min_score, minilm.similarity.duplicate_min_score) == (
        row["find_similar_min_score"], row["duplicate_min_score"])
    assert minilm.similarity.duplicate_min_score < 0.80  # MiniLM's scale is lower than nomic's
    assert (minilm.similarity.duplicate_semantic_min_score, minilm.similarity.duplicate_cosine_min_score) == (
        row["duplicate_semantic_min_score"], row["duplicate_cosine_min_score"])
    nomic = load(tmp_path)
    assert (nomic.similarity.find_similar_min_score, nomic.similarity.duplicate_min_score) == (0.65, 0.80)
    assert nomic.similarity.duplicate_semantic_min_score == 0.85


def test_explicit_similarity_values_beat_the_model_defaults(tmp_path: Path) -> None:
    write_cfg(
        tmp_path,
        "embedder: local\nsimilarity:\n  find_similar_min_score: 0.5\n  duplicate_min_score: 1\n"
        "  duplicate_min_cluster_size: 3\n  top_k: 4\n",
    )
    config = load(tmp_path)
    assert (config.similarity.find_similar_min_score, config.similarity.duplicate_min_score) == (0.5, 1.0)
    assert (config.similarity.duplicate_min_cluster_size, config.similarity.top_k) == (3, 4)


@pytest.mark.parametrize(
    ("model", "style"),
    [
        ("nomic-embed-text", "nomic"),
        ("nomic-embed-text:v1.5", "nomic"),
        ("intfloat/multilingual-e5-large", "e5"),
        ("qwen3-embedding:0.6b", "qwen"),
        ("all-MiniLM-L6-v2", "none"),
        ("mxbai-embed-large", "none"),
    ],
)
def test_prefix_style_auto_follows_the_model_name(tmp_path: Path, model: str, style: str) -> None:
    assert load(tmp_path, model=model).prefix_style == style


def test_explicit_prefix_style_wins_over_auto(tmp_path: Path) -> None:
    write_cfg(tmp_path, "prefix_style: e5\n")
    assert load(tmp_path).prefix_style == "e5"
    write_cfg(tmp_path, "prefix_style: none\n")
    assert load(tmp_path, model="nomic-embed-text").prefix_style == "none"


def test_config_has_no_defaults_of_its_own() -> None:
    # every default lives in the settings table; a dataclass default could contradict it
    assert all(f.default is dataclasses.MISSING for f in dataclasses.fields(Config))


# --- the template ------------------------------------------------------------------------------


def test_repo_sai_cfg_is_the_init_template() -> None:
    assert (REPO / "sai-cfg.yml").read_text(encoding="utf-8") == TEMPLATE


def test_template_mentions_every_schema_key_in_its_section() -> None:
    lines = TEMPLATE.splitlines()
    top = {m.group(1) for line in lines if (m := re.match(r"#? ?([a-z_]+):", line))}
    sections: dict[str, set[str]] = {}
    current = None
    for line in lines:
        if re.match(r"[a-z_]+:\s*$", line):
            current = line.split(":")[0]
            sections[current] = set()
        elif line and not line.startswith(" "):
            current = None
        elif current and (m := re.match(r"\s+#? ?([a-z_]+):", line)):
            sections[current].add(m.group(1))
    for key in SCHEMA:
        if "." in key:
            section, name = key.split(".")
            assert name in sections.get(section, set()), f"{key} missing from the template"
        else:
            assert key in top, f"{key} missing from the template"


def test_template_values_are_the_defaults(tmp_path: Path) -> None:
    write_cfg(tmp_path, TEMPLATE)
    from_template = load(tmp_path)
    (tmp_path / "sai-cfg.yml").unlink()
    assert _without_file(from_template) == load(tmp_path)


def test_template_with_every_key_uncommented_sets_every_key(tmp_path: Path) -> None:
    names = {key.split(".")[-1] for key in SCHEMA}

    def uncomment(match: re.Match[str]) -> str:
        return f"{match.group(1)}{match.group(2)}:" if match.group(2) in names else match.group(0)

    text = re.sub(r"(?m)^(\s*)# ([a-z_]+):", uncomment, TEMPLATE)
    path = write_cfg(tmp_path, text)
    assert set(read_config_file(path)) == set(SCHEMA)
    config = load(tmp_path)
    assert config.model == "nomic-embed-text" and config.vector_dim == 768
    assert config.walk.exts == ("py", "js", "ts")


def test_qdrant_settings_come_from_the_file_the_environment_and_flags(tmp_path: Path) -> None:
    write_cfg(tmp_path, "qdrant:\n  url: http://file:6333\n  timeout_s: 3\n  prefer_grpc: true\n")
    config = load(tmp_path, env={"SAI_BACKEND": "qdrant", "QDRANT_API_KEY": "k3y"})
    assert config.backend == "qdrant" and config.qdrant.url == "http://file:6333"
    assert config.qdrant.api_key == "k3y" and config.qdrant.timeout_s == 3.0 and config.qdrant.prefer_grpc
    assert "k3y" not in repr(config) and config.index_location == "http://file:6333"
    from_env = load(tmp_path, env={"QDRANT_URL": "http://env:6333"}, backend="qdrant")
    assert from_env.qdrant.url == "http://env:6333"


def test_qdrant_path_is_local_mode_relative_to_the_root(tmp_path: Path) -> None:
    write_cfg(tmp_path, "backend: qdrant\nqdrant:\n  path: .index/q\n")
    config = load(tmp_path)
    assert config.qdrant.path == (tmp_path / ".index" / "q").resolve()
    assert config.index_location == str(config.qdrant.path)


def test_backend_qdrant_without_a_url_or_path_is_refused(tmp_path: Path) -> None:
    write_cfg(tmp_path, "backend: qdrant\n")
    with pytest.raises(ConfigError, match="needs qdrant.url \\(or QDRANT_URL\\)"):
        load(tmp_path)


def test_a_wrongly_typed_api_key_is_not_shown(tmp_path: Path) -> None:
    write_cfg(tmp_path, "qdrant:\n  api_key: 123456789\n")
    with pytest.raises(ConfigError) as caught:
        load(tmp_path)
    assert "123456789" not in str(caught.value) and "qdrant.api_key" in str(caught.value)
