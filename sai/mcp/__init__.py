"""The MCP server for coding agents (stdio and HTTP)."""
