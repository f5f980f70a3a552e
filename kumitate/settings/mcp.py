"""MCP over streamable HTTP: sessions, the lean path, listing and paging, the signed request state."""

from __future__ import annotations

from pydantic import SecretStr

from kumitate.settings.base import EnvSettings, var

__all__ = ["McpSettings"]


class McpSettings(EnvSettings):
    """The MCP endpoints (kumitate/transports/mcp): stateless or with sessions, the lean path, tool search, pages."""

    mcp_stateless: bool | None = var(
        "KUMITATE_MCP_STATELESS",
        None,
        "MCP streamable HTTP without sessions (no affinity needed)",
        "on with a database/Redis URL, else off",
    )
    mcp_max_sessions: int = var(
        "KUMITATE_MCP_MAX_SESSIONS",
        500,
        "open MCP streamable-HTTP sessions per endpoint; one more is refused 503 with Retry-After",
        ge=1,
    )
    mcp_session_idle_s: float = var(
        "KUMITATE_MCP_SESSION_IDLE_S",
        600.0,
        "an MCP session with no request in flight for this long is closed (its id then answers 404)",
        gt=0,
    )
    mcp_tool_search: bool = var(
        "KUMITATE_MCP_TOOL_SEARCH",
        False,
        "`/mcp` (and stdio without `--service`) lists a BM25 `search_tools` and a `call_tool` proxy instead of every tool",
        "off",
    )
    mcp_lean: bool = var(
        "KUMITATE_MCP_LEAN",
        True,
        "answer stateless 2026-07-28 `tools/call` requests on the lean path (same pipeline and answers, no SDK session machinery)",
        "on",
    )
    mcp_page_size: int = var(
        "KUMITATE_MCP_PAGE_SIZE",
        100,
        "items per page of an MCP `tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`",
        ge=1,
    )
    mcp_state_secret: SecretStr | None = var(
        "KUMITATE_MCP_STATE_SECRET",
        None,
        "key that signs MCP `requestState` (2026-07-28 multi-round calls); give every instance of a cluster the same one",
        "random per process",
    )
