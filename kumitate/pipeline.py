"""The one invocation pipeline every transport calls.

Each tool and resource gets its own chain of steps (kumitate/steps, one concern each, built
once with only the steps its policy needs):

    deprecation -> errors -> auth/scopes -> rate limit -> read body -> idempotency -> errors
    -> output size -> result (envelope, output check) -> deadline -> handler (input validation)

then one metrics sample and one log line. Before all of it, admission (kumitate.serving.admission): a
service at its bound of calls in flight answers 503 at once instead of queueing. Adapters only
translate the wire format into a `CallRequest` and an `Outcome` back, so a tool behaves the same
on MCP and HTTP.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from kumitate.bindings import PromptBinding, ResourceBinding, ServiceBinding, ToolBinding
from kumitate.callstate import CallState
from kumitate.catalogue import CatalogueEntry
from kumitate.changes import ResourceChanges
from kumitate.context import CallContext, Principal, bound
from kumitate.errors import ToolError
from kumitate.intake import Intake
from kumitate.observability import calllog, correlation, tracing
from kumitate.observability.metrics import Metrics
from kumitate.offloop import CheckPool, OffLoopIntake
from kumitate.policies.bundle import Policies
from kumitate.policies.spec import Policy
from kumitate.serving.admission import CALLS_PER_THREAD, Admission, overloaded
from kumitate.serving.bulkhead import Bulkhead
from kumitate.steps import Call, CallNext, CallRequest, Outcome, Step, compose
from kumitate.steps.auth import Authenticate, authenticate
from kumitate.steps.body import read_body
from kumitate.steps.deadline import Deadline, timeout_s
from kumitate.steps.deprecation import Deprecated
from kumitate.steps.errors import ErrorMap, Errors
from kumitate.steps.idempotency import Idempotent
from kumitate.steps.invoke import Handler, InvokePrompt, InvokeResource, InvokeTool
from kumitate.steps.output_size import OutputSize
from kumitate.steps.ratelimit import RateLimited
from kumitate.steps.result import OutputCheck, Result

if TYPE_CHECKING:
    pass

__all__ = ["CallRequest", "Outcome", "Pipeline", "Policies"]

CONNECT = Policy()
"""Admission of a connection before any tool is named: a valid token, no scope."""


class Pipeline:
    """The one invocation pipeline every call passes exactly once, whatever the transport: correlation,
    authentication, rate limit, idempotency, validation, the handler under its deadline, output checks, log."""

    def __init__(
        self,
        catalogue: Mapping[str, CatalogueEntry],
        services: Mapping[str, ServiceBinding],
        handlers: Mapping[str, Any],
        policies: Policies | None = None,
        disabled: Iterable[str] = (),
    ) -> None:
        """Everything a chain is built from is given here, so a chain built on a binding's first call
        sees the pipeline complete: `disabled` are the keys of opt-in resources not enabled here."""
        self.catalogue = catalogue
        self.services = services
        self.handlers = handlers
        self.policies = policies or Policies()
        self.disabled: frozenset[str] = frozenset(disabled)
        """Keys of opt-in resources not enabled here: NOT_FOUND, after auth like any other route."""
        self.intake = Intake()
        self.checks = CheckPool()
        """Worker processes for the schema checks of large bodies (started by the first)."""
        self.large = OffLoopIntake(self.intake, self.checks, self.policies.off_loop_bytes)
        self.errors = ErrorMap(catalogue)
        self.bulkheads = {
            name: Bulkhead(
                name,
                self.policies.service_threads.get(name, self.policies.worker_threads),
                self.policies.bulkhead_wait_s,
            )
            for name in services
        }
        self.admissions = {
            name: Admission(
                name,
                self.policies.in_flight.get(name, CALLS_PER_THREAD * bulkhead.limit),
                self.policies.admission_wait_s,
                self.policies.admission_queue_s,
            )
            for name, bulkhead in self.bulkheads.items()
        }
        self.changes = ResourceChanges()
        """Resources the handlers say changed, for what serves subscriptions (kumitate.changes)."""
        self.metrics = Metrics(queue_depth=lambda: sum(b.waiting for b in self.bulkheads.values()))
        self._chains: dict[int, tuple[ToolBinding | ResourceBinding | PromptBinding, CallNext]] = {}

    def close(self) -> None:
        """Stop taking sync work; calls already running finish on their own threads."""
        for bulkhead in self.bulkheads.values():
            bulkhead.close()
        self.checks.close()

    def error_outcome(self, exc: ToolError, run_id: str, trace_id: str) -> Outcome:
        """The catalogue's error body for `exc` (transports use it for their own refusals too)."""
        return self.errors.outcome(exc, run_id, trace_id)

    # -- chains ----------------------------------------------------------------------------
    def _chain(self, binding: ToolBinding | ResourceBinding | PromptBinding) -> CallNext:
        """The binding's chain, built on its first call from what the constructor was given."""
        found = self._chains.get(id(binding))
        if found is None or found[0] is not binding:
            if isinstance(binding, ToolBinding):
                chain = self._tool_chain(binding)
            elif isinstance(binding, PromptBinding):
                chain = self._prompt_chain(binding)
            else:
                chain = self._resource_chain(binding)
            found = self._chains[id(binding)] = (binding, chain)
        return found[1]

    def _check(self, schema: dict[str, Any] | None) -> OutputCheck | None:
        return OutputCheck(self.intake.validator(schema)) if schema is not None else None

    def _admission(self, binding: ToolBinding | ResourceBinding | PromptBinding) -> list[Step]:
        steps: list[Step] = [Errors(self.errors), Authenticate(self.policies, binding.policy)]
        if binding.policy.rate_limit is not None:
            steps.append(RateLimited(self.policies.limiter, binding.key, binding.policy.rate_limit))
        return steps

    def _running(self, binding: ToolBinding | ResourceBinding | PromptBinding, check: OutputCheck | None) -> list[Step]:
        steps: list[Step] = [Result(self.services[binding.service], check)]
        seconds = timeout_s(binding.policy.timeout_ms, self.policies.max_timeout_ms)
        if seconds or (isinstance(binding, ToolBinding) and binding.task_timeout_s):
            steps.append(Deadline(binding.name, seconds or 0.0, self.policies.commit_grace_s))
        return steps

    def _handler(self, binding: ToolBinding | ResourceBinding | PromptBinding, method_name: str) -> Handler:
        return Handler(
            getattr(self.handlers[binding.service], method_name), self.bulkheads[binding.service], binding.allowed
        )

    def _tool_chain(self, binding: ToolBinding) -> CallNext:
        rules = binding.policy
        check = self._check(binding.output_schema)
        steps: list[Step] = []
        if binding.deprecated:
            steps.append(Deprecated(binding.name, binding.deprecated))
        steps += self._admission(binding)
        steps.append(read_body)
        if rules.idempotency and self.policies.idempotency is not None:
            # a synchronous call's claim lasts as long as its deadline; a task's, as the task may run (Idempotent)
            seconds = timeout_s(rules.timeout_ms, self.policies.max_timeout_ms)
            idempotent = Idempotent(self.policies.idempotency, binding.key, rules.idempotency_ttl_s, seconds)
            steps += [idempotent, Errors(self.errors)]
        if rules.max_output_bytes:
            in_body = "warnings" in binding.output_schema.get("properties", {})
            steps.append(OutputSize(binding.name, rules.max_output_bytes, rules.on_oversize, in_body, check))
        steps += self._running(binding, check)
        return compose(steps, InvokeTool(binding, self._handler(binding, binding.name), self.intake, self.large))

    def _resource_chain(self, binding: ResourceBinding) -> CallNext:
        invoke = InvokeResource(
            binding, self._handler(binding, binding.method_name), lambda: binding.key in self.disabled
        )
        check = self._check(binding.output_schema) if binding.is_json else None
        return compose([*self._admission(binding), *self._running(binding, check)], invoke)

    def _prompt_chain(self, binding: PromptBinding) -> CallNext:
        invoke = InvokePrompt(binding, self._handler(binding, binding.method_name))
        return compose([*self._admission(binding), *self._running(binding, None)], invoke)

    # -- one call --------------------------------------------------------------------------
    def _context(self, service: str, name: str, request: CallRequest) -> CallContext:
        if request.ids is not None and request.meta is None:
            run_id, trace_id = request.ids
        else:
            run_id, trace_id = correlation.from_meta(request.meta, request.ids)
        return CallContext(
            service=service,
            tool=name,
            transport=request.transport,
            run_id=run_id,
            trace_id=trace_id,
            principal=Principal(),
            credentials=request.authorization,
            public_url=self.policies.public_url or request.base_url or self.policies.served_url,
            routes=self.services[service].routes if service in self.services else {},
            state=CallState(
                run_id,
                progress_sink=request.progress,
                asker=request.asker,
                log_sink=request.log,
                change_sink=self.changes.publish,
            ),
        )

    def _finish(self, outcome: Outcome, ctx: CallContext, transport: str, started: float) -> Outcome:
        seconds = time.perf_counter() - started
        self.metrics.observe(ctx.service, ctx.tool, transport, outcome.code, seconds, replayed=outcome.replayed)
        calllog.log_call(
            service=ctx.service,
            tool=ctx.tool,
            transport=transport,
            run_id=ctx.run_id,
            trace_id=ctx.trace_id,
            principal=ctx.principal.id,
            outcome=outcome.code,
            status=outcome.status,
            duration_ms=round(seconds * 1000, 2),
        )
        return outcome

    async def _through(self, call: Call) -> Outcome:
        started = time.perf_counter()
        binding, ctx = call.binding, call.ctx
        request = call.request
        admission = self.admissions[binding.service]
        try:
            await admission.enter()  # before anything is read or run: shedding must cost little
        except ToolError as exc:
            return self._finish(self.error_outcome(exc, ctx.run_id, ctx.trace_id), ctx, request.transport, started)
        try:
            with (
                self.metrics.running(binding.service, binding.name),
                bound(ctx),
                tracing.call(binding.key, request.transport, request.headers, request.meta) as span,
            ):
                outcome = await self._chain(binding)(call)
                tracing.finish(span, outcome.run_id, outcome.trace_id, outcome.code, outcome.status)
        finally:
            admission.exit()
        return self._finish(outcome, ctx, request.transport, started)

    # -- entry points ----------------------------------------------------------------------
    async def call_tool(
        self,
        binding: ToolBinding,
        arguments: object,
        request: CallRequest,
        *,
        read: Callable[[], Awaitable[object]] | None = None,
    ) -> Outcome:
        """Run one tool call. `read`, when given, produces the arguments and is awaited only after
        the caller is admitted: an HTTP body is not read or parsed for a caller without a valid
        token (or over its rate limit), so such a caller gets 401/403/429, never 400/413/415."""
        ctx = self._context(binding.service, binding.name, request)
        return await self._through(Call(binding, request, ctx, arguments, read))

    async def read_resource(self, binding: ResourceBinding, params: Mapping[str, str], request: CallRequest) -> Outcome:
        """Read one resource: the same steps as a tool, without body, idempotency or size guard."""
        ctx = self._context(binding.service, binding.name, request)
        return await self._through(Call(binding, request, ctx, params=params))

    async def get_prompt(self, binding: PromptBinding, arguments: Mapping[str, str], request: CallRequest) -> Outcome:
        """Render one prompt: the steps of a resource read; the body is the handler's list of Messages."""
        ctx = self._context(binding.service, binding.name, request)
        return await self._through(Call(binding, request, ctx, params=arguments))

    def shed(self, binding: ToolBinding, request: CallRequest, queued_s: float = 0.0) -> Outcome | None:
        """The 503 a call gets now, without the admission wait, when its service is at its bound of
        calls in flight or the call waited past KUMITATE_ADMISSION_QUEUE_MS before the application
        took it (`queued_s`); logged and counted like any answer. None when it may run. For a
        transport that sheds before it reads anything (kumitate.transports.http.lean)."""
        admission = self.admissions[binding.service]
        overdue = admission.overdue(queued_s)
        if not (overdue or admission.full):
            return None
        started = time.perf_counter()
        ctx = self._context(binding.service, binding.name, request)
        exc = overloaded(binding.service, admission.limit, round(queued_s * 1000) if overdue else 0, overdue)
        return self._finish(self.error_outcome(exc, ctx.run_id, ctx.trace_id), ctx, request.transport, started)

    def refuse(self, what: str, error: ToolError, request: CallRequest) -> Outcome:
        """A request no tool or resource takes (`what`: e.g. `unknown_tool`; the name asked for is
        not logged). The caller is still authenticated first: without a valid token it learns nothing."""
        started = time.perf_counter()
        ctx = self._context("-", what, request)
        try:
            authenticate(self.policies, CONNECT, ctx, request)
        except ToolError as exc:
            error = exc
        return self._finish(self.error_outcome(error, ctx.run_id, ctx.trace_id), ctx, request.transport, started)

    async def identify(self, request: CallRequest, what: str) -> CallContext:
        """The authenticated caller of a request about no one tool (reading a task: `what` names it in
        the log); raises the ToolError (401, 429) a tool call would get."""
        ctx = self._context("-", what, request)
        await self.policies.auth.prepare(request.authorization)
        authenticate(self.policies, CONNECT, ctx, request)
        return ctx

    async def admit_connection(self, request: CallRequest, scopes: list[str] | None = None) -> Outcome | None:
        """Admission of a connection before any tool is named (MCP over HTTP while OAuth is on):
        None for a valid token, else the 401 (or 429) whose challenge starts the client's login;
        with `scopes` (those of the tool a request names), a token without them gets the 403."""
        started = time.perf_counter()
        ctx = self._context("-", "connect", request)
        try:
            await self.policies.auth.prepare(request.authorization)
            authenticate(self.policies, Policy(scopes=tuple(scopes)) if scopes else CONNECT, ctx, request)
        except ToolError as exc:
            return self._finish(self.error_outcome(exc, ctx.run_id, ctx.trace_id), ctx, request.transport, started)
        return None

    async def complete(
        self, binding: ResourceBinding, source: str, prefix: str, arguments: Mapping[str, str], request: CallRequest
    ) -> list[str]:
        """Values for a resource parameter (MCP completion/complete) from the handlers'
        `complete_<source>`, as the caller: admitted like a read of the resource, and nothing
        (an empty list, not an error) for a caller who may not read it."""
        ctx = self._context(binding.service, f"complete_{source}", request)
        try:
            await self.policies.auth.prepare(request.authorization)
            authenticate(self.policies, binding.policy, ctx, request)
            if binding.key in self.disabled:
                return []
            method = getattr(self.handlers[binding.service], f"complete_{source}")
            handler = Handler(method, self.bulkheads[binding.service], frozenset())
            with bound(ctx):
                values = await handler(ctx, ctx, prefix, dict(arguments))
        except ToolError:
            return []
        except Exception as exc:  # a completion is a hint: never an error to the client
            self.errors.unexpected(exc, ctx)  # logged with its traceback
            return []
        if not isinstance(values, Iterable):
            raise TypeError(f"complete_{source} must return strings")
        return [v for v in values if isinstance(v, str)]
