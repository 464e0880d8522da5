"""rlm-mcp: an MCP server (official SDK) exposing rlm runs, saved runs and benchmarks as tools."""

PLUGIN_NAME = "rlm-mcp"
