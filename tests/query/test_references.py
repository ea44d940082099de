"""References, callers and callees over a small multi-language tree, indexed for real (tree-sitter
parses, the Ollama stand-in) into the tests' MemoryStore (the store's references verbs are the
contract's, tests/store/test_store_contract.py): what `sai refs` finds, resolves and narrows."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures_tree import open_served, write_tree
from memory_store import MemoryReader, MemoryStore
from ollama_standin import OllamaStandIn

from sai.indexing import indexer
from sai.models import MODULE_MARK, STAR_IMPORT, Use
from sai.project import Project
from sai.query import references as references_module
from sai.query.references import KnownUses, find_references, split_name

PY_MODELS = '''\
class Cart:
    def __init__(self):
        self.items = []

    def total(self):
        return sum(self.price(i) for i in self.items)

    def price(self, item):
        return item.cost


def make_cart():
    return Cart()
'''
PY_APP = '''\
from shop.models import Cart, make_cart
from shop import models


class Basket(Cart):
    def total(self):
        return 0


def checkout(cart: Cart) -> int:
    basket = make_cart()
    other = models.make_cart()
    return cart.total() + basket.total() + other.total()
'''
TS_ITEM = ("export interface Item {\n  price: number;\n}\n\n"
           "export function priceOf(item: Item): number {\n  return item.price;\n}\n")
TS_CART = '''\
import { Item, priceOf } from "./item";

export class Cart implements Sized {
  items: Item[] = [];

  total(): number {
    return this.items.reduce((sum, item) => sum + priceOf(item), 0);
  }

  size(): number {
    return this.total() > 0 ? 1 : 0;
  }
}
'''
GO_UTIL = "package util\n\nfunc Clamp(x int) int {\n\tif x < 0 {\n\t\treturn 0\n\t}\n\treturn x\n}\n"
GO_MAIN = '''\
package main

import (
\t"fmt"
\t"example.com/app/util"
)

type Server struct{ port int }

func (s *Server) Start() {
\tfmt.Println(util.Clamp(s.port))
\ts.Stop()
}

func (s *Server) Stop() {}
'''
RUST_LIB = '''\
mod shapes;
use crate::shapes::area;

pub struct Square { side: f64 }

impl Shape for Square {
    fn size(&self) -> f64 {
        area(self.side) + self.scale()
    }
}

impl Square {
    fn scale(&self) -> f64 { 1.0 }
}
'''
RUST_SHAPES = "pub fn area(side: f64) -> f64 {\n    side * side\n}\n"
JAVA_BASE = "package com.shop;\n\npublic class Base {\n    public int weight() {\n        return 1;\n    }\n}\n"
JAVA_BOX = '''\
package com.shop;

import com.shop.Base;

public class Box extends Base implements Comparable<Box> {
    public int heavier() {
        return this.weight() + new Base().weight();
    }
}
'''
C_HEADER = "int add(int a, int b);\n"
C_SOURCE = '''\
#include "mathx.h"

int add(int a, int b) {
    return a + b;
}

int twice(int a) {
    return add(a, a);
}
'''
CPP_SOURCE = '''\
#include "mathx.h"

class Counter : public Base {
public:
    int next() {
        return this->step() + add(1, 2);
    }
    int step() { return 1; }
};
'''
TREE = {
    "shop/__init__.py": "", "shop/models.py": PY_MODELS, "shop/app.py": PY_APP,
    "web/item.ts": TS_ITEM, "web/cart.ts": TS_CART,
    "go/util/util.go": GO_UTIL, "go/main.go": GO_MAIN,
    "rs/lib.rs": RUST_LIB, "rs/shapes.rs": RUST_SHAPES,
    "java/com/shop/Base.java": JAVA_BASE, "java/com/shop/Box.java": JAVA_BOX,
    "c/mathx.h": C_HEADER, "c/mathx.c": C_SOURCE, "c/counter.cpp": CPP_SOURCE,
}
CONFIG = "root: .\next: [py, ts, go, rs, java, c, h, cpp]\n"


@contextlib.contextmanager
def indexed(where: Path, standin: OllamaStandIn, files: dict[str, str], config: str) -> Iterator[Project]:
    """`files` and `config` (sai-cfg.yml) written under `where`, indexed into a MemoryStore."""
    project = open_served(write_tree(where, {**files, "sai-cfg.yml": config}), standin, store=MemoryStore())
    try:
        indexer.index(project)
        yield project
    finally:
        project.close()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, standin: OllamaStandIn) -> Iterator[Project]:
    with indexed(tmp_path_factory.mktemp("refs"), standin, TREE, CONFIG) as opened:
        yield opened


def places(uses: tuple[Use, ...], kind: str | None = None) -> set[tuple[str, int]]:
    return {(u.reference.path, u.reference.line) for u in uses if kind is None or u.reference.kind == kind}


def test_python_calls_imports_and_inheritance_of_a_class_are_found(project: Project) -> None:
    found = find_references(project, "Cart", limit=50)
    kinds = {(u.reference.path, u.reference.line): u.reference.kind for u in found.uses}
    assert kinds[("shop/app.py", 1)] == "import"
    assert kinds[("shop/app.py", 5)] == "inherit"
    assert kinds[("shop/app.py", 10)] == "type"
    assert kinds[("shop/models.py", 13)] == "call"
    assert found.by_kind["call"] >= 1 and found.total == len(found.uses)


def test_an_imported_python_function_resolves_to_its_definition(project: Project) -> None:
    found = find_references(project, "make_cart", kinds=["call"])
    assert places(found.uses) == {("shop/app.py", 11), ("shop/app.py", 12)}
    assert all(u.resolved and u.target is not None and u.target.path == "shop/models.py" for u in found.uses)


def test_self_calls_resolve_to_the_own_class_and_a_qualified_name_narrows(project: Project) -> None:
    price = find_references(project, "Cart.price", kinds=["call"])
    assert places(price.uses) == {("shop/models.py", 6)}
    assert price.uses[0].resolved and price.uses[0].target is not None
    assert price.uses[0].reference.unit == "Cart.total" and price.uses[0].reference.chunk_id
    assert places(find_references(project, "Invoice.total").uses) == set()  # no use says Invoice
    written = find_references(project, "basket.total", kinds=["call"])
    assert ("shop/app.py", 13) in places(written.uses)
    assert not any(u.resolved for u in written.uses)  # `basket = make_cart()`: its type is not known
    typed = [u for u in find_references(project, "Cart.total", kinds=["call"]).uses
             if u.reference.path == "shop/app.py"]
    assert [(u.reference.qualifier, u.resolved) for u in typed] == [("cart", True)]  # `cart: Cart`
    assert typed[0].target is not None and typed[0].target.path == "shop/models.py"


def test_typescript_imports_this_calls_and_implements(project: Project) -> None:
    price_of = find_references(project, "priceOf")
    assert {(u.reference.kind, u.reference.line, u.resolved) for u in price_of.uses
            if u.reference.path == "web/cart.ts"} == {("import", 1, True), ("call", 7, True)}
    assert ("web/cart.ts", 11) in places(find_references(project, "Cart.total").uses, "call")
    assert ("web/cart.ts", 3) in places(find_references(project, "Sized").uses, "inherit")
    assert ("web/item.ts", 5) in places(find_references(project, "Item").uses, "type")


def test_go_package_calls_resolve_through_the_import_path(project: Project) -> None:
    clamp = find_references(project, "Clamp", kinds=["call"])
    assert places(clamp.uses) == {("go/main.go", 11)}
    assert clamp.uses[0].resolved and clamp.uses[0].target is not None
    assert clamp.uses[0].target.path == "go/util/util.go"
    assert ("go/main.go", 12) in places(find_references(project, "Server.Stop").uses, "call")
    assert ("go/main.go", 4) in places(find_references(project, "fmt").uses, "import")


def test_rust_use_paths_trait_impls_and_self_calls(project: Project) -> None:
    area = find_references(project, "area")
    assert {(u.reference.kind, u.resolved) for u in area.uses if u.reference.path == "rs/lib.rs"} == {
        ("import", True), ("call", True)}
    assert ("rs/lib.rs", 6) in places(find_references(project, "Shape").uses, "inherit")
    scale = find_references(project, "Square.scale", kinds=["call"])
    assert places(scale.uses) == {("rs/lib.rs", 8)}


def test_java_extends_implements_this_and_new(project: Project) -> None:
    base = find_references(project, "Base")
    assert ("java/com/shop/Box.java", 5) in places(base.uses, "inherit")
    assert ("java/com/shop/Box.java", 7) in places(base.uses, "call")  # new Base()
    assert ("java/com/shop/Box.java", 3) in places(base.uses, "import")
    weight = find_references(project, "weight", kinds=["call"])
    assert places(weight.uses) == {("java/com/shop/Box.java", 7)}


def test_c_and_cpp_calls_includes_and_base_classes(project: Project) -> None:
    add = find_references(project, "add", kinds=["call"])
    assert places(add.uses) == {("c/mathx.c", 8), ("c/counter.cpp", 6)}
    assert ("c/counter.cpp", 3) in places(find_references(project, "Base").uses, "inherit")
    assert ("c/mathx.c", 1) in places(find_references(project, "mathx").uses, "import")
    step = find_references(project, "Counter.step", kinds=["call"])
    assert places(step.uses) == {("c/counter.cpp", 6)} and step.uses[0].resolved


SCOPES = {  # `app` and `pop` are defined once each; most other uses of those names are locals or members
    "pkg/__init__.py": "",
    "pkg/server.py": "def app(environ):\n    return environ\n\n\ndef pop(items):\n    return items[-1]\n",
    "pkg/wsgi.py": "class Handler:\n    def __init__(self, app):\n        self.app = app\n\n"
                   "    def run(self, items):\n        items.pop()\n        return self.app(items)\n",
    "pkg/client.py": "from pkg.server import app\n\n\ndef call():\n    return app({})\n",
    "pkg/star.py": "from pkg.server import *\n\n\ndef call():\n    return app({})\n",
    "pkg/mod.py": "from pkg import server\n\n\ndef last(items):\n    return server.pop(items)\n",
}


def test_python_uses_its_scopes_say_are_locals_or_members_are_left_out(
        tmp_path_factory: pytest.TempPathFactory, standin: OllamaStandIn) -> None:
    with indexed(tmp_path_factory.mktemp("scopes"), standin, SCOPES, "root: .\next: [py]\n") as project:
        app = find_references(project, "app", limit=50)
        # wsgi.py's `app` is a parameter and `self.app` a member: neither is pkg/server.py's app
        assert places(app.uses) - places(app.uses, "import") == {("pkg/client.py", 5), ("pkg/star.py", 5)}
        assert [u.resolved for u in app.uses if u.reference.path == "pkg/star.py"] == [False]  # may be it
        pop = find_references(project, "pop", kinds=["call"])
        assert places(pop.uses) == {("pkg/mod.py", 5)}  # `items.pop()` is a list's
        assert pop.uses[0].resolved
        assert find_references(project, "environ").total == 1  # no definition: every use of the name


ES_SCOPES = {  # `Response` is declared once in an ES module; most files mean the platform's
    "src/types.ts": "export interface Response {\n  ok: boolean\n}\n",
    "src/client.ts": "import { Response } from './types'\n\nexport function ok(r: Response): boolean {\n"
                     "  return r.ok\n}\n",
    "src/server.ts": "export function reply(): Response {\n  return new Response('hi')\n}\n",
    "src/script.js": "function legacy() {\n  return new Response('old')\n}\n",  # no import or export: a script
    "types/env.d.ts": "declare function fetchAll(): void\n",
    "src/utils.ts": "export function trim(s: string): string {\n  return s\n}\nexport default { trim }\n",
    "src/headers.ts": "import utils from './utils'\n\nexport function clean(h: string) {\n"
                      "  return utils.trim(h) + h.trim()\n}\n",
    "src/use.ts": "export function go() {\n  fetchAll()\n}\n",
}


def test_an_es_modules_undeclared_names_are_globals_unless_a_d_ts_declares_them(
        tmp_path_factory: pytest.TempPathFactory, standin: OllamaStandIn) -> None:
    with indexed(tmp_path_factory.mktemp("es"), standin, ES_SCOPES, "root: .\next: [ts, js]\n") as project:
        response = find_references(project, "Response", limit=50)
        # server.ts is a module that neither declares nor imports it; script.js is no module
        assert places(response.uses) - places(response.uses, "import") == {("src/client.ts", 3),
                                                                           ("src/script.js", 2)}
        assert [u.resolved for u in response.uses if u.reference.path == "src/client.ts"] == [True, True]
        assert places(find_references(project, "fetchAll").uses) == {("src/use.ts", 2)}  # a .d.ts declares it
        trim = find_references(project, "trim", kinds=["call"])
        assert [(u.reference.path, u.reference.qualifier) for u in trim.uses] == [("src/headers.ts", "utils")]


def test_after_a_few_files_change_only_their_marks_are_read_again(
        tmp_path_factory: pytest.TempPathFactory, standin: OllamaStandIn, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path_factory.mktemp("marks")
    with indexed(root, standin, {**SCOPES, **ES_SCOPES}, "root: .\next: [py, ts, js]\n") as project:
        with project.store.read() as reader:
            before = references_module._marks(reader)
        assert before[STAR_IMPORT] == {"pkg/star.py"} and "src/script.js" not in before[MODULE_MARK]
        (root / "pkg/client.py").write_text("from pkg.wsgi import *\n" + SCOPES["pkg/client.py"], encoding="utf-8")
        (root / "src/script.js").write_text(ES_SCOPES["src/script.js"] + "export const x = 1\n", encoding="utf-8")
        (root / "pkg/star.py").unlink()
        indexer.index(project)
        read_whole = []
        monkeypatch.setattr(MemoryReader, "files_using", lambda self, names: read_whole.append(names) or {})
        with project.store.read() as reader:
            after = references_module._marks(reader)
        monkeypatch.undo()
        with project.store.read() as reader:
            whole = {name: frozenset(keys) for name, keys in reader.files_using([STAR_IMPORT, MODULE_MARK]).items()}
        assert not read_whole and after == whole
        assert after[STAR_IMPORT] == {"pkg/client.py"} and "src/script.js" in after[MODULE_MARK]


def test_marks_read_by_threads_while_the_index_changes_are_each_states_own(
        tmp_path_factory: pytest.TempPathFactory, standin: OllamaStandIn) -> None:
    """Readers in threads, each at whatever state it sees, while runs add and remove a star
    import: the marks each is handed are those a whole read of its own state finds."""
    root = tmp_path_factory.mktemp("marks-threads")
    wrong: list[str] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            with project.store.read() as reader:
                got = references_module._marks(reader)
                whole = {name: frozenset(keys) for name, keys in reader.files_using([STAR_IMPORT, MODULE_MARK]).items()}
            if got != whole:
                wrong.append(f"{got} != {whole}")

    with indexed(root, standin, SCOPES, "root: .\next: [py]\n") as project:
        readers = [threading.Thread(target=read) for _ in range(3)]
        for thread in readers:
            thread.start()
        try:
            for n in range(8):
                head = "from pkg.wsgi import *\n" if n % 2 == 0 else ""
                (root / "pkg/client.py").write_text(head + SCOPES["pkg/client.py"], encoding="utf-8")
                indexer.index(project)
        finally:
            done.set()
            for thread in readers:
                thread.join()
    assert not wrong, wrong[:3]


FOLLOWED = {  # a package re-exporting its modules' names, a nested helper, a private member, an index file
    "pkg/__init__.py": "from .core import echo as echo\nfrom .more import *\n",
    "pkg/core.py": "def echo(text):\n    return text\n\n\ndef outer():\n    def helper():\n        return 1\n\n"
                   "    def inner():\n        return helper()\n    return inner()\n",
    "pkg/more.py": "def shout(text):\n    return text\n",
    "pkg/base.py": "class Base:\n    def __init__(self, name):\n        self.name = name\n",
    "pkg/child.py": "from pkg.base import Base\n\n\nclass Child(Base):\n    def __init__(self):\n"
                    "        super().__init__('c')\n",
    "app.py": "import pkg\nfrom pkg import shout\n\n\ndef main():\n    pkg.echo('a')\n    return shout('b')\n",
    "web/hono.ts": "export class Hono {\n  #clone(): Hono {\n    const clone = new Hono()\n    return clone\n  }\n"
                   "  route(): Hono {\n    return this.#clone()\n  }\n}\n",
    "web/util/index.ts": "export function trim(s: string): string {\n  return s\n}\n",
    "web/use.ts": "import { trim } from './util'\n\nexport const t = trim(' a ')\n",
    "tests/test_local.py": "def test_one():\n    class A:\n        def f(self):\n            return 1\n"
                           "    return A().f()\n\n\ndef test_two():\n    class A:\n"
                           "        def f(self):\n            return 2\n    a = A()\n    return a.f()\n",
}


def test_an_imported_name_is_followed_through_re_exports_and_a_module_qualified_name_narrows(
        tmp_path_factory: pytest.TempPathFactory, standin: OllamaStandIn) -> None:
    with indexed(tmp_path_factory.mktemp("followed"), standin, FOLLOWED, "root: .\next: [py, ts]\n") as project:
        echo = find_references(project, "core.echo", kinds=["call"])
        assert [(u.reference.path, u.resolved) for u in echo.uses] == [("app.py", True)]  # through __init__
        shout = find_references(project, "more.shout", kinds=["call"])
        assert [(u.reference.path, u.resolved) for u in shout.uses] == [("app.py", True)]  # through `*`
        helper = find_references(project, "outer.helper", kinds=["call"])
        assert [(u.reference.unit, u.resolved) for u in helper.uses] == [("outer.inner", True)]
        base = find_references(project, "Base.__init__", kinds=["call"])
        assert [(u.reference.path, u.resolved) for u in base.uses] == [("pkg/child.py", True)]  # super()
        private = find_references(project, "Hono.#clone")
        assert [(u.reference.line, u.resolved) for u in private.uses] == [(7, True)]  # not the local `clone`
        local = find_references(project, "test_one.A.f", kinds=["call"])  # not test_two's own class A
        assert [(u.reference.line, u.resolved) for u in local.uses] == [(5, True)]
        trim = find_references(project, "util.trim", kinds=["call"])
        assert [(u.reference.path, u.resolved) for u in trim.uses] == [("web/use.ts", True)]  # util/index.ts


def test_a_qualified_name_read_alone_finds_what_narrowing_every_use_of_its_name_finds(
        tmp_path_factory: pytest.TempPathFactory, standin: OllamaStandIn) -> None:
    root = write_tree(tmp_path_factory.mktemp("members"), {**TREE, **FOLLOWED, "sai-cfg.yml": CONFIG})
    project = open_served(root, standin)  # the config's DuckDB index
    try:
        indexer.index(project)
        asked = ["Cart.total", "Base.__init__", "core.echo", "shop.models.make_cart", "Hono.#clone", "Basket.total",
                 "test_one.A.f"]
        with project.store.read() as reader:
            for name in asked:
                last = split_name(name)[1]
                alone = KnownUses(reader, [name]).of(name)  # keeps the uses the name may mean
                assert alone == KnownUses(reader, [name, last]).of(name), name  # every use of `last` kept
            lasts = [split_name(name)[1] for name in asked]
            kept = KnownUses(reader, asked)
            assert 0 < sum(len(kept.of(name)) for name in asked) <= sum(map(len, kept._refs.values())) \
                < len(reader.references(lasts))
    finally:
        project.close()
