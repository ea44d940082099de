"""Units of the languages beyond the first thirteen, over real tree-sitter parses of small files.

One small file per language (written for these tests), the units it must give as (symbol, kind)
pairs, and every non-blank line in the range and text of some chunk. Markdown and
reStructuredText are cut into heading sections; Vue and Svelte components are read through
their script blocks.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sai.chunking.base import split_lines
from sai.chunking.grammars import GRAMMARS
from sai.chunking.lines import LineChunker
from sai.chunking.sections import COMPONENTS, DOCUMENTS
from sai.chunking.treesitter import TreeSitterChunker
from sai.models import Chunk
from sai.source.languages import LANGUAGE_BY_EXT, canonical_language

SWIFT = """\
import Foundation

/// A request sent over the network.
public struct Request {
    let url: URL

    func send() -> Bool {
        return true
    }
}

extension Request {
    func retry(times: Int) {
        print(times)
    }
}

protocol Retrier {
    func shouldRetry() -> Bool
}

final class Session: NSObject {
    init(name: String) {
        super.init()
    }

    deinit {
        print("bye")
    }
}

enum Method: String {
    case get, post
}

func makeSession() -> Session {
    return Session(name: "x")
}
"""


SCALA = """\
package cats.data

import scala.util.Try

// A value that may be missing.
sealed trait Maybe[+A] {
  def map[B](f: A => B): Maybe[B]
  def isEmpty: Boolean = false
}

final case class Just[A](value: A) extends Maybe[A] {
  def map[B](f: A => B): Maybe[B] = Just(f(value))
}

object Maybe {
  def apply[A](a: A): Maybe[A] = Just(a)

  implicit val ordering: Ordering[Int] = Ordering.Int
}

class Box(val n: Int) {
  def +(other: Box): Box = new Box(n + other.n)
}

enum Color {
  case Red, Green
}

def topLevel(x: Int): Int = x + 1
"""


ELIXIR = '''\
defmodule Ecto.Repo do
  @moduledoc """
  A repository.
  """

  alias Ecto.Query

  defmacro __using__(opts) do
    quote do
      @opts unquote(opts)
    end
  end

  def all(query, opts \\\\ []) do
    Query.run(query, opts)
  end

  defp normalize(opts), do: Keyword.new(opts)

  defmodule Config do
    defstruct [:adapter]

    def new(adapter), do: %Config{adapter: adapter}
  end

  defprotocol Queryable do
    def to_query(data)
  end
end

defimpl String.Chars, for: Ecto.Repo do
  def to_string(_), do: "repo"
end
'''


LUA = """\
-- Plugin manager.
local M = {}

local Util = require("lazy.util")

function M.setup(opts)
  M.opts = opts
end

function M:load(name)
  return self.plugins[name]
end

local function helper(x)
  return x * 2
end

M.reload = function(plugin)
  helper(plugin)
end

function global_fn()
  return 1
end

return M
"""


HASKELL = """\
{-# LANGUAGE OverloadedStrings #-}
module Data.Aeson.Types
  ( Value(..)
  , parse
  ) where

import qualified Data.Text as T

-- | A JSON value.
data Value
  = Object [(T.Text, Value)]
  | Number Double
  deriving (Eq, Show)

newtype Parser a = Parser { runParser :: Maybe a }

type Pair = (T.Text, Value)

class ToJSON a where
  toJSON :: a -> Value
  toEncoding :: a -> Value
  toEncoding = toJSON

instance ToJSON Bool where
  toJSON b = Number (if b then 1 else 0)

parse :: T.Text -> Maybe Value
parse t
  | T.null t = Nothing
  | otherwise = Just (Number 0)

(.:) :: Value -> T.Text -> Maybe Value
(.:) _ _ = Nothing
"""


ZIG = """\
const std = @import("std");

/// A growable list.
pub const List = struct {
    items: []u8,

    pub fn init() List {
        return .{ .items = &.{} };
    }

    fn len(self: List) usize {
        return self.items.len;
    }
};

pub const Color = enum {
    red,
    green,

    pub fn isRed(self: Color) bool {
        return self == .red;
    }
};

pub fn main() !void {
    std.debug.print("hi\\n", .{});
}

test "list starts empty" {
    try std.testing.expect(List.init().len() == 0);
}
"""


BASH = """\
#!/usr/bin/env bash
# Test helpers.
set -e

BATS_VERSION=1.0

function bats_load() {
  local name="$1"
  source "$name"
}

bats_trim() {
  echo "${1## }"
}

function bats_quiet {
  "$@" >/dev/null
}

main() {
  bats_load "x"
}

main "$@"
"""


DART = """\
import 'package:http/http.dart';

/// A client.
abstract class Client {
  Future<String> get(String url);

  void close() {
    print('closed');
  }
}

class HttpClient extends Client {
  HttpClient(this.base);

  final String base;

  @override
  Future<String> get(String url) async {
    return base + url;
  }
}

mixin Logging {
  void log(String m) => print(m);
}

extension StringX on String {
  String shout() => toUpperCase();
}

enum Mode { fast, slow }

int twice(int x) {
  return x * 2;
}
"""


OBJC = """\
#import <Foundation/Foundation.h>

@interface Greeter : NSObject
- (void)greet:(NSString *)name;
@end

@implementation Greeter

- (void)greet:(NSString *)name {
    NSLog(@"Hello %@", name);
}

+ (instancetype)shared {
    return [[Greeter alloc] init];
}

@end

static int add(int a, int b) {
    return a + b;
}
"""


JULIA = """\
module Shapes

export area

"A circle."
struct Circle
    r::Float64
end

abstract type Shape end

function area(c::Circle)
    return pi * c.r^2
end

perimeter(c::Circle) = 2pi * c.r

macro twice(ex)
    :($ex; $ex)
end

end
"""


OCAML = """\
(* A stack. *)
open Printf

type 'a stack = { mutable items : 'a list }

let create () = { items = [] }

let push s x =
  s.items <- x :: s.items

module Counter = struct
  let count = ref 0
  let incr () = count := !count + 1
end

module type SHOW = sig
  val show : int -> string
end

class point = object
  val mutable x = 0
  method get_x = x
end
"""


PERL = """\
#!/usr/bin/perl
use strict;
use warnings;

package Animal;

sub new {
    my ($class, %args) = @_;
    return bless {%args}, $class;
}

sub speak {
    my $self = shift;
    print "...\\n";
}

package main;

sub helper { return 1 }

print Animal->new->speak;
"""


SQL = """\
-- Users and their orders.
CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL
);

CREATE VIEW active_users AS
SELECT id, name FROM users WHERE name IS NOT NULL;

CREATE INDEX users_name ON users (name);

CREATE FUNCTION add_one(x integer) RETURNS integer AS $$
BEGIN
    RETURN x + 1;
END;
$$ LANGUAGE plpgsql;

SELECT * FROM users;
"""


HCL = """\
# The network.
terraform {
  required_version = ">= 1.0"
}

variable "region" {
  default = "eu-west-1"
}

resource "aws_vpc" "main" {
  cidr_block = "10.0.0.0/16"
}

module "db" {
  source = "./db"
}

output "vpc_id" {
  value = aws_vpc.main.id
}
"""


FSHARP = """\
module Shapes.Area

open System

/// A shape.
type Shape =
    | Circle of float
    | Square of float

let area shape =
    match shape with
    | Circle r -> Math.PI * r * r
    | Square s -> s * s

type Counter() =
    let mutable n = 0
    member this.Incr() = n <- n + 1
    member this.Value = n

module Nested =
    let twice x = x * 2
"""


GROOVY = """\
package app

import groovy.transform.CompileStatic

// A greeter.
class Greeter {
    String name

    String greet() {
        return "Hello ${name}"
    }

    static Greeter of(String n) {
        new Greeter(name: n)
    }
}

interface Named {
    String getName()
}

def helper(x) {
    x * 2
}

println helper(2)
"""


SOLIDITY = """\
// SPDX-License-Identifier: MIT
pragma solidity ^0.8.0;

interface IToken {
    function transfer(address to, uint256 amount) external returns (bool);
}

contract Token is IToken {
    mapping(address => uint256) balances;

    event Sent(address to);

    modifier onlyOwner() {
        _;
    }

    constructor() {
        balances[msg.sender] = 100;
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        balances[to] += amount;
        return true;
    }
}

library Math {
    function max(uint a, uint b) internal pure returns (uint) {
        return a > b ? a : b;
    }
}
"""


POWERSHELL = """\
# Deployment helpers.
param([string]$Target = "dev")

function Get-Config {
    param([string]$Name)
    return @{ Name = $Name }
}

class Deployer {
    [string]$Target

    [void] Run() {
        Write-Host $this.Target
    }
}

Get-Config -Name $Target
"""


COMMONLISP = """\
;;;; Stack utilities.
(in-package :cl-user)

(defvar *stack* '())

(defun push-item (item)
  "Push ITEM."
  (push item *stack*))

(defmacro with-stack (&body body)
  `(let ((*stack* '())) ,@body))

(defclass point ()
  ((x :initarg :x)))

(defmethod area ((p point))
  0)

(push-item 1)
"""


VUE = """\
<template>
  <button @click="increment">{{ count }}</button>
</template>

<script setup lang="ts">
import { ref } from "vue";

const count = ref(0);

function increment(): void {
  count.value++;
}

const reset = () => {
  count.value = 0;
};
</script>

<style scoped>
button { color: red; }
</style>
"""


SVELTE = """\
<script>
  export let name = "world";

  function greet() {
    alert(`Hello ${name}`);
  }
</script>

<h1 on:click={greet}>Hello {name}!</h1>
"""


MARKDOWN = """\
---
title: SAI
---

Intro paragraph.

# SAI

Semantic search.

## Install

```sh
# not a heading
pip install sai
```

### From source v1.2

Clone it.

Configuration
-------------

Set the cache.

# Licence
MIT
"""


RST = """\
=====
 SAI
=====

Semantic search.

Install
=======

Run pip.

From source
-----------

Clone it.

Usage
=====

Run sai.
"""


UNITS: dict[str, tuple[str, set[tuple[str | None, str | None]]]] = {
    "swift": (SWIFT, {
        ("Request", "struct"), ("Request.send", "method"), ("Request", "extension"), ("Request.retry",
        "method"), ("Retrier", "protocol"), ("Session", "class"), ("Session.init", "constructor"),
        ("Session.deinit", "destructor"), ("Method", "enum"), ("makeSession", "function")
    }),
    "scala": (SCALA, {
        ("Maybe", "trait"), ("Maybe.isEmpty", "method"), ("Just", "class"), ("Just.map", "method"), ("Maybe",
        "object"), ("Maybe.apply", "method"), ("Box", "class"), ("Box.+", "method"), ("Color", "enum"),
        ("topLevel", "function")
    }),
    "elixir": (ELIXIR, {
        ("Ecto.Repo", "module"), ("Ecto.Repo.__using__", "macro"), ("Ecto.Repo.all", "function"),
        ("Ecto.Repo.normalize", "function"), ("Ecto.Repo.Config", "module"), ("Ecto.Repo.Config.new",
        "function"), ("Ecto.Repo.Queryable", "protocol"), ("Ecto.Repo.Queryable.to_query", "function"),
        ("String.Chars", "implementation"), ("String.Chars.to_string", "function")
    }),
    "lua": (LUA, {
        ("M.setup", "function"), ("M.load", "method"), ("helper", "function"), ("M.reload", "function"),
        ("global_fn", "function")
    }),
    "haskell": (HASKELL, {
        ("Value", "type"), ("Parser", "type"), ("ToJSON", "class"), ("ToJSON.toEncoding", "method"), ("ToJSON",
        "instance"), ("ToJSON.toJSON", "method"), ("parse", "function"), (".:", "function")
    }),
    "zig": (ZIG, {
        ("List", "struct"), ("List.init", "method"), ("List.len", "method"), ("Color", "enum"), ("Color.isRed",
        "method"), ("main", "function"), ("test", "test")
    }),
    "bash": (BASH, {
        ("bats_load", "function"), ("bats_trim", "function"), ("bats_quiet", "function"), ("main", "function")
    }),
    "dart": (DART, {
        ("Client", "class"), ("Client.close", "method"), ("HttpClient", "class"), ("HttpClient.get", "method"),
        ("Logging", "mixin"), ("Logging.log", "method"), ("StringX", "extension"), ("StringX.shout", "method"),
        ("Mode", "enum"), ("twice", "function")
    }),
    "objc": (OBJC, {
        ("Greeter", "interface"), ("Greeter", "class"), ("Greeter.greet", "method"), ("Greeter.shared",
        "method"), ("add", "function")
    }),
    "julia": (JULIA, {
        ("Shapes", "module"), ("Shapes.Circle", "struct"), ("Shapes.area", "function"), ("Shapes.perimeter",
        "function"), ("Shapes.twice", "macro")
    }),
    "ocaml": (OCAML, {
        ("stack", "type"), ("create", "function"), ("push", "function"), ("Counter", "module"), ("Counter.incr",
        "function"), ("SHOW", "interface"), ("point", "class")
    }),
    "perl": (PERL, {
        ("Animal.new", "function"), ("Animal.speak", "function"), ("main.helper", "function")
    }),
    "sql": (SQL, {
        ("users", "table"), ("active_users", "view"), ("users_name", "index"), ("add_one", "function")
    }),
    "hcl": (HCL, {
        ("terraform", "terraform"), ("region", "variable"), ("aws_vpc.main", "resource"), ("db", "module"),
        ("vpc_id", "output")
    }),
    "fsharp": (FSHARP, {
        ("Shapes.Area.Shape", "type"), ("Shapes.Area.area", "function"), ("Shapes.Area.Counter", "class"),
        ("Shapes.Area.Counter.Incr", "method"), ("Shapes.Area.Counter.Value", "method"), ("Shapes.Area.Nested",
        "module"), ("Shapes.Area.Nested.twice", "function")
    }),
    "groovy": (GROOVY, {
        ("Greeter", "class"), ("Greeter.greet", "method"), ("Greeter.of", "method"), ("Named", "interface"),
        ("helper", "function")
    }),
    "solidity": (SOLIDITY, {
        ("IToken", "interface"), ("Token", "contract"), ("Token.onlyOwner", "modifier"), ("Token.constructor",
        "constructor"), ("Token.transfer", "method"), ("Math", "library"), ("Math.max", "method")
    }),
    "powershell": (POWERSHELL, {
        ("Get-Config", "function"), ("Deployer", "class"), ("Deployer.Run", "method")
    }),
    "commonlisp": (COMMONLISP, {
        ("push-item", "function"), ("with-stack", "macro"), ("area", "method")
    }),
    "vue": (VUE, {
        ("increment", "function"), ("reset", "function")
    }),
    "svelte": (SVELTE, {
        ("greet", "function")
    }),
    "markdown": (MARKDOWN, {
        ("SAI", "section"), ("SAI.Install", "section"), ("SAI.Install.From source v1 2", "section"),
        ("SAI.Configuration", "section"), ("Licence", "section")
    }),
    "rst": (RST, {
        ("SAI", "section"), ("SAI.Install", "section"), ("SAI.Install.From source", "section"), ("SAI.Usage",
        "section")
    }),
}


def chunks_of(language: str) -> list[Chunk]:
    return TreeSitterChunker(max_chunk_chars=2000).chunk(f"f.{language}", UNITS[language][0], language)


@pytest.mark.parametrize("language", sorted(UNITS))
def test_units_have_their_qualified_symbols_and_kinds(language: str) -> None:
    found = {(c.symbol, c.kind) for c in chunks_of(language) if c.symbol is not None or c.kind is not None}
    assert found == UNITS[language][1]


@pytest.mark.parametrize("language", sorted(UNITS))
def test_every_non_blank_line_is_in_the_range_and_text_of_a_chunk(language: str) -> None:
    chunks = chunks_of(language)
    for number, line in enumerate(split_lines(UNITS[language][0]), start=1):
        if line.strip():
            holders = [c for c in chunks if c.start_line <= number <= c.end_line]
            assert any(line in c.text.split("\n") for c in holders), (number, line)
    assert all(c.language == language for c in chunks)


def symbols_of(text: str, language: str) -> list[str | None]:
    return [c.symbol for c in TreeSitterChunker().chunk("f", text, language)]


def test_every_language_by_extension_has_units_of_some_kind() -> None:
    covered = set(GRAMMARS) | DOCUMENTS | COMPONENTS
    assert set(LANGUAGE_BY_EXT.values()) == covered
    assert len(set(GRAMMARS)) >= 30


@pytest.mark.parametrize(
    ("value", "language"),
    [("swift", "swift"), ("EX", "elixir"), ("hs", "haskell"), ("sh", "bash"), ("bats", "bash"), ("tf", "hcl"),
     ("terraform", "hcl"), ("objective-c", "objc"), ("f#", "fsharp"), ("md", "markdown"), (".vue", "vue"),
     ("jl", "julia"), ("lisp", "commonlisp"), ("ps1", "powershell")],
)
def test_language_filters_accept_every_new_language_by_name_extension_or_alias(value: str, language: str) -> None:
    assert canonical_language(value) == language


def test_a_second_perl_package_ends_the_first_ones_reach() -> None:
    text = "package A;\nsub one { 1 }\npackage B;\nsub two { 2 }\n"
    assert symbols_of(text, "perl") == [None, "A.one", "B.two"]


def test_only_top_level_terraform_blocks_are_units() -> None:
    text = 'resource "aws_s3_bucket" "logs" {\n  lifecycle {\n    prevent_destroy = true\n  }\n}\n'
    assert symbols_of(text, "hcl") == ["aws_s3_bucket.logs"]


def test_a_haskell_signature_belongs_to_the_equation_after_it_and_no_further() -> None:
    text = "class C a where\n  f :: a -> a\n  g :: a -> a\n  g = id\n"
    chunks = TreeSitterChunker().chunk("f", text, "haskell")
    assert [(c.symbol, c.text) for c in chunks] == [
        ("C", "class C a where\n  f :: a -> a"), ("C.g", "  g :: a -> a\n  g = id"),
    ]


def test_a_component_keeps_its_template_in_the_module_chunk() -> None:
    chunks = chunks_of("vue")
    module = next(c for c in chunks if c.symbol is None)
    assert "<button @click=\"increment\">{{ count }}</button>" in module.text
    assert "count.value++;" in next(c for c in chunks if c.symbol == "increment").text


def test_a_component_without_a_script_block_is_line_windows() -> None:
    text = "<template>\n  <p>hi</p>\n</template>\n"
    assert TreeSitterChunker().chunk("f", text, "vue") == LineChunker().chunk("f", text, "vue")


def test_markdown_headings_inside_code_fences_and_front_matter_are_not_sections() -> None:
    found = symbols_of(MARKDOWN, "markdown")
    assert not any(s and "not a heading" in s for s in found) and "title: SAI" not in found
    intro = next(c for c in TreeSitterChunker().chunk("f", MARKDOWN, "markdown") if c.symbol is None)
    assert intro.text.startswith("---\ntitle: SAI\n---") and "Intro paragraph." in intro.text


def test_a_section_holds_its_text_up_to_its_first_subsection() -> None:
    chunks = chunks_of("markdown")
    install = next(c for c in chunks if c.symbol == "SAI.Install")
    assert install.text.startswith("## Install") and "pip install sai" in install.text
    assert "Clone it." not in install.text


def test_the_languages_table_in_the_configuration_docs_names_every_language_and_extension() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text(encoding="utf-8")
    section = text.split("\n## Languages\n", 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip(): line for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| language")}
    assert set(rows) == set(LANGUAGE_BY_EXT.values())
    assert all(f"`.{ext}`" in rows[language] for ext, language in LANGUAGE_BY_EXT.items())


def test_a_comment_before_a_unit_stays_with_its_enclosing_owner() -> None:
    # measured on Alamofire: doc comments inside their units gave hybrid 0.943 -> 0.943 and
    # semantic 0.867 -> 0.808, so they stay where every other language keeps them
    text = "/// Sends it.\nfunc send() {\n    run()\n}\n"
    chunks = TreeSitterChunker().chunk("f", text, "swift")
    assert [(c.symbol, c.start_line, c.end_line) for c in chunks] == [(None, 1, 1), ("send", 2, 4)]

def test_a_lua_function_in_a_table_constructor_is_a_unit_named_by_its_field() -> None:
    text = "local Spec = {\n  parse = function(s)\n    return s\n  end,\n}\nreturn Spec\n"
    assert symbols_of(text, "lua") == [None, "parse"]
