"""Uses of names from real tree-sitter parses: every language of the grammar table yields some,
and the kinds of the first thirteen come out as the tables say (sai/chunking/reference_tables.py)."""

from __future__ import annotations

import pytest
from language_samples import UNITS

from sai.chunking.grammars import GRAMMARS
from sai.chunking.references import references
from sai.chunking.treesitter import TreeSitterChunker

FIRST = {
    "python": "import os\n\nclass A(B):\n    def f(self) -> int:\n        return os.path.join(g())\n",
    "javascript": "import { g } from './g';\nclass A extends B {\n  f() { return g(1); }\n}\n",
    "typescript": "import { g } from './g';\nclass A extends B {\n  f(x: T): number { return g(x); }\n}\n",
    "tsx": "import { g } from './g';\nexport function F(x: T) {\n  return <div>{g(x)}</div>;\n}\n",
    "go": "package p\n\nimport \"fmt\"\n\nfunc F(x T) {\n\tfmt.Println(x)\n}\n",
    "rust": "use crate::a::g;\n\nimpl Tr for S {\n    fn f(&self) -> T { g(1) }\n}\n",
    "java": "import a.B;\n\nclass A extends B {\n    T f() { return g(1); }\n}\n",
    "c": "#include \"g.h\"\n\nint f(T x) {\n    return g(x);\n}\n",
    "cpp": "#include \"g.h\"\n\nclass A : public B {\n    int f() { return g(1); }\n};\n",
    "c_sharp": "using System;\n\nclass A : B {\n    int F() { return G(1); }\n}\n",
    "ruby": "require 'g'\n\nclass A < B\n  def f\n    g(1)\n  end\nend\n",
    "php": "<?php\nuse A\\B;\n\nclass C extends B {\n    function f() { return g(1); }\n}\n",
    "kotlin": "import a.B\n\nclass A : B() {\n    fun f(): T = g(1)\n}\n",
}
# The kinds each of the first thirteen must give on its sample (the calls and bases above).
KINDS = {
    "python": {"import", "inherit", "type", "call"}, "javascript": {"import", "inherit", "call"},
    "typescript": {"import", "inherit", "type", "call"}, "tsx": {"import", "type", "call"},
    "go": {"import", "type", "call"}, "rust": {"import", "inherit", "type", "call"},
    "java": {"import", "inherit", "type", "call"}, "c": {"import", "type", "call"},
    "cpp": {"import", "inherit", "call"}, "c_sharp": {"import", "inherit", "call"},
    "ruby": {"inherit", "call"}, "php": {"import", "inherit", "call"}, "kotlin": {"import", "inherit", "call"},
}
SAMPLES = {**FIRST, **{language: UNITS[language][0] for language in GRAMMARS if language in UNITS}}


def uses(language: str, text: str) -> list[tuple[str, str]]:
    chunks = TreeSitterChunker().chunk(f"f.{language}", text, language)
    return [(r.kind, r.name) for r in references(text, language, chunks)]


def test_every_grammar_has_a_sample() -> None:
    assert set(GRAMMARS) <= set(SAMPLES)


@pytest.mark.parametrize("language", sorted(GRAMMARS))
def test_every_language_yields_references(language: str) -> None:
    assert uses(language, SAMPLES[language])


@pytest.mark.parametrize("language", sorted(KINDS))
def test_the_first_languages_give_calls_imports_bases_and_types(language: str) -> None:
    found = {kind for kind, _ in uses(language, FIRST[language])}
    assert KINDS[language] <= found, (language, uses(language, FIRST[language]))


def test_a_name_called_from_inside_parentheses_has_no_qualifier() -> None:
    text = "export const f = (ok) => (ok ? a : b)(1) + String(h).trim()\n"
    calls = {(r.name, r.qualifier) for r in references(text, "typescript", []) if r.kind == "call"}
    assert calls == {("b", ""), ("String", ""), ("trim", "String(h)")}


def test_a_call_is_its_callees_last_name_with_the_receiver_as_qualifier() -> None:
    text = "def f():\n    os.path.join(a)\n    self.items.append(b)\n"
    chunks = TreeSitterChunker().chunk("f.py", text, "python")
    calls = {(r.name, r.qualifier) for r in references(text, "python", chunks) if r.kind == "call"}
    assert calls == {("join", "os.path"), ("append", "self.items")}


def test_definitions_and_parameters_are_not_uses() -> None:
    text = "def total(items, rate):\n    subtotal = 0\n    return subtotal * rate\n"
    chunks = TreeSitterChunker().chunk("f.py", text, "python")
    assert [(r.name, r.line) for r in references(text, "python", chunks)] == [("subtotal", 3), ("rate", 3)]


def test_a_keyword_arguments_name_is_not_a_use_and_a_star_import_is_an_import_of_star() -> None:
    text = "from shop.models import *\n\ndef f(locate):\n    return launch(url, locate=locate)\n"
    chunks = TreeSitterChunker().chunk("f.py", text, "python")
    found = [(r.name, r.kind, r.line, r.module) for r in references(text, "python", chunks)]
    assert found == [("shop", "import", 1, "shop.models"), ("models", "import", 1, "shop.models"),
                     ("*", "import", 1, "shop.models"), ("launch", "call", 4, ""), ("url", "other", 4, ""),
                     ("locate", "other", 4, "")]  # the value `locate`, not the keyword


def test_a_member_of_a_member_is_not_the_classes_own_and_keeps_its_object_as_qualifier() -> None:
    text = ("import click.utils\n\nclass C:\n    def m(self):\n        self.items.append(1)\n"
            "        return self.helper(click.utils.KeepOpen)\n")
    chunks = TreeSitterChunker().chunk("f.py", text, "python")
    found = {r.name: (r.qualifier, r.module, r.target) for r in references(text, "python", chunks) if r.line > 4}
    assert found["append"] == ("self.items", "", "")  # not C.append
    assert found["helper"] == ("self", "", "C.helper")
    assert found["KeepOpen"] == ("click.utils", "click.utils", "")


@pytest.mark.parametrize(("language", "text", "module"), [
    ("typescript", "export const x = 1\n", True), ("javascript", "import a from 'a'\na()\n", True),
    ("javascript", "function f() {}\nf()\n", False), ("tsx", "const x = <a/>\n", False)])
def test_an_es_module_is_marked_and_a_script_is_not(language: str, text: str, module: bool) -> None:
    found = [(r.name, r.kind, r.line) for r in references(text, language, [])]
    assert (("<module>", "import", 1) in found) == module


def test_an_import_binds_the_names_used_later_to_its_module() -> None:
    text = "from shop.models import Cart\n\ndef f():\n    return Cart()\n"
    chunks = TreeSitterChunker().chunk("f.py", text, "python")
    call = next(r for r in references(text, "python", chunks) if r.kind == "call")
    assert (call.name, call.module, call.unit, call.unit_start) == ("Cart", "shop.models", "f", 3)


def targets(language: str, text: str) -> dict[tuple[str, int], tuple[str, str]]:
    """(name, line) -> (target, module) of each call in `text`."""
    chunks = TreeSitterChunker().chunk(f"f.{language}", text, language)
    return {(r.name, r.line): (r.target, r.module) for r in references(text, language, chunks) if r.kind == "call"}


def test_a_receivers_class_comes_from_its_annotation_its_constructor_or_the_classes_base() -> None:
    text = ("from . import core\nfrom .editors import Editor\n\nclass Option(core.Parameter):\n"
            "    def __init__(self, ctx: Context):\n        super().__init__(ctx)\n        ed = Editor()\n"
            "        ed.edit(1)\n        Editor().edit(2)\n        ctx.invoke(3)\n        made = make()\n"
            "        made.edit(4)\n")
    found = targets("python", text)
    assert found[("__init__", 6)] == ("Parameter.__init__", ".core")  # `from . import core`: the module .core
    assert found[("edit", 8)] == ("Editor.edit", ".editors")
    assert found[("edit", 9)] == ("Editor.edit", ".editors")
    assert found[("invoke", 10)] == ("Context.invoke", "")
    assert found[("edit", 12)] == ("", "")  # a call of a function gives no type


def test_a_name_rebound_to_two_types_in_one_unit_gives_none() -> None:
    text = "def f(flag):\n    x = Cart()\n    if flag:\n        x = Basket()\n    return x.total()\n"
    assert targets("python", text)[("total", 5)] == ("", "")


def test_typescript_and_go_receivers_from_types_and_constructions() -> None:
    ts = ("import { Editor } from './editor'\nclass A extends B {\n  m(c: Ctx) {\n    const v = new Editor()\n"
          "    v.edit()\n    new Editor().edit()\n    super.g()\n    c.h()\n  }\n}\n")
    found = targets("typescript", ts)
    assert found[("edit", 5)] == ("Editor.edit", "./editor") and found[("edit", 6)] == ("Editor.edit", "./editor")
    assert found[("g", 7)] == ("B.g", "") and found[("h", 8)] == ("Ctx.h", "")
    go = "package m\n\nfunc f(s *Server, t pkg.Tree) {\n\tv := &Editor{}\n\ts.Start()\n\tt.Walk()\n\tv.Edit()\n}\n"
    found = targets("go", go)
    assert found[("Start", 5)][0] == "Server.Start" and found[("Walk", 6)][0] == "Tree.Walk"
    assert found[("Edit", 7)][0] == "Editor.Edit"


def test_a_name_outside_a_member_access_has_no_qualifier() -> None:
    text = "def f(a):\n    x = helper\n    g(key=helper)\n    return {'k': helper}, a + helper\n"
    chunks = TreeSitterChunker().chunk("f.py", text, "python")
    assert {(r.line, r.qualifier) for r in references(text, "python", chunks) if r.name == "helper"} == {
        (2, ""), (3, ""), (4, "")}
    js = "const m = {baseURL: merge, t: a.b}\n"
    assert {(r.name, r.qualifier) for r in references(js, "javascript", [])} >= {("merge", ""), ("b", "a")}


def test_a_javascript_member_assignment_declares_the_member_and_typescripts_writes_it() -> None:
    text = "app.listen = function listen() {}\nthis.port = 1\n"
    assert {r.name for r in references(text, "javascript", [])} == {"app"}
    assert {r.name for r in references(text, "typescript", [])} == {"app", "listen", "port"}


def test_commonjs_requires_and_re_exports_are_imports() -> None:
    text = "const View = require('./view')\nconst { a, b: c } = require('./util')\nView(a, c)\n"
    found = {(r.name, r.kind, r.module) for r in references(text, "javascript", [])}
    assert {("View", "import", "./view"), ("a", "import", "./util"), ("c", "import", "./util")} <= found
    calls = {r.name: r.module for r in references(text, "javascript", []) if r.kind == "call"}
    assert calls["View"] == "./view"
    index = "export * from './a'\nexport { b } from './b'\n"
    assert {(r.name, r.module) for r in references(index, "typescript", []) if r.kind == "import"} == {
        ("<module>", ""), ("*", "./a"), ("b", "./b")}
