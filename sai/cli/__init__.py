"""The `sai` command line (sai/app.py runs it with the MCP server behind `sai mcp`)."""
