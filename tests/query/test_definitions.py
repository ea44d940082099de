"""Which definition of a bare name comes first when the name has several (sai/query/definitions.py):
the rules on rows, then search() on an indexed tree holding each case."""

from __future__ import annotations

import pytest
from fixtures_tree import held_copy, held_template

from sai.models import ChunkRow
from sai.query import definitions, search


def row(chunk_id: int, path: str, symbol: str, kind: str = "class", language: str = "c_sharp") -> ChunkRow:
    return ChunkRow(id=chunk_id, path=path, language=language, start_line=1, end_line=9, symbol=symbol,
                    text="", kind=kind)


def best(rows: list[ChunkRow], query: str) -> list[str]:
    """The paths of the closest definitions (all of them when they tie)."""
    key = definitions.closeness(rows, query)
    top = max(key.values())
    return sorted(r.path for r in rows if key[r.id] == top)


def first(rows: list[ChunkRow], query: str) -> str:
    """The path of the definition search adds first."""
    return definitions.preferred(rows, query, limit=1)[0].path


@pytest.mark.parametrize(("rows", "query", "wanted"), [
    # versioned copies: the newest version's, or the one outside a directory kept for the past
    ([row(1, "src/v3/types.ts", "ZodString"), row(2, "src/v4/classic/schemas.ts", "ZodString")],
     "ZodString", ["src/v4/classic/schemas.ts"]),
    ([row(1, "lib/v1/client.rb", "Client"), row(2, "lib/client_impl.rb", "Client")], "Client",
     ["lib/client_impl.rb"]),
    ([row(1, "src/legacy/Parser.java", "Parser"), row(2, "src/core/Reader.java", "Parser")], "Parser",
     ["src/core/Reader.java"]),
    # an interface and a concrete type of the same name: the type, wherever the interface is
    ([row(1, "api/transport.ts", "Transport", "interface"), row(2, "http/impl.ts", "Transport")], "Transport",
     ["http/impl.ts"]),
    # a lone interface is still the answer; so is a trait with only functions of its name beside it
    ([row(1, "api/transport.ts", "Transport", "interface")], "Transport", ["api/transport.ts"]),
    ([row(1, "src/ser.rs", "Serialize", "trait"), row(2, "src/de.rs", "serialize", "function")], "Serialize",
     ["src/ser.rs"]),
    # a C# partial type: the part in the file named after it; parts named alike are equally close
    ([row(1, "Dapper/SqlMapper.Async.cs", "SqlMapper"), row(2, "Dapper/SqlMapper.cs", "SqlMapper")],
     "SqlMapper", ["Dapper/SqlMapper.cs"]),
    ([row(1, "Prims.Readers.cs", "Prims"), row(2, "Prims.Writers.cs", "Prims"), row(3, "Other.cs", "Prims")],
     "Prims", ["Prims.Readers.cs", "Prims.Writers.cs"]),
    # a C++ class template over its specialisations, wherever they are; specialisations alone tie
    ([row(1, "detail/char_traits.hpp", "detail.char_traits", "specialization", "cpp"),
      row(2, "detail/type_traits.hpp", "detail.char_traits", "struct", "cpp")], "char_traits",
     ["detail/type_traits.hpp"]),
    ([row(1, "a/hash.hpp", "std.hash", "specialization", "cpp"),
      row(2, "b/hash.hpp", "std.hash", "specialization", "cpp"),
      row(3, "c/hash.hpp", "detail.hash", "function", "cpp")], "hash", ["a/hash.hpp", "b/hash.hpp", "c/hash.hpp"]),
    # a Ruby class reopened in several files has no main part: each answers
    ([row(1, "lib/rails/engine.rb", "Rails.Engine", language="ruby"),
      row(2, "lib/rails/engine/configuration.rb", "Rails.Engine", language="ruby")],
     "Engine", ["lib/rails/engine.rb", "lib/rails/engine/configuration.rb"]),
])
def test_the_rules_choose_the_definition_a_person_means(rows, query, wanted):
    assert best(rows, query) == wanted
    assert first(rows, query) in wanted


@pytest.mark.parametrize(("paths", "wanted"), [
    # a partial class: the file named after it, then its partial files, then any other
    (["Dapper/SqlMapper.Async.cs", "Dapper/SqlMapper.cs", "Dapper/Helpers.cs"], "Dapper/SqlMapper.cs"),
    (["Dapper/Helpers.cs", "Dapper/SqlMapper.Async.cs"], "Dapper/SqlMapper.Async.cs"),
])
def test_among_equally_close_parts_the_file_named_after_the_name_comes_first(paths, wanted):
    assert first([row(i, path, "SqlMapper", language="ruby") for i, path in enumerate(paths)],
                 "SqlMapper") == wanted
    assert first([row(i, path, "SqlMapper") for i, path in enumerate(paths)], "SqlMapper") == wanted


def test_the_earlier_rules_decide_before_the_file_name():
    # the case typed beats a file named after the name; so does a newer version
    rows = [row(1, "src/session.py", "session", "function"), row(2, "src/api.py", "Session")]
    assert best(rows, "Session") == ["src/api.py"] and first(rows, "Session") == "src/api.py"
    rows = [row(1, "src/v3/ZodType.ts", "ZodType"), row(2, "src/v4/core.ts", "ZodType")]
    assert best(rows, "ZodType") == ["src/v4/core.ts"] and first(rows, "ZodType") == "src/v4/core.ts"


def test_preferred_keeps_the_closest_definitions_in_store_order_among_equals():
    rows = [row(i, f"Dapper/SqlMapper.Part{i}.cs", "SqlMapper", language="ruby") for i in range(1, 8)]
    rows.append(row(9, "Dapper/SqlMapper.cs", "SqlMapper", language="ruby"))
    chosen = definitions.preferred(rows, "SqlMapper", limit=3)
    assert [r.id for r in chosen] == [9, 1, 2]


# --- on an indexed tree ---------------------------------------------------------------------------

def _partial(part: str) -> str:
    return (f"namespace Dapper\n{{\n    public static partial class SqlMapper\n    {{\n"
            f"        public static int {part}Count(int value)\n        {{\n"
            f"            return value + {len(part)};\n        }}\n    }}\n}}\n")


TREE = {
    # seven partial files sort before the file named after the class: more than search adds by name
    **{f"Dapper/SqlMapper.{p}.cs": _partial(p) for p in ("Async", "Cache", "Grid", "Identity", "Link",
                                                          "Params", "Reader")},
    "Dapper/SqlMapper.cs": _partial("Core"),
    "src/v3/types.ts": "export class ZodString {\n  parse(input: string): string {\n    return input;\n  }\n}\n",
    "src/v4/classic/schemas.ts": ("export class ZodString {\n  parse(input: string): string {\n"
                                  "    return input.trim();\n  }\n}\n"),
    "lib/rails/engine.rb": "module Rails\n  class Engine\n    def call(env)\n      env\n    end\n  end\nend\n",
    "lib/rails/engine/configuration.rb": ("module Rails\n  class Engine\n    def config\n      @config\n"
                                          "    end\n  end\nend\n"),
    # a class template and, in a file named after it, a specialisation of it
    "include/detail/type_traits.hpp": ("JSON_NAMESPACE_BEGIN\nnamespace detail\n{\ntemplate<typename T>\n"
                                       "struct char_traits : std::char_traits<T>\n{\n    using base = T;\n};\n}\n"
                                       "JSON_NAMESPACE_END\n"),
    "include/detail/char_traits.hpp": ("JSON_NAMESPACE_BEGIN\nnamespace detail\n{\ntemplate<>\n"
                                       "struct char_traits<unsigned char> : std::char_traits<char>\n{\n"
                                       "    static int eof() { return -1; }\n};\n}\nJSON_NAMESPACE_END\n"),
    "src/api/transport.ts": "export interface Transport {\n  send(body: string): void;\n}\n",
    # names no unit defines: a macro and an alias each defined on one line, used in many chunks
    "include/check/config.h": ("#pragma once\n#include <assert.h>\n#define CHECK_LIMIT 64\n"
                               "#define SAI_CHECK(x) assert(x)\nusing byte_span = std::span<unsigned char>;\n"),
    **{f"src/check/use{i}.cpp": "".join(f"int use{i}_{j}(byte_span s) {{\n    SAI_CHECK(s.size() < CHECK_LIMIT);\n"
                                        f"    SAI_CHECK(s.size() > {j});\n    return {j};\n}}\n\n" for j in range(3))
       for i in range(6)},
    # a macro used in more chunks, each repeating it, than BM25's first hundred for the name
    "include/check/move.h": "#pragma once\n#define HOT_MOVE(x) static_cast<decltype(x)&&>(x)\n",
    **{f"src/sum/sum{i}.cpp": "".join(f"int sum{i}_{j}(int v) {{\n    return HOT_MOVE(v) + HOT_MOVE(v);\n}}\n\n"
                                      for j in range(15)) for i in range(8)},
    "lib/aliases.bash": "# git shortcuts\nalias gst='git status'\nalias gco='git checkout'\n",
    "lib/use.bash": "".join(f"step_{j}() {{\n  gst\n  gst --short\n  echo {j}\n}}\n\n" for j in range(4)),
    "src/http/fetcher.ts": ("export class Transport {\n  send(body: string): void {\n"
                            "    console.log(body);\n  }\n}\n"),
}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return held_template(tmp_path_factory, TREE)


@pytest.fixture
def project(template, tmp_path, ollama_server):
    """TREE indexed with the stand-in, its index held in memory (tests/memory_store.py)."""
    project = held_copy(template, tmp_path, ollama_server.url)
    yield project
    project.close()


CASES = [
    ("SqlMapper", "Dapper/SqlMapper.cs"),
    ("ZodString", "src/v4/classic/schemas.ts"),
    ("Transport", "src/http/fetcher.ts"),
    ("char_traits", "include/detail/type_traits.hpp"),
]


@pytest.mark.parametrize(("query", "path"), CASES)
def test_a_bare_name_with_several_definitions_finds_the_one_meant_first(project, query, path):
    hits = search.search(project, query, limit=5)
    assert (hits[0].path, hits[0].symbol.rsplit(".", 1)[-1]) == (path, query)


@pytest.mark.parametrize(("query", "path"), CASES)
def test_the_one_meant_comes_first_when_only_the_names_definitions_are_candidates(project, monkeypatch, query,
                                                                                 path):
    # as in a large index whose lists are full of other chunks: search adds the name's closest
    # definitions itself (SqlMapper.cs sorts after the seven partial files)
    monkeypatch.setattr(search, "_candidates", lambda *args, **kwargs: ([], []))
    hits = search.search(project, query, limit=5)
    assert (hits[0].path, hits[0].symbol.rsplit(".", 1)[-1]) == (path, query)


LINE_CASES = [("SAI_CHECK", "include/check/config.h"), ("CHECK_LIMIT", "include/check/config.h"),
              ("byte_span", "include/check/config.h"), ("gst", "lib/aliases.bash")]


@pytest.mark.parametrize(("query", "path"), LINE_CASES)
def test_a_name_defined_on_a_line_finds_that_line_before_its_uses(project, monkeypatch, query, path):
    # every use ranks above the definition lexically (they repeat the name); the definition joins
    # the candidates even when the lists hold only other chunks
    hits = search.search(project, query, limit=5)
    assert hits[0].path == path
    monkeypatch.setattr(search, "_candidates", lambda *args, **kwargs: ([], []))
    assert search.search(project, query, limit=5)[0].path == path


def test_a_macro_used_in_more_chunks_than_bm25s_first_hundred_finds_its_definition(project):
    with project.store.read() as reader:
        ids = [i for i, _ in reader.lexical("hot_move", 1000)]
        paths = {r.id: r.path for r in reader.chunks(ids, text=False)}
    ranked = [paths[i] for i in ids]
    assert ranked.index("include/check/move.h") >= 100  # what the test is about: 120 uses rank before it
    assert search.search(project, "HOT_MOVE", limit=5)[0].path == "include/check/move.h"


@pytest.mark.parametrize(("line", "name", "defines"), [
    ("#define JSON_ASSERT(x) assert(x)", "JSON_ASSERT", True), ("  #  define FMT_VERSION 110000", "FMT_VERSION", True),
    ("    using const_reverse_iterator = json_reverse_iterator<const_iterator>;", "const_reverse_iterator", True),
    ("typedef unsigned long long uint64_t;", "uint64_t", True), ("type HandlerFunc func(w int)", "HandlerFunc", True),
    ("export type Foo<T> = Bar", "Foo", True), ("pub(crate) const MAX: u32 = 3;", "MAX", True),
    ("const val TIMEOUT = 3", "TIMEOUT", True), ("alias gst='git status'", "gst", True),
    ("MAX_SIZE = 10", "MAX_SIZE", True), ("static const int kSize = 5;", "kSize", True), ("local M = {}", "M", True),
    ("x = JSON_ASSERT(y)", "JSON_ASSERT", False), ("var x = Foo", "Foo", False),
    ("#undef JSON_ASSERT", "JSON_ASSERT", False),
    ("    JSON_ASSERT(m_object != nullptr);", "JSON_ASSERT", False), ("MAX_SIZE == 10", "MAX_SIZE", False),
    ("let foo_bar = 1", "foo", False), ("  return Foo;", "Foo", False), ("const x = foo.Foo", "Foo", False),
])
def test_what_defines_a_name_on_a_line(line, name, defines):
    assert (definitions.line_definition(name).search(f"// before\n{line}\n// after\n") is not None) is defines


def test_only_a_csharp_partial_type_has_a_main_part(project):
    # read from the index: the C# parts outside SqlMapper.cs lose the name's full boost, the
    # Ruby class reopened in two files keeps it in both
    with project.store.read() as reader:
        for name, parts, wanted in (("SqlMapper", 8, {"Dapper/SqlMapper.cs"}),
                                    ("Engine", 2, {"lib/rails/engine.rb", "lib/rails/engine/configuration.rb"})):
            rows = reader.chunks(reader.symbols().defining_rows(name, limit=50), text=False)
            key = definitions.closeness(rows, name)
            top = max(key.values())
            assert len({r.path for r in rows}) == parts
            assert {r.path for r in rows if key[r.id] == top} == wanted
