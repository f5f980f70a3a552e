"""One OpenAPI operation as one tool spec: text for an LLM, input, output, binding, annotations, policy.

The MCP annotations follow the method (GET read-only, PUT idempotent, DELETE destructive and idempotent,
POST and PATCH neither); `openWorldHint` is true for a facade (`--forward`), whose every call reaches
another system. A tool that writes declares `policy.idempotency` (lint KT113): POST and PATCH take a key,
PUT and DELETE say why a retry is safe without one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from codegen.importer import adapt, examples, inputs, outputs
from codegen.importer.answers import AnswerViews
from codegen.importer.catalogue import Catalogue
from codegen.importer.report import OperationReport
from codegen.importer.schema import Converter

SUMMARY_MAX = 200
PLACEHOLDERS = ("TODO", "TBD")
ANNOTATIONS = {
    "GET": (True, False, True),
    "PUT": (False, False, True),
    "DELETE": (False, True, True),
    "POST": (False, False, False),
    "PATCH": (False, False, False),
}
"""Method -> (readOnlyHint, destructiveHint, idempotentHint)."""


@dataclass(frozen=True)
class Context:
    """What every operation of one import shares."""

    document: dict[str, Any]
    convert: Converter
    catalogue: Catalogue
    service: str
    prefix: str
    forward: bool
    api_title: str
    titles: set[str]
    """Enum titles given so far (one generated class name each)."""
    answers: AnswerViews
    """The shared types as outputs read them (no write-only property required)."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _clean(text: str) -> str:
    for word in PLACEHOLDERS:  # lint KT106 refuses a description with a placeholder in it
        text = text.replace(word, word.lower())
    return text.strip()


def texts(name: str, op: dict[str, Any], method: str, path: str, ctx: Context) -> tuple[str, str, str]:
    """(summary, description, title) from the operation's words, completed where they are too short."""
    summary = _one_line(str(op.get("summary") or ""))
    description = _clean(str(op.get("description") or ""))
    if not summary and description:
        summary = _one_line(description.split("\n\n")[0]).split(". ")[0].rstrip(".") + "."
    if not summary:
        summary = f"{name.replace('_', ' ').capitalize()}."
    if len(summary) > SUMMARY_MAX:
        summary = summary[: SUMMARY_MAX - 3].rsplit(" ", 1)[0] + "..."
    summary = _clean(summary)
    route = f"It is `{method} {path}` of {ctx.api_title}"
    route += ", forwarded to that API." if ctx.forward else "."
    if op.get("deprecated"):
        route += " The API marks it deprecated: prefer another tool where one does the same."
    # the route tells apart two tools the document describes alike (readiness KT204)
    description = f"{summary} {route}" if description in ("", summary) else f"{description}\n\n{route}"
    title = summary.rstrip(".")
    return summary, description, title[:80]


def policy(method: str) -> dict[str, Any]:
    """The tool's idempotency declaration, as lint KT113 asks of a tool that writes."""
    if method in ("POST", "PATCH"):
        return {"idempotency": True}
    if method in ("PUT", "DELETE"):
        return {
            "idempotency": False,
            "idempotency_note": f"{method} is idempotent in HTTP: a retry leaves the same state as the first call.",
        }
    return {}


def tool(
    name: str,
    method: str,
    path: str,
    path_item: dict[str, Any],
    op: dict[str, Any],
    ctx: Context,
    report: OperationReport,
) -> dict[str, Any]:
    """The tool spec of one operation, refs still `#/$defs/...` (write.py points them into types/)."""
    given_in = inputs.request_body(ctx.document, op, ctx.convert, report)
    inputs.add_parameters(ctx.document, inputs.parameters(ctx.document, path_item, op), ctx.convert, given_in, report)
    inputs.undeclared_path_parameters(path, given_in, report)
    responses = op.get("responses") or {}
    given_out = outputs.success(ctx.document, responses, ctx.convert, report)
    codes = outputs.errors(ctx.document, responses, ctx.catalogue, report)
    codes += ["UPSTREAM_ERROR", "UPSTREAM_TIMEOUT"] if ctx.forward else ["NOT_IMPLEMENTED"]
    codes = [code for code in dict.fromkeys(codes) if code in ctx.catalogue.codes]
    summary, description, title = texts(name, op, method, path, ctx)
    read_only, destructive, idempotent = ANNOTATIONS[method]
    http: dict[str, Any] = {"method": method, "path": ctx.prefix + path}
    if given_in.params:
        http["params"] = given_in.binding()
    http["body"] = given_in.body
    if given_in.content_types and given_in.content_types != ["application/json"]:
        http["content_types"] = given_in.content_types
    if given_in.deep_objects:
        http["form_deep_objects"] = given_in.deep_objects
    if given_out.status != 200:
        http["status"] = given_out.status
    if given_out.headers:
        http["response_headers"] = given_out.headers
    if given_out.body != "rest":
        http["response_body"] = given_out.body
    spec: dict[str, Any] = {"name": name, "summary": summary, "description": description}
    if ctx.forward:
        spec |= {"handler_input": "data", "handler_output": "data"}
    spec |= {"input": given_in.schema(), "output": ctx.answers.answer(given_out.schema), "errors": codes, "http": http}
    spec["mcp"] = {
        "annotations": {
            "title": title,
            "readOnlyHint": read_only,
            "destructiveHint": destructive,
            "idempotentHint": idempotent,
            "openWorldHint": ctx.forward,
        }
    }
    if policy(method):
        spec["policy"] = policy(method)
        if method in ("POST", "PATCH"):
            report.adapted.append(
                "takes an idempotency key (Idempotency-Key / idempotency_key), as kumitate asks of a write"
            )
    adapt.tool(spec, report, ctx.titles)
    found = examples.examples(ctx.document, given_in, given_out, (spec["input"], spec["output"]), ctx.convert, report)
    if found:
        spec["examples"] = found
    return spec
