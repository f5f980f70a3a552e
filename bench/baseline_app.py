"""The hand-written baseline for the throughput benchmark: a minimal Litestar route
calling the same stays handler, with no kumitate pipeline around it."""

from typing import Any

from litestar import Litestar, post

from generated.stays.models import SummarizeStaysInput
from handlers.stays import create
from kumitate.context import CallContext
from kumitate.service import ServiceSetup
from kumitate.settings import Settings

HANDLER = create(ServiceSetup.open("stays", Settings.from_env()))  # open for the process's life


@post("/v1/stays/summarize_stays", status_code=200, sync_to_thread=True)
def summarize(data: dict[str, Any]) -> dict[str, Any]:
    ctx = CallContext(service="stays", tool="summarize_stays", transport="http", run_id="r", trace_id="t")
    SummarizeStaysInput.model_validate(data)  # what a hand-written route checks before the handler
    result = HANDLER.summarize_stays(data, ctx)
    return result if isinstance(result, dict) else result.model_dump(mode="json", exclude_unset=True)


app = Litestar(route_handlers=[summarize], openapi_config=None, request_max_body_size=64 * 1024 * 1024)
