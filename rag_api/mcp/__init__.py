"""The Model Context Protocol surface: the hub's knowledge bases as tools an agent calls
(`/mcp` on the running server, `rag-hub mcp` over stdio); docs/mcp.md."""
