"""Chunkers over real tree-sitter parses of small fixtures, one per language.

The grammars are one pinned wheel per language (sai/chunking/parsers.py), the same on every
Python: CI runs this file on 3.11 and on 3.13, and both must give these units.
"""

from __future__ import annotations

import pytest

from sai.chunking import make_chunker
from sai.chunking.base import split_lines, strip_c_comments
from sai.chunking.grammars import GRAMMARS
from sai.chunking.lines import LineChunker
from sai.chunking.parsers import LANGUAGES, language_for, parser_for
from sai.chunking.treesitter import TreeSitterChunker
from sai.models import Chunk

PYTHON = '''\
"""Sessions against the API."""
import json
from pathlib import Path

TIMEOUT = 30


def helper(x):
    return x * 2


def outer(items):
    def inner(item):
        return item + 1

    return [inner(i) for i in items]


class Session:
    """A logged-in session."""

    retries = 3

    @classmethod
    def create(cls, token):
        return cls(token)

    def close(self):
        self.open = False


if __name__ == "__main__":
    print(json.dumps(helper(2)))
'''

JAVASCRIPT = """\
import { fmt } from "./fmt.js";

const TAX = 0.2;

export const formatPrice = (cents) => {
  const local = () => cents / 100;
  return fmt(local());
};

class Cart {
  items = [];

  total() {
    return this.items.reduce((a, b) => a + b, 0);
  }
}

export default function main() {
  return new Cart().total();
}
"""

TYPESCRIPT = """\
import { Store } from "./store";

export interface User {
  id: number;
  name: string;
}

export class UserStore implements Store<User> {
  private users: User[] = [];

  add(user: User): void {
    this.users.push(user);
  }
}

export const createStore = (): UserStore => new UserStore();

namespace Admin {
  export function audit(): void {}
}
"""

TSX = """\
import React from "react";

type Props = { title: string };

export const Header = ({ title }: Props) => {
  return <h1>{title}</h1>;
};

export function App() {
  return <Header title="hi" />;
}
"""

GO = """\
package server

import (
	"fmt"
	"net/http"
)

type Handler func(w http.ResponseWriter)

type Server struct {
	addr string
}

func NewServer(addr string) *Server {
	return &Server{addr: addr}
}

func (s *Server) Start() error {
	fmt.Println("listening on", s.addr)
	return http.ListenAndServe(s.addr, nil)
}
"""

RUST = """\
use std::fmt;

#[derive(Debug, Clone)]
pub struct Point {
    x: f64,
    y: f64,
}

impl Point {
    pub fn norm(&self) -> f64 {
        (self.x * self.x + self.y * self.y).sqrt()
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "({}, {})", self.x, self.y)
    }
}

pub trait Shape {
    fn area(&self) -> f64;
}
"""

JAVA = """\
package app.users;

import java.util.Optional;

public class UserService {
    private final Repo repo;

    public UserService(Repo repo) {
        this.repo = repo;
    }

    public Optional<User> find(long id) {
        return repo.byId(id);
    }

    interface Repo {
        Optional<User> byId(long id);
    }
}
"""

C = """\
#include <stdlib.h>

#define CAP 16

typedef struct {
    int len;
    int cap;
} Vec;

struct node {
    int value;
    struct node *next;
};

static struct node *make_node(int value) {
    struct node *n = malloc(sizeof *n);
    n->value = value;
    return n;
}
"""

CPP = """\
#include <string>

namespace geo {

class Shape {
public:
    virtual ~Shape() = default;
    double area() const { return w * h; }
    void scale(double k);

private:
    double w = 1, h = 1;
};

void Shape::scale(double k) {
    w *= k;
    h *= k;
}

}  // namespace geo
"""

C_SHARP = """\
using System;

namespace App.Services
{
    public class UserService
    {
        private readonly IRepo _repo;

        public UserService(IRepo repo)
        {
            _repo = repo;
        }

        public User Find(int id)
        {
            return _repo.ById(id);
        }
    }
}
"""

RUBY = """\
require "json"

module Admin
  class UsersController < ApplicationController
    before_action :authenticate

    def index
      render json: User.all
    end

    def self.build(params)
      new(params)
    end
  end
end
"""

PHP = """\
<?php
namespace App\\Models;

use Illuminate\\Database\\Eloquent\\Model;

class User extends Model
{
    protected $table = 'users';

    public function find($id)
    {
        return static::where('id', $id)->first();
    }
}

function helper($x)
{
    return $x * 2;
}
"""

KOTLIN = """\
package geo

import kotlin.math.sqrt

data class Point(val x: Double, val y: Double) {
    fun norm(): Double = sqrt(x * x + y * y)

    companion object {
        fun origin() = Point(0.0, 0.0)
    }
}

fun String.shout(): String {
    return uppercase() + "!"
}
"""

FIXTURES: dict[str, tuple[str, set[str]]] = {
    "python": (PYTHON, {"helper", "outer", "outer.inner", "Session", "Session.create",
                        "Session.close"}),
    "javascript": (JAVASCRIPT, {"formatPrice", "Cart", "Cart.total", "main"}),
    "typescript": (TYPESCRIPT, {"User", "UserStore", "UserStore.add", "createStore",
                                "Admin.audit"}),
    "tsx": (TSX, {"Header", "App"}),
    "go": (GO, {"Server", "NewServer", "Server.Start"}),
    "rust": (RUST, {"Point", "Point.norm", "Point.fmt", "Shape"}),
    "java": (JAVA, {"UserService", "UserService.UserService", "UserService.find",
                    "UserService.Repo"}),
    "c": (C, {"Vec", "node", "make_node"}),
    "cpp": (CPP, {"geo.Shape", "geo.Shape.~Shape", "geo.Shape.area", "geo.Shape.scale"}),
    "c_sharp": (C_SHARP, {"App.Services.UserService", "App.Services.UserService.UserService",
                          "App.Services.UserService.Find"}),
    "ruby": (RUBY, {"Admin", "Admin.UsersController", "Admin.UsersController.index",
                    "Admin.UsersController.build"}),
    "php": (PHP, {"User", "User.find", "helper"}),
    "kotlin": (KOTLIN, {"Point", "Point.norm", "Point.origin", "String.shout"}),
}


def ast_chunks(text: str, language: str | None, *, max_chunk_chars: int = 2000) -> list[Chunk]:
    return TreeSitterChunker(max_chunk_chars=max_chunk_chars).chunk("f", text, language)


def symbols(chunks: list[Chunk]) -> set[str | None]:
    return {c.symbol for c in chunks}


def chunk_with(chunks: list[Chunk], symbol: str | None) -> Chunk:
    return next(c for c in chunks if c.symbol == symbol)


@pytest.mark.parametrize("language", sorted(FIXTURES))
def test_units_are_named_and_qualified_by_their_containers(language: str) -> None:
    text, expected = FIXTURES[language]
    assert expected <= symbols(ast_chunks(text, language))


KINDS = {
    "python": {"helper": "function", "outer.inner": "function", "Session": "class", "Session.create": "method"},
    "typescript": {"User": "interface", "UserStore": "class", "UserStore.add": "method",
                   "createStore": "function", "Admin.audit": "function"},
    "go": {"Server": "struct", "NewServer": "function", "Server.Start": "method"},
    "rust": {"Shape": "trait", "Point.norm": "method"},
    "java": {"UserService": "class", "UserService.UserService": "constructor", "UserService.Repo": "interface"},
    "c": {"Vec": "struct", "make_node": "function"},
    "cpp": {"geo.Shape": "class", "geo.Shape.scale": "method"},
    "ruby": {"Admin": "module", "Admin.UsersController.index": "method"},
    "kotlin": {"Point.origin": "method", "String.shout": "function"},
}


@pytest.mark.parametrize("language", sorted(KINDS))
def test_unit_chunks_carry_the_kind_of_their_unit_and_gap_chunks_none(language: str) -> None:
    chunks = ast_chunks(FIXTURES[language][0], language)
    kinds = {c.symbol: c.kind for c in chunks}
    assert {symbol: kinds[symbol] for symbol in KINDS[language]} == KINDS[language]
    assert all(c.kind is None for c in chunks if c.symbol is None)
    assert all(c.kind is None for c in LineChunker().chunk("f", FIXTURES[language][0], language))


@pytest.mark.parametrize("language", sorted(FIXTURES))
def test_every_non_blank_line_is_in_the_range_and_text_of_a_chunk(language: str) -> None:
    text = FIXTURES[language][0]
    chunks = ast_chunks(text, language)
    for number, line in enumerate(split_lines(text), start=1):
        if line.strip():
            holders = [c for c in chunks if c.start_line <= number <= c.end_line]
            assert any(line in c.text.split("\n") for c in holders), (number, line)


@pytest.mark.parametrize("language", sorted(FIXTURES))
def test_chunks_are_sorted_and_hold_original_lines(language: str) -> None:
    text = FIXTURES[language][0]
    lines = split_lines(text)
    chunks = ast_chunks(text, language)
    assert chunks == sorted(chunks, key=lambda c: (c.start_line, c.end_line))
    for c in chunks:
        span = iter(lines[c.start_line - 1 : c.end_line])
        chunk_lines = c.text.split("\n")
        assert all(line in span for line in chunk_lines), c  # an in-order subsequence
        assert (chunk_lines[0], chunk_lines[-1]) == (lines[c.start_line - 1], lines[c.end_line - 1])
        assert c.language == language


def test_python_decorators_are_inside_the_unit() -> None:
    create = chunk_with(ast_chunks(PYTHON, "python"), "Session.create")
    assert create.text.split("\n")[0] == "    @classmethod"
    assert "return cls(token)" in create.text


def test_nested_function_owns_its_lines_and_outer_keeps_the_rest() -> None:
    chunks = ast_chunks(PYTHON, "python")
    assert "def inner" not in chunk_with(chunks, "outer").text
    assert "return [inner(i) for i in items]" in chunk_with(chunks, "outer").text
    assert "return item + 1" in chunk_with(chunks, "outer.inner").text


def test_module_gap_chunk_holds_imports_constants_and_top_level_code() -> None:
    module = chunk_with(ast_chunks(PYTHON, "python"), None)
    for line in ("import json", "TIMEOUT = 30", 'if __name__ == "__main__":'):
        assert line in module.text
    assert "def helper" not in module.text


def test_python_class_chunk_holds_docstring_and_fields_but_not_methods() -> None:
    session = chunk_with(ast_chunks(PYTHON, "python"), "Session")
    assert '"""A logged-in session."""' in session.text and "retries = 3" in session.text
    assert "def create" not in session.text


def test_class_chunk_is_its_skeleton_and_its_range_spans_its_methods() -> None:
    chunks = ast_chunks(JAVA, "java")
    service, find = chunk_with(chunks, "UserService"), chunk_with(chunks, "UserService.find")
    assert "private final Repo repo;" in service.text and "repo.byId(id)" not in service.text
    assert service.start_line < find.start_line <= find.end_line < service.end_line


@pytest.mark.parametrize(
    ("language", "symbol", "closing"),
    [
        ("java", "UserService", "}"),
        ("c_sharp", "App.Services.UserService", "    }"),
        ("php", "User", "}"),
        ("cpp", "geo.Shape", "};"),
        ("ruby", "Admin.UsersController", "  end"),
    ],
)
def test_closing_brace_or_end_of_a_class_belongs_to_the_class(
    language: str, symbol: str, closing: str
) -> None:
    chunks = ast_chunks(FIXTURES[language][0], language)
    assert chunk_with(chunks, symbol).text.split("\n")[-1] == closing


def test_method_signatures_without_bodies_stay_in_their_interface() -> None:
    chunks = ast_chunks(JAVA, "java")
    assert "UserService.Repo.byId" not in symbols(chunks)
    assert "byId(long id);" in chunk_with(chunks, "UserService.Repo").text


def test_const_arrow_function_is_a_unit_only_outside_functions() -> None:
    found = symbols(ast_chunks(JAVASCRIPT, "javascript"))
    assert "formatPrice" in found
    assert not any(s and s.endswith("local") for s in found)


COMMONJS = """var res = Object.create(http.ServerResponse.prototype);

res.send = function send(body) {
  var chunk = body;
  return this;
};

exports.parse = (text) => text.split(",");

module.exports = function createApplication() {
  var app = function (req, res) { app.handle(req, res); };
  app.handle = function handle() { return 2; };
  return app;
};

res.count = 5;
"""


@pytest.mark.parametrize("language", ["javascript", "typescript"])
def test_a_function_assigned_to_a_property_is_a_unit_named_by_it(language: str) -> None:
    chunks = ast_chunks(COMMONJS, language)
    assert symbols(chunks) == {None, "res.send", "exports.parse", "module.exports"}
    send = chunk_with(chunks, "res.send")
    assert (send.start_line, send.end_line, send.kind) == (3, 6, "function")
    assert send.text.endswith("};")  # the statement's semicolon is the unit's
    # inside a function such an assignment is the function's own code; a value is module code
    assert "app.handle = function handle()" in chunk_with(chunks, "module.exports").text
    assert "res.count = 5;" in chunk_with(chunks, None).text


def test_go_type_without_struct_or_interface_stays_in_module_chunk() -> None:
    chunks = ast_chunks(GO, "go")
    assert "Handler" not in symbols(chunks)
    assert "type Handler func" in chunk_with(chunks, None).text


def test_an_exported_typescript_type_alias_of_two_lines_or_more_is_a_unit() -> None:
    text = ("export type inferRouterInputs<TRouter extends AnyRouter> = {\n  [K in keyof TRouter]: string;\n};\n"
            "export type AnyRouter = Router<any>;\n"
            "type Helper<T> =\n  T extends string ? 1 : 0;\n"
            "function f() {\n  type Local = number;\n  return 1;\n}\n")
    chunks = ast_chunks(text, "typescript")
    alias = chunk_with(chunks, "inferRouterInputs")
    assert (alias.kind, alias.start_line, alias.end_line) == ("type", 1, 3)
    assert alias.text.startswith("export type")  # the export wrapper is the unit's
    assert symbols(chunks) == {"inferRouterInputs", "f", None}
    assert "export type AnyRouter" in chunk_with(chunks, None).text  # one line: with its neighbours
    assert "type Helper<T> =" in chunk_with(chunks, None).text  # not exported: a helper


def test_cpp_type_aliases_outside_classes_and_typedefs_of_no_record_are_units() -> None:
    text = ("namespace fmt {\n"
            "template <typename... T>\nusing format_string = basic_format_string<char, T...>;\n"
            "using memory_buffer = basic_memory_buffer<char>;\n"
            "typedef void (*close_cb)(handle* h,\n                         int status);\n"
            "typedef struct loop_s\n    loop_t;\n"
            "class memory_buffer_base {\n  using value_type =\n      char;\n  int n;\n};\n"
            "}\n")
    chunks = ast_chunks(text, "cpp")
    kinds = {c.symbol: (c.kind, c.start_line, c.end_line) for c in chunks}
    assert kinds == {None: (None, 1, 14), "fmt.format_string": ("type", 2, 3), "fmt.close_cb": ("type", 5, 6),
                     "fmt.memory_buffer_base": ("class", 9, 13)}
    module = chunk_with(chunks, None).text
    assert "using memory_buffer =" in module and "typedef struct loop_s" in module  # one line; a renamed record
    assert "using value_type =" in chunk_with(chunks, "fmt.memory_buffer_base").text  # a member type


def test_a_c_function_like_macro_of_two_lines_or_more_is_a_unit_and_a_constant_is_not() -> None:
    text = ("#define CAP 16\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n\n#define MIN(a, b) \\\n"
            "  ((a) < (b) ? (a) : (b))\n\n"
            "int f(void) {\n#define LOCAL(x) \\\n  (x)\n  return LOCAL(1);\n}\n")
    chunks = ast_chunks(text, "c")
    kinds = {c.symbol: (c.kind, c.start_line, c.end_line) for c in chunks}
    assert kinds == {None: (None, 1, 2), "MIN": ("macro", 4, 5), "f": ("function", 7, 11)}
    assert kinds == {c.symbol: (c.kind, c.start_line, c.end_line) for c in ast_chunks(text, "cpp")}


def test_rust_attributes_are_inside_the_item() -> None:
    point = next(c for c in ast_chunks(RUST, "rust") if c.text.startswith("#[derive"))
    assert point.symbol == "Point" and "pub struct Point {" in point.text


def test_oversized_function_is_split_into_windows_keeping_its_symbol() -> None:
    body = "".join(f"    total += compute_value_{i}(argument, other)\n" for i in range(150))
    text = f"import os\n\n\ndef big(argument, other):\n    total = 0\n{body}    return total\n"
    big = [c for c in ast_chunks(text, "python", max_chunk_chars=1500) if c.symbol == "big"]
    assert len(big) >= 5
    assert all(len(c.text.encode()) <= 1500 and c.end_line - c.start_line < 60 for c in big)
    assert big[0].start_line == 4 and big[-1].end_line == 156


def test_unit_owning_no_lines_makes_no_chunk() -> None:
    chunks = ast_chunks("class A { void f() { run(); } }\n", "java")
    assert [c.symbol for c in chunks] == ["A.f"]


def test_unknown_language_uses_line_windows() -> None:
    text = "".join(f"line {i}\n" for i in range(100))
    expected = LineChunker().chunk("f", text, None)
    assert ast_chunks(text, None) == expected
    assert ast_chunks(text, "cobol") == LineChunker().chunk("f", text, "cobol")


def test_unparseable_file_falls_back_to_line_windows() -> None:
    text = "}}}} ((( @@@ !!! \n" * 70
    assert ast_chunks(text, "python") == LineChunker().chunk("f", text, "python")


def test_blank_file_gives_no_chunks() -> None:
    assert ast_chunks("\n   \n\n", "go") == []


def test_crlf_line_endings_are_dropped_from_chunk_text() -> None:
    chunks = ast_chunks("def f():\r\n    return 1\r\n", "python")
    assert [(c.symbol, c.text) for c in chunks] == [("f", "def f():\n    return 1")]


def test_make_chunker_builds_the_ast_chunker_and_parsers_are_cached() -> None:
    chunker = make_chunker("ast", max_chunk_chars=900)
    assert isinstance(chunker, TreeSitterChunker) and chunker.max_chunk_chars == 900
    assert parser_for("go") is parser_for("go")


@pytest.mark.parametrize("language", sorted(GRAMMARS))
def test_every_table_node_type_exists_in_its_grammar(language: str) -> None:
    grammar = language_for(language)
    kinds = {grammar.node_kind_for_id(i) for i in range(grammar.node_kind_count)}
    table = GRAMMARS[language]
    assert (set(table.units) | table.wrappers | table.leading) <= kinds


def numbered_text(count: int, *, width: int = 10) -> str:
    return "".join(f"{i:0{width}d}\n" for i in range(1, count + 1))


def test_line_windows_are_60_lines_with_8_lines_overlap() -> None:
    chunks = LineChunker().chunk("f", numbered_text(130), "python")
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 60), (53, 112), (105, 130)]
    assert all(c.symbol is None and c.language == "python" for c in chunks)


def test_line_windows_respect_the_byte_budget() -> None:
    chunks = LineChunker(max_chunk_chars=1000).chunk("f", numbered_text(40, width=99), None)
    assert all(len(c.text.encode()) <= 1000 for c in chunks)
    assert (chunks[0].start_line, chunks[0].end_line) == (1, 10)  # 10 lines of 100 bytes


def test_a_single_line_over_the_budget_is_cut_into_pieces_of_that_line() -> None:
    line = "x = '" + "é" * 3 + "ab€" * 187_600 + "'"  # 938 KB on one line (a minified file)
    chunks = LineChunker(max_chunk_chars=2000).chunk("f", f"a = 1\n{line}\nb = 2\n", None)
    pieces = [c for c in chunks if c.start_line == 2]
    assert len(line.encode()) > 938_000 and len(pieces) >= 470
    assert all(len(c.text.encode()) <= 2000 and c.end_line == 2 for c in pieces)
    assert "".join(c.text for c in pieces) == line  # every cut falls between characters
    assert [(c.start_line, c.end_line, c.text) for c in (chunks[0], chunks[-1])] == [
        (1, 1, "a = 1"), (3, 3, "b = 2"),
    ]


def test_ast_chunks_of_an_over_budget_line_stay_within_the_budget() -> None:
    text = "def big():\n    return '" + "ab€" * 1000 + "'\n"
    chunks = ast_chunks(text, "python", max_chunk_chars=900)
    assert all(len(c.text.encode()) <= 900 for c in chunks)
    assert [c.start_line for c in chunks if c.start_line == c.end_line == 2][1:]  # several pieces
    assert all(c.symbol == "big" for c in chunks)


def test_whitespace_only_line_windows_are_skipped() -> None:
    text = "first\n" + "   \n" * 200 + "last\n"
    chunks = LineChunker().chunk("f", text, None)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 60), (157, 202)]


@pytest.mark.parametrize(
    ("language", "text", "symbol"),
    [
        ("go", "func (l *List[T]) Len() int {\n\treturn l.n\n}\n", "List.Len"),
        ("rust", "impl<T> Wrapper<T> {\n    fn get(&self) -> &T { &self.0 }\n}\n", "Wrapper.get"),
        ("cpp", "template <typename T>\nT Box<T>::get() const {\n    return v;\n}\n", "Box.get"),
        ("ruby", "class Api::V1::Users\n  def show\n  end\nend\n", "Api.V1.Users.show"),
        # a conversion's type keeps its `::`: the operator defines no `string_view`
        ("cpp", "namespace absl {\nstruct View {\n  int n;\n  operator absl::string_view() const {\n"
                "    return {};\n  }\n};\n}\n", "absl.View.operator absl::string_view"),
        ("cpp", "Box::operator std::string() const {\n    return s;\n}\n", "Box.operator std::string"),
    ],
)
def test_symbols_drop_type_arguments_pointers_and_scope_operators(
    language: str, text: str, symbol: str
) -> None:
    assert symbol in symbols(ast_chunks(text, language))


def test_strip_c_comments_blanks_comments_keeps_lines_and_string_literals() -> None:
    text = ('const url = "http://example.com/*x*/"; // the endpoint\n'
            "/* a block\n   over two lines */ let tag = '//';\n"
            "let tpl = `a // b`;\n")
    stripped = strip_c_comments(text)
    assert stripped == ('const url = "http://example.com/*x*/"; \n'
                        "\n let tag = '//';\n"
                        "let tpl = `a // b`;\n")
    assert stripped.count("\n") == text.count("\n")


def test_every_chunked_language_has_a_grammar_in_the_installed_set() -> None:
    assert set(GRAMMARS) == LANGUAGES
    assert all(parser_for(language).parse(b"\n").root_node is not None for language in LANGUAGES)


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        # A `record_struct_declaration` in older C# grammars, a `record_declaration` in this one.
        ("c_sharp", "public record struct P(int X) {\n    public int Twice() { return 2 * X; }\n}\n",
         {"P", "P.Twice"}),
        # fwcd's Kotlin grammar names the body and receiver differently (sai/chunking/grammars.py).
        ("kotlin", "fun String?.orBlank(): String {\n    return this ?: \"\"\n}\n", {"String?.orBlank"}),
        ("kotlin", "fun <T> List<T>.second(): T {\n    return this[1]\n}\n", {"List.second"}),
        ("kotlin", "class A {\n    override fun <T> f(t: T): T {\n        return t\n    }\n}\n", {"A", "A.f"}),
    ],
)
def test_grammar_forms_that_differ_from_older_grammars_give_these_units(
    language: str, text: str, expected: set[str]
) -> None:
    assert symbols(ast_chunks(text, language)) - {None} == expected


def test_kotlin_abstract_function_stays_in_its_class() -> None:
    text = "abstract class A {\n    abstract fun f(): Int\n    fun g(): Int {\n        return 1\n    }\n}\n"
    chunks = ast_chunks(text, "kotlin")
    assert symbols(chunks) == {"A", "A.g"}
    assert "abstract fun f(): Int" in chunk_with(chunks, "A").text


def test_csharp_file_scoped_namespace_qualifies_the_rest_of_the_file() -> None:
    text = "namespace App.Models;\n\nusing System;\n\npublic class User\n{\n    public int Id() { return 1; }\n}\n"
    chunks = ast_chunks(text, "c_sharp")
    assert symbols(chunks) == {None, "App.Models.User", "App.Models.User.Id"}
    assert "namespace App.Models;" in chunk_with(chunks, None).text
