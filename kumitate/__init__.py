"""kumitate: spec-driven tool server runtime (one pipeline, MCP and HTTP)."""
