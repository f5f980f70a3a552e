"""Optional LLM fallback for utterances the grammar could not read (confidence < 0.7).

Off unless ATTENDANCE_LLM_BASE_URL is set (with ATTENDANCE_LLM_MODEL and, if the
endpoint needs one, ATTENDANCE_LLM_API_KEY); the endpoint must speak the OpenAI
chat-completions protocol. Whatever the model returns is used only if
`validate_llm_output` finds no problem: the full parse output schema, a
consistent AttendanceRule, and only invitee keys of this thread. Otherwise the
rule-based result stands. Nothing of the utterance is logged.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from handlers.attendance.schema import schema_errors
from handlers.attendance.validate import rule_problems

log = logging.getLogger("kumitate.attendance")
THRESHOLD = 0.7


def llm_config(env: Mapping[str, str]) -> dict[str, str] | None:
    base = env.get("ATTENDANCE_LLM_BASE_URL", "").strip()
    if not base:
        return None
    return {
        "base_url": base.rstrip("/"),
        "model": env.get("ATTENDANCE_LLM_MODEL", ""),
        "api_key": env.get("ATTENDANCE_LLM_API_KEY", ""),
    }


def validate_llm_output(candidate: Any, thread_keys: set[str]) -> list[str]:
    """Every reason not to trust a model's answer; [] means it may replace the rule-based result."""
    problems = schema_errors("ParseAttendanceIntentOutput", candidate)
    if problems:
        return problems
    rule = candidate["attendance_rule"]
    problems = rule_problems(rule)
    used = set(rule["invitee_scope"]["include_invitee_keys"])
    used.update(rule["rule"].get("required_invitee_keys", []))
    for group in rule["rule"].get("groups", []):
        used.update(group["any_of_invitee_keys"])
    problems.extend(f"{k} is not an invitee of this thread" for k in sorted(used - thread_keys))
    return problems


def llm_fallback(
    request: dict[str, Any], result: dict[str, Any], thread_keys: set[str], env: Mapping[str, str]
) -> dict[str, Any]:
    """Ask the configured model when the grammar was unsure; keep `result` on any doubt."""
    config = llm_config(env)
    if config is None or result["confidence"] >= THRESHOLD:
        return result
    import httpx  # only needed when the hook is configured

    prompt = (
        "Convert the organiser's Japanese scheduling intent into the JSON object described by the schema "
        "ParseAttendanceIntentOutput (types ALL, ANY, K_OF_N, REQUIRED_PLUS_QUORUM, GROUP_ANY). Use only these "
        "invitee keys. Answer with JSON only.\n"
        + json.dumps(
            {"text": request["text"], "invitees": request["invitees"], "rule_based_result": result}, ensure_ascii=False
        )
    )
    headers = {"Authorization": f"Bearer {config['api_key']}"} if config["api_key"] else {}
    try:
        response = httpx.post(
            f"{config['base_url']}/chat/completions",
            json={"model": config["model"], "messages": [{"role": "user", "content": prompt}], "temperature": 0},
            headers=headers,
            timeout=10,
        )
        response.raise_for_status()
        candidate = json.loads(response.json()["choices"][0]["message"]["content"])
    except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError):
        log.warning("attendance llm fallback failed; keeping rule-based result")
        return result
    problems = validate_llm_output(candidate, thread_keys)
    if problems:
        log.warning("attendance llm fallback rejected: %d problems", len(problems))
        return result
    candidate["matched_pattern"] = "llm.fallback"
    return candidate
