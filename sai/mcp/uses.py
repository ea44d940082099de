"""The MCP tools that follow the code: sai_find_references, sai_find_callers, sai_find_callees
and sai_impact, over query/references.py, query/calls.py and impact.py. Read-only; mixed into
mcp/server.py's SaiTools. Their argument types are declared here, beside the tools that take them."""

from __future__ import annotations

from typing import Annotated, Any

from mcp_types import CallToolResult
from pydantic import Field

from sai.chunking.reference_tables import REFERENCE_KINDS
from sai.impact import impact
from sai.mcp.calls import answer_budget, tool_result
from sai.mcp.schemas import MaxTokens
from sai.models import MAX_LIMIT, clamped
from sai.output.budget import DEFAULT_TOKENS
from sai.output.uses import CallTreeOut, ImpactOut, UsesOut, fitted_call_tree_json, fitted_impact_json, fitted_uses_json
from sai.project import Project
from sai.query import calls
from sai.query.references import find_references

UseName = Annotated[str, Field(description="total, Cart.total or pkg.func")]


def _kinds(schema: dict[str, Any]) -> None:
    """An optional list of kinds as one short schema: no anyOf, the kinds as the items' enum."""
    schema.pop("anyOf", None)
    schema.update(type=["array", "null"], items={"enum": list(REFERENCE_KINDS)})


Kinds = Annotated[list[str] | None, Field(json_schema_extra=_kinds)]
UseLimit = Annotated[int, Field(description="most uses", json_schema_extra={"minimum": 1, "maximum": MAX_LIMIT})]
Depth = Annotated[int, Field(json_schema_extra={"minimum": 1, "maximum": calls.MAX_DEPTH})]
TreeLimit = Annotated[int, Field(description="most per level", json_schema_extra={"minimum": 1, "maximum": MAX_LIMIT})]
UnitLimit = Annotated[int, Field(description="most units", json_schema_extra={"minimum": 1, "maximum": MAX_LIMIT})]
Since = Annotated[str | None, Field(description="git revision (default HEAD)")]


USE_TOOLS = ("sai_find_references", "sai_find_callers", "sai_find_callees", "sai_impact")


class UseTools:
    """Method names are the tool names and their docstrings the descriptions agents read."""

    project: Project

    def sai_find_references(
        self, name: UseName, kinds: Kinds = None, limit: UseLimit = 20,
        max_tokens: MaxTokens = DEFAULT_TOKENS["refs"],
    ) -> Annotated[CallToolResult, UsesOut]:
        """Where a name is used, each in its unit (chunk_id); resolved when one target fits.
        Cart.total narrows to that class."""
        budget = answer_budget(max_tokens)
        found = find_references(self.project, name, limit=clamped(limit), kinds=kinds)
        return tool_result(fitted_uses_json(found, budget=budget))

    def sai_find_callers(self, name: str, depth: Depth = 1, limit: TreeLimit = 10,
                         max_tokens: MaxTokens = DEFAULT_TOKENS["calls"]) -> Annotated[CallToolResult, CallTreeOut]:
        """Who calls a name, as a tree."""
        budget = answer_budget(max_tokens)
        tree = calls.callers(self.project, name, depth=depth, limit=clamped(limit))
        return tool_result(fitted_call_tree_json(tree, budget=budget))

    def sai_find_callees(self, name: str, depth: Depth = 1, limit: TreeLimit = 10,
                         max_tokens: MaxTokens = DEFAULT_TOKENS["calls"]) -> Annotated[CallToolResult, CallTreeOut]:
        """What a name calls, as a tree."""
        budget = answer_budget(max_tokens)
        tree = calls.callees(self.project, name, depth=depth, limit=clamped(limit))
        return tool_result(fitted_call_tree_json(tree, budget=budget))

    def sai_impact(self, since: Since = None, limit: UnitLimit = 10,
                   max_tokens: MaxTokens = DEFAULT_TOKENS["impact"]) -> Annotated[CallToolResult, ImpactOut]:
        """The units the diff against since changes, their callers, and copies it left behind."""
        budget = answer_budget(max_tokens)
        found = impact(self.project, since=since, limit=clamped(limit))
        return tool_result(fitted_impact_json(found, budget=budget))
