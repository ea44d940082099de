"""One small source file per language (written for the tests), and UNITS: each language's file
with the units the tree-sitter chunker must give for it as (symbol, kind) pairs
(tests/chunking/test_chunking_languages.py; test_reference_extraction.py parses the same files)."""

from __future__ import annotations

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
