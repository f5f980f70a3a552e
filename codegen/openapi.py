"""The OpenAPI 3.1 document, built straight from the spec tree.

Served verbatim at /schema/openapi.json, so what schemathesis fuzzes and what a
client reads is exactly what the spec says: the dereferenced JSON Schemas,
`additionalProperties: false` where the spec has it, and every error response
with the catalogue's status and the shared error body.
"""

from __future__ import annotations

from typing import Any

from codegen import naming
from codegen.specs import GENERIC_ERRORS, ResourceSpec, SpecTree, ToolSpec
from kumitate.transports.forms import form_schema

ERROR_BODY: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["error", "run_id", "trace_id"],
    "properties": {
        "error": {
            "type": "object",
            "additionalProperties": True,
            "required": ["code", "message", "retryable"],
            "properties": {
                "code": {"type": "string", "description": "A code from the error catalogue."},
                "message": {"type": "string"},
                "retryable": {"type": "boolean"},
                "retry_after_ms": {"type": "integer", "minimum": 0},
            },
        },
        "run_id": {"type": "string"},
        "trace_id": {"type": "string"},
    },
}

CORRELATION_HEADERS = {
    "X-Run-Id": "The run id, echoed from the request or generated.",
    "X-Trace-Id": "The trace id, echoed from the request, taken from traceparent, or generated.",
    "X-Request-Duration-Ms": "Server time to the first byte of the response, in milliseconds.",
}

#: Failures any route can produce whatever it declares: bad body or content type, wrong
#: method, crash. Listed so fuzzers and clients know the full status set.
TRANSPORT_ERRORS = (
    "BAD_REQUEST",
    "METHOD_NOT_ALLOWED",
    "NOT_ACCEPTABLE",
    "PAYLOAD_TOO_LARGE",
    "UNSUPPORTED_MEDIA_TYPE",
    "INTERNAL",
)


def _headers() -> dict[str, Any]:
    return {name: {"description": text, "schema": {"type": "string"}} for name, text in CORRELATION_HEADERS.items()}


def _error_responses(tree: SpecTree, codes: list[str]) -> dict[str, Any]:
    by_status: dict[int, list[str]] = {}
    for code in sorted(set(codes) | set(GENERIC_ERRORS) | set(TRANSPORT_ERRORS)):
        if code in tree.errors:
            by_status.setdefault(tree.errors[code].status, []).append(code)
    responses: dict[str, Any] = {}
    for status, group in sorted(by_status.items()):
        headers = _headers()
        if status == 429:
            headers["Retry-After"] = {"description": "Seconds to wait before retrying.", "schema": {"type": "string"}}
        responses[str(status)] = {
            "description": " / ".join(f"{c}: {tree.errors[c].title}" for c in group),
            "headers": headers,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
        }
    return responses


def _request_body(tool: ToolSpec) -> dict[str, Any]:
    content: dict[str, Any] = {}
    for ctype in tool.content_types:
        content[ctype] = {
            "schema": tool.input_schema if ctype == "application/json" else form_schema(tool.input_schema)
        }
        if ctype == "application/json" and tool.examples:
            content[ctype]["examples"] = {
                ex.name: {"summary": ex.description or ex.name, "value": ex.input}
                for ex in tool.examples
                if ex.error is None
            }
            if not content[ctype]["examples"]:
                del content[ctype]["examples"]
    return {"required": True, "content": content}


def _tool_operation(tree: SpecTree, tool: ToolSpec) -> dict[str, Any]:
    responses = {
        "200": {
            "description": "The tool's structured result.",
            "headers": _headers(),
            "content": {"application/json": {"schema": tool.output_schema}},
        }
    }
    responses.update(_error_responses(tree, tool.errors + policy_errors(tool.policy)))
    op: dict[str, Any] = {
        "operationId": tool.operation_id,
        "summary": tool.summary,
        "description": tool.description,
        "tags": [tool.service],
        "requestBody": _request_body(tool),
        "responses": responses,
    }
    if tool.deprecated:
        op["deprecated"] = True
    if not tool.policy.get("public"):
        op["security"] = [{"bearerAuth": tool.policy.get("scopes", [])}]
    return op


def policy_errors(policy: dict[str, Any]) -> list[str]:
    """Error codes a policy can produce, whatever the tool declares (auth applies once tokens are configured)."""
    codes = []
    if not policy.get("public"):
        codes += ["UNAUTHORIZED", "FORBIDDEN"]
    if policy.get("rate_limit"):
        codes.append("RATE_LIMITED")
    if policy.get("timeout_ms"):
        codes.append("REQUEST_TIMEOUT")
    if policy.get("idempotency"):
        codes.append("CONFLICT")
    if policy.get("max_output_bytes") and policy.get("on_oversize", "fail") == "fail":
        codes.append("OUTPUT_TOO_LARGE")
    return codes


def _resource_operation(tree: SpecTree, res: ResourceSpec) -> dict[str, Any]:
    if res.is_json:
        content = {res.mime_type: {"schema": res.output_schema or {}}}
    else:
        content = {m: {"schema": {"type": "string", "format": "binary"}} for m in [res.mime_type, *res.also_mime_types]}
    responses = {"200": {"description": f"The resource {res.uri}.", "headers": _headers(), "content": content}}
    responses.update(_error_responses(tree, [*res.errors, "NOT_FOUND", *policy_errors(res.policy)]))
    parameters = [
        {"name": p, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1, "maxLength": 128}}
        for p in res.params
    ]
    op: dict[str, Any] = {
        "operationId": res.operation_id,
        "summary": res.summary,
        "description": res.description,
        "tags": [res.service],
        "responses": responses,
    }
    if parameters:
        op["parameters"] = parameters
    if not res.policy.get("public"):
        op["security"] = [{"bearerAuth": res.policy.get("scopes", [])}]
    return op


def build(tree: SpecTree) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for svc in tree.services:
        for tool in svc.tools:
            paths.setdefault(tool.http_path, {})[tool.http_method.lower()] = _tool_operation(tree, tool)
        for res in svc.resources:
            paths.setdefault(res.http_path, {})["get"] = _resource_operation(tree, res)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "kumitate",
            "version": "1.0.0",
            "description": "Every kumitate tool over HTTP. The same tools are served over MCP at /mcp.",
        },
        "tags": [{"name": svc.name, "description": svc.description} for svc in tree.services],
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": {"ErrorBody": ERROR_BODY},
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "Tokens come from KUMITATE_TOKENS / KUMITATE_TOKENS_FILE; with none configured, auth is off.",
                }
            },
        },
    }


__all__ = ["build", "naming", "policy_errors"]
