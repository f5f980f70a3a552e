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
from kumitate.policies.idempotency import MAX_KEY_LENGTH
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
    "X-Run-Id": "The run id: the request's X-Run-Id when it is safe to echo, else a new one.",
    "X-Trace-Id": "The trace id: the request's X-Trace-Id, else the trace id of its traceparent, else a new one.",
    "X-Request-Duration-Ms": "Server time to the first byte of the response, in milliseconds (e.g. 12.34).",
}
"""Response headers the outermost ASGI layer puts on every response (kumitate/transports/asgi.py)."""

ID_RULE = "Up to 128 of `A-Z a-z 0-9 . _ : @ / + = -`; any other value is replaced by a new id, not rejected."

REQUEST_HEADERS: dict[str, dict[str, Any]] = {
    "RunId": {
        "name": "X-Run-Id",
        "description": f"The caller's run id, echoed in X-Run-Id, the body's run_id and the logs. {ID_RULE}",
    },
    "TraceId": {
        "name": "X-Trace-Id",
        "description": f"The caller's trace id, echoed in X-Trace-Id and the body's trace_id. {ID_RULE}",
    },
    "Traceparent": {
        "name": "traceparent",
        "description": "W3C Trace Context: its trace id becomes the trace id when X-Trace-Id is absent; a malformed"
        " value is ignored.",
    },
}
"""Optional correlation headers every operation reads (kumitate/correlation.py), as components/parameters."""

RESPONSE_HEADERS: dict[str, dict[str, Any]] = {
    "X-Run-Id": {"description": CORRELATION_HEADERS["X-Run-Id"], "required": True, "schema": {"type": "string"}},
    "X-Trace-Id": {"description": CORRELATION_HEADERS["X-Trace-Id"], "required": True, "schema": {"type": "string"}},
    "X-Request-Duration-Ms": {
        "description": CORRELATION_HEADERS["X-Request-Duration-Ms"],
        "required": True,
        "schema": {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?$"},
    },
    "Retry-After": {
        "description": "Whole seconds to wait before retrying (RFC 9110); the body's error.retry_after_ms has"
        " the same in milliseconds.",
        "required": True,
        "schema": {"type": "string", "pattern": "^[0-9]+$"},
    },
    "Idempotent-Replayed": {
        "description": "`true` when this response is the stored response of an earlier request with the same"
        " Idempotency-Key (the tool did not run again).",
        "schema": {"type": "string", "enum": ["true"]},
    },
    "Deprecation": {
        "description": "RFC 9745: the tool is deprecated, since this moment (`@` Unix seconds). On every response"
        " the tool itself gives (not on a routing 404/405).",
        "schema": {"type": "string", "pattern": "^@[0-9]+$"},
    },
    "Sunset": {
        "description": "RFC 8594: the tool will be removed after this HTTP-date (with Deprecation).",
        "schema": {"type": "string"},
    },
}
"""Every response header the HTTP wire may carry, as components/headers."""


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


def _header(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/headers/{name}"}


def _headers(deprecated: dict[str, Any] | None = None, idempotent: bool = False) -> dict[str, Any]:
    """The headers of one response of an operation: correlation ids always; the deprecation headers of a
    deprecated tool; Idempotent-Replayed where the policy turns idempotency on."""
    out = {name: _header(name) for name in CORRELATION_HEADERS}
    if deprecated:
        out["Deprecation"] = _header("Deprecation")
        if deprecated.get("sunset"):
            out["Sunset"] = _header("Sunset")
    if idempotent:
        out["Idempotent-Replayed"] = _header("Idempotent-Replayed")
    return out


def _parameters(idempotency: bool) -> list[dict[str, Any]]:
    """The request headers an operation reads: the correlation ones, and Idempotency-Key where the policy has it."""
    out = [{"$ref": f"#/components/parameters/{key}"} for key in REQUEST_HEADERS]
    if idempotency:
        out.append({"$ref": "#/components/parameters/IdempotencyKey"})
    return out


def _components_parameters() -> dict[str, Any]:
    out: dict[str, Any] = {
        key: {**spec, "in": "header", "required": False, "schema": {"type": "string"}}
        for key, spec in REQUEST_HEADERS.items()
    }
    out["IdempotencyKey"] = {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "description": "Run the call at most once per key (per caller and tool): a retry with the same key and"
        " body gets the stored response (with Idempotent-Replayed: true), the same key with another body 409"
        " CONFLICT. Keys are kept for the tool's policy.idempotency_ttl_s.",
        "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH},
    }
    return out


def _error_responses(
    tree: SpecTree, codes: list[str], deprecated: dict[str, Any] | None = None, idempotent: bool = False
) -> dict[str, Any]:
    by_status: dict[int, list[str]] = {}
    for code in sorted(set(codes) | set(GENERIC_ERRORS) | set(TRANSPORT_ERRORS)):
        if code in tree.errors:
            by_status.setdefault(tree.errors[code].status, []).append(code)
    responses: dict[str, Any] = {}
    for status, group in sorted(by_status.items()):
        headers = _headers(deprecated, idempotent)
        if status == 429:
            headers["Retry-After"] = _header("Retry-After")
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
    idempotent = bool(tool.policy.get("idempotency"))
    responses = {
        "200": {
            "description": "The tool's structured result.",
            "headers": _headers(tool.deprecated, idempotent),
            "content": {"application/json": {"schema": tool.output_schema}},
        }
    }
    responses.update(_error_responses(tree, tool.errors + policy_errors(tool.policy), tool.deprecated, idempotent))
    op: dict[str, Any] = {
        "operationId": tool.operation_id,
        "summary": tool.summary,
        "description": tool.description,
        "tags": [tool.service],
        "parameters": _parameters(idempotent),
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
    ] + _parameters(False)
    op: dict[str, Any] = {
        "operationId": res.operation_id,
        "summary": res.summary,
        "description": res.description,
        "tags": [res.service],
        "responses": responses,
    }
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
            "parameters": _components_parameters(),
            "headers": RESPONSE_HEADERS,
            "securitySchemes": {
                "bearerAuth": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "`Authorization: Bearer <token>`. Tokens come from KUMITATE_TOKENS /"
                    " KUMITATE_TOKENS_FILE; with none configured, auth is off. A missing or unknown token gets 401"
                    " (with WWW-Authenticate), a token without the operation's scopes 403.",
                }
            },
        },
    }


__all__ = ["build", "naming", "policy_errors"]
