"""Optional LLM fallback for utterances the grammar could not read (confidence < 0.7).

Off unless ATTENDANCE_LLM_BASE_URL is set (with ATTENDANCE_LLM_MODEL and, if the
endpoint needs one, ATTENDANCE_LLM_API_KEY; handlers/attendance/settings.py reads them
into an `LlmConfig`); the endpoint must speak the OpenAI chat-completions protocol.

What is sent: the utterance with email addresses masked, the invitees reduced to
invitee_key, display_name, reading, aliases and groups (never an email), the
rule-based result without share_intent, and the JSON Schema the answer must
follow. What comes back is used only if `validate_llm_output` finds no problem:
the ParseAttendanceIntentOutput schema, a consistent AttendanceRule, only invitee
keys of this thread, and the service rules (needs_clarification is non-empty
exactly when confidence < 0.7; a result with questions never auto-finalises;
finalize_policy is a copy of attendance_rule.finalize_policy). Otherwise the
rule-based result stands. share_intent always comes from the rule-based parse.
Nothing of the utterance is logged.

The request goes through kumitate.outbound in the shape of yana's LLM client
(handlers/yana/generate.py): a config built once from the typed settings, one client per
handler with its own circuit breaker and one retry on 5xx/timeouts, and a budget that
ends RESERVE_S before the call's deadline: a slow model never turns a parse into
REQUEST_TIMEOUT, the caller gets the rule-based result.
"""

from __future__ import annotations

import json
import logging
import re
import time
import unicodedata
from dataclasses import dataclass
from typing import Any

from pydantic import SecretStr

from handlers.attendance.core.keys import key_of_invitee
from handlers.attendance.schema import schema, schema_errors
from handlers.attendance.validate import rule_problems
from kumitate.outbound import CircuitBreaker, OutboundClient, OutboundError, RetryPolicy

log = logging.getLogger("kumitate.attendance")
THRESHOLD = 0.7
OUTPUT_TYPE = "ParseAttendanceIntentOutput"
_SAFE_FIELDS = ("display_name", "reading", "aliases", "groups")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+")
MAX_WAIT_S = 10.0  # the longest the model is waited for, retries included
RESERVE_S = 0.25  # left of the call's deadline for returning the rule-based result
MIN_WAIT_S = 0.05  # below this a request cannot complete: do not send it


@dataclass(frozen=True, slots=True)
class LlmConfig:
    """Where the fallback model is and how long it is waited for (AttendanceSettings.llm_config builds it)."""

    base_url: str
    model: str
    api_key: SecretStr | None = None
    deadline_s: float = MAX_WAIT_S
    reserve_s: float = RESERVE_S
    breaker_failures: int = 5
    breaker_cooldown_s: float = 30.0


def output_schema() -> dict[str, Any]:
    """The JSON Schema of the answer: ParseAttendanceIntentOutput with the $defs it uses."""
    return schema(OUTPUT_TYPE)


def prompt_invitees(invitees: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Invitees as the model sees them: the key and the names only (emails are hashed into the key)."""
    out = []
    for index, invitee in enumerate(invitees):
        item: dict[str, Any] = {"invitee_key": key_of_invitee(invitee, index)}
        item.update({f: invitee[f] for f in _SAFE_FIELDS if invitee.get(f)})
        out.append(item)
    return out


def build_prompt(request: dict[str, Any], result: dict[str, Any]) -> str:
    rule_based = {k: v for k, v in result.items() if k != "share_intent"}
    payload = {
        "text": unicodedata.normalize("NFKC", request["text"]),
        "invitees": prompt_invitees(request["invitees"]),
        "rule_based_result": rule_based,
    }
    return (
        "Convert the organiser's Japanese scheduling intent into one JSON object that validates against the JSON "
        f"Schema below ({OUTPUT_TYPE}; its attendance_rule is an AttendanceRule of type ALL, ANY, K_OF_N, "
        "REQUIRED_PLUS_QUORUM or GROUP_ANY). Use only the "
        "invitee keys listed. Rules: K_OF_N n equals the number of invitees in scope; needs_clarification is "
        "non-empty exactly when confidence < 0.7; with questions, auto_finalize is false; finalize_policy is a copy "
        "of attendance_rule.finalize_policy. Never guess a name: put it in missing and ask. Answer with JSON only.\n"
        "Schema:\n"
        + json.dumps(output_schema(), ensure_ascii=False, separators=(",", ":"))
        + "\nInput:\n"
        + _EMAIL.sub("<email>", json.dumps(payload, ensure_ascii=False))  # no address leaves the service
    )


def validate_llm_output(candidate: Any, thread_keys: set[str]) -> list[str]:
    """Every reason not to trust a model's answer; [] means it may replace the rule-based result."""
    problems = schema_errors(OUTPUT_TYPE, candidate)
    if problems:
        return problems
    rule = candidate["attendance_rule"]
    problems = rule_problems(rule)
    used = set(rule["invitee_scope"]["include_invitee_keys"])
    used.update(rule["rule"].get("required_invitee_keys", []))
    for group in rule["rule"].get("groups", []):
        used.update(group["any_of_invitee_keys"])
    for keys in candidate["invitee_sets"].values():
        used.update(keys)
    problems.extend(f"{k} is not an invitee of this thread" for k in sorted(used - thread_keys))
    problems.extend(service_rule_problems(candidate))
    return problems


def service_rule_problems(candidate: dict[str, Any]) -> list[str]:
    """The invariants every parse result of this service keeps (the rule-based parser keeps them by construction)."""
    out = []
    questions = bool(candidate["needs_clarification"])
    unsure = candidate["confidence"] < THRESHOLD
    if questions and not unsure:
        out.append("needs_clarification is not empty but confidence is not below 0.7")
    if unsure and not questions:
        out.append("confidence is below 0.7 but needs_clarification is empty")
    policies = (candidate["attendance_rule"]["finalize_policy"], candidate["finalize_policy"])
    if questions and any(p.get("auto_finalize") for p in policies):
        out.append("a result with questions must not auto-finalise")
    if policies[0] != policies[1]:
        out.append("finalize_policy differs from attendance_rule.finalize_policy")
    return out


class LlmUnavailable(Exception):
    """The model gave no usable answer; `reason` is logged (never the utterance or the answer)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class OpenAIChat:
    """POST {base}/chat/completions through kumitate.outbound, within the call's deadline (as yana's client).

    One per handler instance: its circuit breaker sees every call, one retry on 5xx/timeouts.
    """

    def __init__(self, config: LlmConfig) -> None:
        self.config = config
        self.breaker = CircuitBreaker(config.breaker_failures, config.breaker_cooldown_s)
        key = config.api_key.get_secret_value() if config.api_key is not None else ""
        self.client = OutboundClient(
            config.base_url,
            headers={"Authorization": f"Bearer {key}"} if key else {},
            retry=RetryPolicy(attempts=2, base_delay_s=0.2, max_delay_s=1.0),
            breaker=self.breaker,
            default_deadline_s=config.deadline_s,
        )

    def budget_s(self, deadline: float | None) -> float | None:
        """Seconds the model may take: up to the configured wait, ending `reserve_s` before the call's deadline
        so the rule-based answer still reaches the caller in time; None when too little is left to ask at all."""
        if deadline is None:
            return self.config.deadline_s
        left = deadline - time.monotonic() - self.config.reserve_s
        return min(self.config.deadline_s, left) if left > MIN_WAIT_S else None

    def complete_json(self, prompt: str, deadline: float | None) -> Any:
        """The model's answer to one user message, parsed as JSON; LlmUnavailable on any failure."""
        budget = self.budget_s(deadline)
        if budget is None:
            raise LlmUnavailable("no_time_left")
        body = {"model": self.config.model, "messages": [{"role": "user", "content": prompt}], "temperature": 0}
        try:
            reply = self.client.post_json("/chat/completions", body, deadline_s=budget)
            return json.loads(reply["choices"][0]["message"]["content"])
        except OutboundError as exc:
            raise LlmUnavailable(exc.kind) from exc
        except (ValueError, KeyError, IndexError, TypeError):
            raise LlmUnavailable("unreadable_answer") from None

    def close(self) -> None:
        self.client.close()


def llm_fallback(
    request: dict[str, Any],
    result: dict[str, Any],
    thread_keys: set[str],
    llm: OpenAIChat | None,
    deadline: float | None = None,
) -> dict[str, Any]:
    """Ask the configured model when the grammar was unsure; keep `result` on any doubt.

    `deadline` is the call's (CallContext.deadline, a time.monotonic() value): the model's answer is
    abandoned in time for the rule-based result to be returned before it.
    """
    if llm is None or result["confidence"] >= THRESHOLD:
        return result
    try:
        candidate = llm.complete_json(build_prompt(request, result), deadline)
    except LlmUnavailable as exc:
        log.warning("attendance llm fallback skipped or failed (%s); keeping rule-based result", exc.reason)
        return result
    problems = validate_llm_output(candidate, thread_keys)
    if problems:
        log.warning("attendance llm fallback rejected: %d problems", len(problems))
        return result
    candidate["share_intent"] = result["share_intent"]
    candidate["matched_pattern"] = "llm.fallback"
    return candidate
