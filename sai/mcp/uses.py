"""The MCP tools that follow the code: sai_find_references, sai_find_callers, sai_find_callees
and sai_impact, over query/references.py, query/calls.py and impact.py. Read-only; mixed into
mcp/server.py's SaiTools. Their argument types are declared here, beside the tools that take them."""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from sai.chunking.reference_tables import REFERENCE_KINDS
from sai.impact import impact
from sai.mcp.calls import tool_result
from sai.mcp.schemas import Glob, Language
from sai.models import MAX_LIMIT, clamped
from sai.output.uses import CallTreeOut, ImpactOut, UsesOut, call_tree_json, impact_json, uses_json
from sai.project import Project
from sai.query import calls
from sai.query.references import find_references

UseName = Annotated[str, Field(description="a name: total, Cart.total (narrows to that class) or pkg.func")]
Kinds = Annotated[list[str] | None, Field(
    description=f"only uses of these kinds: {', '.join(REFERENCE_KINDS)} (default: all)",
    json_schema_extra={"items": {"enum": list(REFERENCE_KINDS)}},
)]
UseLimit = Annotated[int, Field(description=f"uses to return (default 20, clamped to 1-{MAX_LIMIT})",
                                json_schema_extra={"minimum": 1, "maximum": MAX_LIMIT})]
Depth = Annotated[int, Field(description=f"levels of the tree (default 1, 1-{calls.MAX_DEPTH})",
                             json_schema_extra={"minimum": 1, "maximum": calls.MAX_DEPTH})]
TreeLimit = Annotated[int, Field(description=f"entries per level (default 10, clamped to 1-{MAX_LIMIT})",
                                 json_schema_extra={"minimum": 1, "maximum": MAX_LIMIT})]
Since = Annotated[str | None, Field(description="git revision to diff against (default HEAD: the uncommitted edits)")]


USE_TOOLS = ("sai_find_references", "sai_find_callers", "sai_find_callees", "sai_impact")


class UseTools:
    """Method names are the tool names and their docstrings the descriptions agents read."""

    project: Project

    def sai_find_references(
        self, name: UseName, kinds: Kinds = None, language: Language = None, path_glob: Glob = None,
        limit: UseLimit = 20,
    ) -> Annotated[CallToolResult, UsesOut]:
        """Where a name is used: calls, imports, inheritance (extends/implements), type uses, other.

        Returns {"name","total","more","by_kind":{kind:count},"references":[{path,line,column,kind,
        name,qualifier,symbol,chunk_id,resolved,target}]}: symbol and chunk_id are the unit the
        use sits in (null symbol: module level); resolved true with target {symbol,path,
        start_line,chunk_id} when a cheap rule ties the use to one definition (self/this in its
        class, an import of a repository file, a name of the same file), false when only the
        name matched. Cart.total keeps uses resolved to Cart.total or written on a `cart`
        receiver. Resolved uses first. No embedder needed. Use it before renaming or changing a
        function; sai_read_chunk reads a use's unit by chunk_id.
        """
        found = find_references(self.project, name, limit=clamped(limit), kinds=kinds, language=language,
                                path_glob=path_glob)
        return tool_result(uses_json(found))

    def sai_find_callers(self, name: UseName, depth: Depth = 1, limit: TreeLimit = 10,
                         ) -> Annotated[CallToolResult, CallTreeOut]:
        """Who calls a name: the units (functions, methods) holding a call of it, to `depth` levels.

        Returns {"name","direction":"callers","depth","more","tree":[{symbol,path,start_line,
        end_line,chunk_id,lines,resolved,cycle,more,children:[...]}]}: lines are the calls' lines
        in that unit; resolved false when the call only matched by name; cycle true when the unit
        is already above in the tree (not expanded again); more counts what the limit left out.
        No embedder needed. Use it to see what a change to a function affects.
        """
        tree = calls.callers(self.project, name, depth=depth, limit=clamped(limit))
        return tool_result(call_tree_json(tree))

    def sai_find_callees(self, name: UseName, depth: Depth = 1, limit: TreeLimit = 10,
                         ) -> Annotated[CallToolResult, CallTreeOut]:
        """What a name's definitions call, to `depth` levels: sai_find_callers' shape, direction
        "callees". A callee resolved to a definition of the repository carries its path, lines
        and chunk_id (and is expanded further); an unresolved one has path "" and its name as
        written (`os.path.join`). No embedder needed. Use it to read what a function relies on.
        """
        tree = calls.callees(self.project, name, depth=depth, limit=clamped(limit))
        return tool_result(call_tree_json(tree))

    def sai_impact(self, since: Since = None, limit: TreeLimit = 10) -> Annotated[CallToolResult, ImpactOut]:
        """What a change touches: the indexed units that the git diff against `since` (default
        HEAD: the uncommitted edits and untracked files) changes, each with its callers and the
        near-duplicates of it that the diff did not change ("copies left behind").

        Returns {"since","changed_files","more","units":[{symbol,kind,path,start_line,end_line,
        chunk_id,callers:[...],callers_more,copies:[{symbol,path,start_line,end_line,chunk_id,
        score}]}]}, units with copies left behind first. It reads the index as it is: refresh
        the changed files first (sai_refresh, or a server with --watch). Use it before
        committing an edit, to catch the copies that need the same fix.
        """
        return tool_result(impact_json(impact(self.project, since=since, limit=clamped(limit))))
