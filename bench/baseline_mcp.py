"""The hand-written MCP baseline for the MCP throughput benchmark: a one-file FastMCP 4 server
with the same stays tool, calling the same handler, with no kumitate around it.

uvicorn bench.baseline_mcp:app --http httptools --no-access-log  (serves /mcp)
"""

from typing import Any

from fastmcp import FastMCP

from handlers.stays import create
from kumitate.context import CallContext
from kumitate.service import ServiceSetup
from kumitate.settings import Settings

HANDLER = create(ServiceSetup.open("stays", Settings.from_env()))  # open for the process's life
mcp = FastMCP("baseline")


@mcp.tool
def summarize_stays(stays: list[dict[str, Any]], granularity: str = "admin", mode: str = "sequence") -> dict[str, Any]:
    """Summarise GPS stay records into a Japanese travel summary and durations."""
    ctx = CallContext(service="stays", tool="summarize_stays", transport="mcp", run_id="r", trace_id="t")
    return HANDLER.summarize_stays({"stays": stays, "granularity": granularity, "mode": mode}, ctx)


app = mcp.http_app(path="/mcp")
