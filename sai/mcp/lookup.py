"""The MCP tools for what an agent does after a hit (extensions of the contract's seven):
sai_read_chunk and sai_find_symbol, over lookup.py. Mixed into mcp_server.SaiTools."""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult

from sai.mcp.calls import answer_budget, key_of, tool_result
from sai.mcp.schemas import (
    ChunkId,
    Enclosing,
    EndLine,
    Glob,
    Language,
    MaxTokens,
    Neighbours,
    ReadChunkOut,
    ReadPath,
    StartLine,
    SymbolLimit,
    SymbolName,
    SymbolsOut,
)
from sai.models import clamped
from sai.output.budget import DEFAULT_TOKENS
from sai.output.payloads import fitted_chunk_context_json, fitted_definitions_json
from sai.project import Project
from sai.query import lookup


class LookupTools:
    """Method names are the tool names and their docstrings the descriptions agents read."""

    project: Project

    def sai_read_chunk(
        self, chunk_id: ChunkId = None, path: ReadPath = None, start_line: StartLine = None,
        end_line: EndLine = None, neighbours: Neighbours = 1, enclosing: Enclosing = False,
        max_tokens: MaxTokens = DEFAULT_TOKENS["read"],
    ) -> Annotated[CallToolResult, ReadChunkOut]:
        """Read a hit's full text: the rest of a chunk by its chunk_id (or path + line), with
        the chunks that surround it and, with enclosing, its enclosing class. Instead of
        opening the file."""
        budget = answer_budget(max_tokens)
        if path is not None:
            path = key_of(self.project, path)
        context = lookup.read_chunk(
            self.project, chunk_id=chunk_id, path=path, start_line=start_line, end_line=end_line,
            neighbours=neighbours, enclosing=enclosing,
        )
        return tool_result(fitted_chunk_context_json(context, budget=budget))

    def sai_find_symbol(
        self, name: SymbolName, language: Language = None, path_glob: Glob = None,
        limit: SymbolLimit = 20, max_tokens: MaxTokens = DEFAULT_TOKENS["symbol"],
    ) -> Annotated[CallToolResult, SymbolsOut]:
        """Where a name is defined: the functions, methods and classes named `name` (or ending
        in it, or starting with it), exact first. Jump to a definition."""
        budget = answer_budget(max_tokens)
        found = lookup.find_symbol(self.project, name, language=language, path_glob=path_glob,
                                   limit=clamped(limit))
        return tool_result(fitted_definitions_json(found, budget=budget))
