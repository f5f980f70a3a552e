"""Idempotency keys: a repeated key runs the call once and replays its outcome."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kumitate.intake import data_of
from kumitate.policies.idempotency import Stored, lease_s
from kumitate.steps import Call, CallNext, Outcome

if TYPE_CHECKING:
    from kumitate.policies.idempotency_store import IdempotencyStore


def client_caused(outcome: Outcome) -> bool:
    """Whether an idempotency key may keep this outcome: a success, or a refusal the client
    caused (4xx, not retryable). A server fault (5xx, INTERNAL, STORAGE_UNAVAILABLE) or a
    time-out (408, retryable or not) releases the key, so a retry runs instead of replaying it."""
    return outcome.ok or (400 <= outcome.status < 500 and outcome.status != 408 and not outcome.retryable)


class Idempotent:
    """Only in the chain of a tool whose policy declares `idempotency`, and only acts when the
    caller sent a key. Runs after the body is read (the key is bound to the arguments) and
    before validation, so a replay answers exactly as the first call did. The rest of the chain
    must end in an Outcome (an `Errors` step follows this one), so refusals are stored too.
    `timeout_s` is the tool's deadline: a claim on a key is a lease that ends shortly after it. A call run
    as a task (`request.task_timeout_s`) holds its claim for the task's own, longer deadline; the same tool
    called synchronously keeps the short lease, so a crash does not hold its key for the task's time."""

    def __init__(self, store: IdempotencyStore, key: str, ttl_s: int, timeout_s: float | None = None) -> None:
        self.store = store
        self.key = key
        self.ttl_s = ttl_s
        self.lease_s = lease_s(timeout_s)

    async def __call__(self, call: Call, call_next: CallNext) -> Outcome:
        """Without an Idempotency-Key, run the rest of the chain; with one, run it once per key and replay
        its stored outcome to a repeat (module docstring)."""
        key = call.request.idempotency_key
        if key is None:
            return await call_next(call)
        ctx = call.ctx
        holder: list[Outcome] = []

        async def execute() -> tuple[Stored, bool | None]:
            outcome = await call_next(call)
            holder.append(outcome)
            return Stored(outcome.status, outcome.body), None if call.state.outcome_unknown else client_caused(outcome)

        ident = (self.key, ctx.principal.id, key)
        lease = lease_s(call.request.task_timeout_s) if call.request.task_timeout_s else self.lease_s
        stored, replayed = await self.store.run(ident, data_of(call.arguments), self.ttl_s, execute, lease)
        if not replayed:
            return holder[0]
        ok = stored.status < 400
        code = "OK" if ok else str(stored.body.get("error", {}).get("code", "INTERNAL"))
        # the replay is this call: its body carries this call's ids (where the body has ids), like its headers
        ids = {"run_id": ctx.run_id, "trace_id": ctx.trace_id}
        body = stored.body
        if isinstance(body, dict):
            body = {**body, **{k: v for k, v in ids.items() if k in body}}
        return Outcome(
            ok,
            stored.status,
            code,
            body,
            ctx.run_id,
            ctx.trace_id,
            headers={"Idempotent-Replayed": "true"},
            replayed=True,
            retryable=False if ok else bool(stored.body["error"].get("retryable")),
        )
