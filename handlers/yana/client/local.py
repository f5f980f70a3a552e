"""In-process calls through the pipeline: the generated client's backend with no socket.

`LocalBackend` hands each call to the `Pipeline` of a `Runtime` built in this process, exactly
where the HTTP and MCP transports hand theirs: input validation, deadline and commit gate,
idempotency keys, the success envelope, output checks and error mapping all run, so local mode
answers what a server would (the old local transport called the handlers and skipped all that).
It runs as the local principal (like stdio: no network peer).
"""

from __future__ import annotations

from kumitate.client import Call, Reply
from kumitate.outbound import retry_after_s
from kumitate.pipeline import CallRequest
from kumitate.runtime import Runtime


class LocalBackend:
    """An `AsyncBackend` over an in-process runtime (`owns`: close the runtime with the backend)."""

    def __init__(self, runtime: Runtime, *, owns: bool = False) -> None:
        self.runtime = runtime
        self._owns = owns

    @classmethod
    def start(cls, services: list[str], env: dict[str, str] | None = None) -> LocalBackend:
        """A runtime of its own for `services`, configured from `env` (default: the environment)."""
        from kumitate.settings import Settings

        return cls(Runtime(Settings.from_env(env), services), owns=True)

    async def send(self, call: Call) -> Reply:
        """Run the call through the runtime's pipeline in this process (transport `local`), as a server would."""
        service = self.runtime.services[call.op.service]
        request = CallRequest(
            transport="local",
            meta={"run_id": call.run_id} if call.run_id else {},
            local=True,
            idempotency_key=call.idempotency_key,
        )
        pipeline = self.runtime.pipeline
        if call.op.uri:
            resource = next(r for r in service.resources if r.name == call.op.name)
            outcome = await pipeline.read_resource(resource, call.params, request)
        else:
            tool = next(t for t in service.tools if t.name == call.op.name)
            outcome = await pipeline.call_tool(tool, call.arguments or {}, request)
        return Reply(
            ok=outcome.ok, body=outcome.body, status=outcome.status, retry_after_s=retry_after_s(outcome.headers)
        )

    async def aclose(self) -> None:
        """Close the runtime if this backend opened it."""
        if self._owns:
            self.runtime.close()
