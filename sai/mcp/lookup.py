"""The MCP tools for what an agent does after a hit (extensions of the contract's seven):
sai_read_chunk and sai_find_symbol, over lookup.py. Mixed into mcp_server.SaiTools."""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult

from sai.mcp.calls import key_of, tool_result
from sai.mcp.schemas import (
    ChunkId,
    Enclosing,
    EndLine,
    Glob,
    Language,
    Neighbours,
    ReadChunkOut,
    ReadPath,
    StartLine,
    SymbolLimit,
    SymbolName,
    SymbolsOut,
)
from sai.models import clamped
from sai.output.payloads import chunk_context_json, definitions_json
from sai.project import Project
from sai.query import lookup


class LookupTools:
    """Method names are the tool names and their docstrings the descriptions agents read."""

    project: Project

    def sai_read_chunk(
        self, chunk_id: ChunkId = None, path: ReadPath = None, start_line: StartLine = None,
        end_line: EndLine = None, neighbours: Neighbours = 1, enclosing: Enclosing = False,
    ) -> Annotated[CallToolResult, ReadChunkOut]:
        """Read an indexed chunk in full, with the chunks around it in its file.

        Give a hit's chunk_id, or path (relative to the project root) and start_line (end_line
        optional: the smallest chunk holding the range, else the one holding start_line).
        Returns {"chunk":{path,start_line,end_line,symbol,kind,language,chunk_id,text,stale},
        "before":[...],"after":[...],"enclosing":{...}|null}: neighbours (0-5, default 1)
        chunks before and after it, and with enclosing=true the unit it belongs to (the class of
        a method). No embedder needed. A chunk_id of code that changed since is refused: search
        again. Use it to read a hit and its context without opening the whole file.
        """
        if path is not None:
            path = key_of(self.project, path)
        context = lookup.read_chunk(
            self.project, chunk_id=chunk_id, path=path, start_line=start_line, end_line=end_line,
            neighbours=neighbours, enclosing=enclosing,
        )
        return tool_result(chunk_context_json(context))

    def sai_find_symbol(
        self, name: SymbolName, language: Language = None, path_glob: Glob = None,
        limit: SymbolLimit = 20,
    ) -> Annotated[CallToolResult, SymbolsOut]:
        """Where a name is defined: functions, methods, classes, ... whose symbol is `name`.

        Returns {"definitions":[{symbol,kind,path,start_line,end_line,language,chunk_id,match}]}:
        exact symbols first, then symbols ending in the name (computeTotal finds
        Cart.computeTotal), the same ignoring case, then symbols starting with it; match says
        which. kind is function, method, class, struct, interface, trait, enum, ... No embedder
        needed. Use it to jump to a definition by name; sai_read_chunk reads it by chunk_id.
        """
        found = lookup.find_symbol(self.project, name, language=language, path_glob=path_glob,
                                   limit=clamped(limit))
        return tool_result(definitions_json(found))
