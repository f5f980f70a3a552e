"""The OpenAPI 3.1 document, built straight from the spec tree.

Served verbatim at /schema/openapi.json, so what schemathesis fuzzes and what a
client reads is exactly what the spec says: the spec's JSON Schemas as named
components (the shared types and one <Tool>Input / <Tool>Output each, as the
Python models name them), `additionalProperties: false` where the spec has it,
every error response with the catalogue's status, the shared error body and one
example per catalogue code, the spec's examples as request and response
examples, and every header the wire uses.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

import jsonschema

from codegen import models, naming, openapi_shape
from codegen.examples import VOLATILE
from codegen.links import openapi_links
from codegen.refs import JsonT
from codegen.specs import Example, ResourceSpec, SpecTree, ToolSpec
from kumitate import __version__
from kumitate.policies.deprecation import Deprecation
from kumitate.policies.discovery import OPENAPI_SCOPES
from kumitate.policies.idempotency import MAX_KEY_LENGTH
from kumitate.policies.spec import Policy, http_codes
from kumitate.transports.http.forms import form_schema

ERROR_DETAIL: dict[str, Any] = {
    "type": "object",
    "description": "What went wrong: a catalogue code, a message for the caller and whether a retry may help.",
    "additionalProperties": True,
    "required": ["code", "message", "retryable"],
    "properties": {
        "code": {"type": "string", "description": "A code from the error catalogue."},
        "message": {"type": "string"},
        "retryable": {"type": "boolean"},
        "retry_after_ms": {"type": "integer", "minimum": 0},
    },
}
"""The `error` of an error body and of a failed operation: a named component, since a reference into
another schema's property (`ErrorBody/properties/error`) is not one generators follow
(openapi-python-client dropped the Operation schema, and the 202 of every task tool with it)."""

ERROR_BODY: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["error", "run_id", "trace_id"],
    "properties": {
        "error": {"$ref": "#/components/schemas/ErrorDetail"},
        "run_id": {"type": "string"},
        "trace_id": {"type": "string"},
    },
}

CORRELATION_HEADERS = {
    "X-Run-Id": "The run id: the request's X-Run-Id when it is safe to echo, else a new one.",
    "X-Trace-Id": "The trace id: the request's X-Trace-Id, else the trace id of its traceparent, else a new one.",
    "X-Request-Duration-Ms": "Server time to the first byte of the response, in milliseconds (e.g. 12.34).",
}
"""Response headers the outermost ASGI layer puts on every response (kumitate/transports/edge/correlation.py)."""

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
"""Optional correlation headers every operation reads (kumitate/observability/correlation.py), as components/parameters."""

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
TASK_HEADERS: dict[str, dict[str, Any]] = {
    "Location": {
        "description": "Where the operation of a call started as a task is read: /v1/operations/{id}.",
        "required": True,
        "schema": {"type": "string"},
    },
    "Preference-Applied": {
        "description": "RFC 7240: `respond-async` when the call was started as a task.",
        "schema": {"type": "string", "enum": ["respond-async"]},
    },
}
"""The headers of a 202 that started a task: in the document where some tool may run as one."""


def _header(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/headers/{name}"}


def _headers(deprecated: Deprecation | None = None, idempotent: bool = False) -> dict[str, Any]:
    """The headers of one response of an operation: correlation ids always; the deprecation headers of a
    deprecated tool; Idempotent-Replayed where the policy turns idempotency on."""
    out = {name: _header(name) for name in CORRELATION_HEADERS}
    if deprecated:
        out["Deprecation"] = _header("Deprecation")
        if deprecated.sunset:
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


def _components_parameters(tasks: bool) -> dict[str, Any]:
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
        " CONFLICT, a retry while the first call runs 409 IN_PROGRESS (retryable, Retry-After). Keys are kept"
        " for the tool's policy.idempotency_ttl_s.",
        "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH},
    }
    if not tasks:
        return out
    out["Prefer"] = {
        "name": "Prefer",
        "in": "header",
        "required": False,
        "description": "RFC 7240. `respond-async` starts the call as a task: 202 Accepted with the operation"
        " (Location: /v1/operations/{id}) once the call is admitted, instead of waiting for the result.",
        "schema": {"type": "string"},
    }
    return out


BEARER = "bearerAuth"
"""The security scheme of every operation that is not public: `Authorization: Bearer <token>`."""
SCOPES = OPENAPI_SCOPES
"""An operation's scopes: what its token must carry (a static token's, or an identity provider's JWT's).
An `http` scheme carries none in OpenAPI, so they are said beside it; the served document adds them as
an openIdConnect requirement when an issuer is configured (kumitate.policies.discovery.served_openapi)."""

OPERATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A tool call started as a task (Google AIP-151): `response` once it completed, `error` (the"
    " catalogue's) once it failed or was cancelled.",
    "required": ["name", "done", "metadata", "run_id", "trace_id"],
    "properties": {
        "name": {"type": "string", "pattern": "^operations/"},
        "done": {"type": "boolean"},
        "metadata": {
            "type": "object",
            "required": ["tool", "status", "create_time", "update_time"],
            "properties": {
                "tool": {"type": "string"},
                "status": {"enum": ["working", "completed", "failed", "cancelled"]},
                "progress": {"type": ["object", "null"]},
                "create_time": {"type": "string", "format": "date-time"},
                "update_time": {"type": "string", "format": "date-time"},
            },
        },
        "response": {"type": "object", "description": "The tool's result (its output schema)."},
        "error": {"$ref": "#/components/schemas/ErrorDetail"},
        "run_id": {"type": "string"},
        "trace_id": {"type": "string"},
    },
}


def _operations_paths(tree: SpecTree) -> dict[str, Any]:
    """GET /v1/operations/{id} and POST /v1/operations/{id}:cancel, where some tool may run as a task."""
    answer = {
        "description": "The operation.",
        "headers": _headers(),
        "content": {"application/json": {"schema": _schema_ref("Operation")}},
    }
    param = {"name": "operation_id", "in": "path", "required": True, "schema": {"type": "string", "minLength": 1}}
    errors = _error_responses(tree, http_codes(["NOT_FOUND"], Policy()))

    def op(operation_id: str, summary: str, description: str) -> dict[str, Any]:
        return {
            "operationId": operation_id,
            "summary": summary,
            "description": description,
            "tags": ["operations"],
            "parameters": [param, *_parameters(False)],
            "responses": {"200": answer, **errors},
            "security": [{BEARER: []}],
        }

    whose = " Only the caller that started the task reaches it: for anyone else, as for an unknown or expired one, 404."
    return {
        "/v1/operations/{operation_id}": {
            "get": op(
                "get_operation",
                "A task's state, progress and outcome.",
                "Poll it (the Location of the 202) until `done`: then `response` holds the tool's result, or"
                " `error` the catalogue's error." + whose,
            )
        },
        "/v1/operations/{operation_id}:cancel": {
            "post": op(
                "cancel_operation",
                "Cancel a task that still runs; the operation as it now is.",
                "Asks a running task to stop; the answer is the operation as the request leaves it." + whose,
            )
        },
    }


def _error_responses(
    tree: SpecTree,
    codes: Iterable[str],
    deprecated: Deprecation | None = None,
    idempotent: bool = False,
    examples: list[Example] | None = None,
) -> dict[str, Any]:
    """One response per status of `codes` (every code the wire can send: kumitate.policies.spec.http_codes)."""
    by_status: dict[int, list[str]] = {}
    for code in sorted(codes):
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
            "content": {
                "application/json": {
                    "schema": _schema_ref("ErrorBody"),
                    "examples": _error_examples(tree, group, examples or []),
                }
            },
        }
    return responses


def _schema_ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def component_schemas(tree: SpecTree) -> dict[str, Any]:
    """Every service's named schemas, as codegen bundles them for the Python models: the shared types of
    types/*.json and one <Tool>Input / <Tool>Output / <Resource>Resource each, with refs between them, so
    Swagger shows `SakeRecord` once instead of inlining it into every operation.

    Names are unique across services today; should two services define the same name with different
    schemas, the later one's is prefixed with its service (`HouseholdCategory`)."""
    out: dict[str, Any] = {"ErrorBody": ERROR_BODY, "ErrorDetail": ERROR_DETAIL}
    for svc in tree.services:
        defs = models.bundle(svc, tree.root)["$defs"]
        names = {
            n: n if out.get(n, schema) == schema else f"{naming.pascal(svc.name)}{n}" for n, schema in defs.items()
        }
        for name, schema in defs.items():
            out[names[name]] = _rebase(schema, names)
    return dict(sorted(out.items()))


def _rebase(node: JsonT, names: dict[str, str]) -> JsonT:
    """A bundle schema with its `#/$defs/X` refs pointing at components/schemas, without the spec authors'
    `$comment` notes (as the dereferenced schemas MCP serves)."""
    if isinstance(node, list):
        return [_rebase(v, names) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _rebase(v, names) for k, v in node.items() if k != "$comment"}
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        out["$ref"] = f"#/components/schemas/{names.get(ref.removeprefix('#/$defs/'), ref.removeprefix('#/$defs/'))}"
    return out


EXAMPLE_IDS = {"run_id": "5f0c9a3e2b7d4c18a6e1f2d3c4b5a697", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"}
"""The run and trace ids shown in example bodies."""


def _example_output(tool: ToolSpec, ex: Example) -> tuple[Any, list[str]]:
    """An example's output as the document shows it, and the required fields it still leaves out.

    A `subset` example names only the fields its test checks (codegen.examples): the volatile ones
    (run and trace ids, durations) the test strips on both sides are filled in here, with the ids every
    example body shows; what else is left out varies per call (a handle, an expiry) and stays out."""
    value = ex.output
    required = tool.output_schema.get("required", [])
    if ex.match != "exact" and isinstance(value, dict):
        filler = {**EXAMPLE_IDS, "elapsed_ms": 12, "uptime_s": 60}
        value = value | {k: filler[k] for k in required if k in VOLATILE and k not in value}
    validator = jsonschema.validators.validator_for(tool.output_schema)(tool.output_schema)
    if validator.is_valid(value):
        return value, []
    missing = [k for k in required if isinstance(value, dict) and k not in value]
    return value, missing or ["fields the schema requires"]


def _success_examples(tool: ToolSpec) -> tuple[dict[str, Any], str]:
    """The spec's success examples as response examples, each valid against the output schema (what
    linters and generators check); a partial one that is not (it leaves out a required field, one that
    varies per call or is long) is shown in the response's description instead, its left-out fields named."""
    out, partial = {}, []
    for ex in tool.examples:
        if ex.error is not None or ex.output is None:
            continue
        summary = ex.description or ex.name.replace("_", " ")
        value, missing = _example_output(tool, ex)
        if not missing:
            if ex.match != "exact":
                summary += " (some optional fields left out)"
            out[ex.name] = {"summary": summary, "value": value}
            continue
        body = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
        left_out = ", ".join(f"`{k}`" for k in missing)
        partial.append(f"**{ex.name}**: {summary}; leaves out {left_out}.\n\n```json\n{body}\n```")
    if not partial:
        return out, ""
    intro = (
        "Partial examples: the fields their tests check; the others (they vary per call, or are long) are"
        " left out, so these are not response examples, which must be whole results."
    )
    return out, "\n\n".join([intro, *partial])


def _error_example(tree: SpecTree, code: str, summary: str | None = None) -> dict[str, Any]:
    entry = tree.errors[code]
    error: dict[str, Any] = {"code": code, "message": entry.description.strip(), "retryable": entry.retryable}
    if code == "RATE_LIMITED":
        error["retry_after_ms"] = 1000
    return {"summary": summary or f"{code}: {entry.title}", "value": {"error": error, **EXAMPLE_IDS}}


def component_examples(tree: SpecTree) -> dict[str, Any]:
    """One error body per catalogue code (components/examples/<CODE>), shared by every operation."""
    return {code: _error_example(tree, code) for code in sorted(tree.errors)}


def _error_examples(tree: SpecTree, group: list[str], examples: list[Example]) -> dict[str, Any]:
    """One example body per catalogue code of a status, named after the code; a spec example that ends in
    that code lends its name and description to the summary."""
    out = {}
    for code in group:
        from_spec = next((ex for ex in examples if ex.error == code), None)
        if from_spec is None:
            out[code] = {"$ref": f"#/components/examples/{code}"}
        else:
            what = from_spec.description or from_spec.name.replace("_", " ")
            out[code] = _error_example(tree, code, f"{code}: {tree.errors[code].title} (e.g. {what})")
    return out


def _request_body(tool: ToolSpec) -> dict[str, Any]:
    content: dict[str, Any] = {}
    for ctype in tool.content_types:
        content[ctype] = {
            "schema": _schema_ref(naming.input_model(tool.name))
            if ctype == "application/json"
            else form_schema(tool.input_schema, tool.form_flatten)
        }
        if ctype != "application/json" and (encoding := openapi_shape.form_encoding(tool)):
            content[ctype]["encoding"] = encoding
        if ctype == "application/json" and tool.examples:
            content[ctype]["examples"] = {
                ex.name: {"summary": ex.description or ex.name, "value": ex.input}
                for ex in tool.examples
                if ex.error is None
            }
            if not content[ctype]["examples"]:
                del content[ctype]["examples"]
    return {"required": True, "content": content}


def _tool_operation(tree: SpecTree, tool: ToolSpec, schemas: dict[str, Any]) -> dict[str, Any]:
    idempotent = tool.rules.idempotency
    examples, partial = _success_examples(tool)
    responses: dict[str, Any] = {
        "200": {
            "description": "\n\n".join(filter(None, ["The tool's structured result.", partial])),
            "headers": _headers(tool.deprecated, idempotent),
            "content": {"application/json": {"schema": _schema_ref(naming.output_model(tool.name))}},
        }
    }
    if examples:
        responses["200"]["content"]["application/json"]["examples"] = examples
    links = openapi_links(tree, tool)
    if links:
        responses["200"]["links"] = links
    parameters = _parameters(idempotent)
    if tool.is_task:  # `Prefer: respond-async`: 202 and an operation (kumitate.tasks)
        responses["202"] = {
            "description": "Started as a task (the request said `Prefer: respond-async`): poll the operation at Location.",
            "headers": _headers(tool.deprecated, idempotent)
            | {"Location": _header("Location"), "Preference-Applied": _header("Preference-Applied")},
            "content": {"application/json": {"schema": _schema_ref("Operation")}},
        }
        parameters.append({"$ref": "#/components/parameters/Prefer"})
    codes = http_codes(tool.errors, tool.rules)
    responses.update(_error_responses(tree, codes, tool.deprecated, idempotent, tool.examples))
    body: dict[str, Any] | None = _request_body(tool)
    if not tool.http_shape.plain:  # REST-shaped (kumitate.httpshape): parameters, body and status as the spec says
        parameters[:0] = openapi_shape.parameters(tool, schemas, naming.input_model(tool.name))
        body = openapi_shape.request_body(tool, schemas, naming.input_model(tool.name), _request_body(tool)["content"])
        status, ok = openapi_shape.response(tool, schemas, naming.output_model(tool.name), responses.pop("200"))
        responses = {status: ok, **responses}
    op = _operation(tool, parameters, responses)
    if body is not None:
        op["requestBody"] = body
    if tool.deprecated:
        op["deprecated"] = True
    return op


def _operation(spec: ToolSpec | ResourceSpec, parameters: list[Any], responses: dict[str, Any]) -> dict[str, Any]:
    """What every operation, a tool's or a resource's, says: its id, texts, tag, parameters, responses and,
    unless the policy makes it public, the bearer scopes it needs."""
    op: dict[str, Any] = {
        "operationId": spec.operation_id,
        "summary": spec.summary,
        "description": spec.description,
        "tags": [spec.service],
        "parameters": parameters,
        "responses": responses,
    }
    if spec.rules.public:
        op["security"] = []  # overrides nothing today (no document-wide security), but says it: no token needed
    else:
        op["security"] = [{BEARER: []}]  # an `http` scheme carries no scopes (OpenAPI: roles at most)
        if spec.rules.scopes:
            op[SCOPES] = list(spec.rules.scopes)
    return op


def _resource_operation(tree: SpecTree, res: ResourceSpec) -> dict[str, Any]:
    if res.is_json:
        schema = _schema_ref(naming.resource_model(res.name)) if res.output_schema is not None else {}
        content = {res.mime_type: {"schema": schema}}
    else:
        content = {m: {"schema": {"type": "string", "format": "binary"}} for m in [res.mime_type, *res.also_mime_types]}
    responses: dict[str, Any] = {
        "200": {"description": f"The resource {res.uri}.", "headers": _headers(), "content": content}
    }
    links = openapi_links(tree, res)
    if links:
        responses["200"]["links"] = links
    responses.update(_error_responses(tree, http_codes(res.errors, res.rules, resource=True)))
    parameters = [
        {"name": p, "in": "path", "required": True, "schema": {"type": "string", "minLength": 1, "maxLength": 128}}
        for p in res.params
    ] + _parameters(False)
    return _operation(res, parameters, responses)


def build(tree: SpecTree) -> dict[str, Any]:
    """The document `/schema/openapi.json` serves: the services served by default (an `opt_in` service, such
    as the conformance fixtures, is not: its routes are not there unless KUMITATE_SERVICES names it)."""
    tree = dataclasses.replace(tree, services=[svc for svc in tree.services if not svc.opt_in])
    paths: dict[str, dict[str, Any]] = {}
    schemas = component_schemas(tree)
    for svc in tree.services:
        for tool in svc.tools:
            paths.setdefault(tool.http_path, {})[tool.http_method.lower()] = _tool_operation(tree, tool, schemas)
        for res in svc.resources:
            paths.setdefault(res.http_path, {})["get"] = _resource_operation(tree, res)
    tasks = any(tool.is_task for svc in tree.services for tool in svc.tools)
    if tasks:
        paths.update(_operations_paths(tree))
    document = {
        "openapi": "3.1.0",
        "info": {
            "title": "kumitate",
            "version": __version__,
            "description": "Every kumitate tool over HTTP. The same tools are served over MCP at /mcp.",
        },
        # relative: the server that serves this document (a client resolves it against the document's URL)
        "servers": [{"url": "/", "description": "The server this document is read from."}],
        "tags": [{"name": svc.name, "description": svc.description} for svc in tree.services]
        + ([{"name": "operations", "description": "Tools started as tasks (Prefer: respond-async)."}] if tasks else []),
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": schemas | ({"Operation": OPERATION_SCHEMA} if tasks else {}),
            "parameters": _components_parameters(tasks),
            "examples": component_examples(tree),
            "headers": RESPONSE_HEADERS | (TASK_HEADERS if tasks else {}),
            "securitySchemes": {
                BEARER: {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "`Authorization: Bearer <token>`. Tokens come from KUMITATE_TOKENS /"
                    " KUMITATE_TOKENS_FILE (or an identity provider, KUMITATE_OAUTH_ISSUER); with none configured,"
                    " auth is off. A missing or unknown token gets 401 (with WWW-Authenticate), a token without"
                    f" the operation's scopes (its `{SCOPES}`) 403.",
                }
            },
        },
    }
    return _without_unused_components(document)


def _refs(node: object) -> Iterable[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _without_unused_components(document: dict[str, Any]) -> dict[str, Any]:
    """The document without the components no operation reaches (a shared type only the models use, the
    example of a code no operation sends, the deprecation headers where nothing is deprecated): linters
    flag them, and a reader looks for where they are used."""
    components = document["components"]
    reached: set[str] = set()
    todo = list(_refs(document["paths"]))
    while todo:
        ref = todo.pop()
        if ref in reached or not ref.startswith("#/components/"):
            continue
        reached.add(ref)
        kind, _, name = ref.removeprefix("#/components/").partition("/")
        todo.extend(_refs(components.get(kind, {}).get(name)))
    for kind in ("schemas", "parameters", "examples", "headers"):
        components[kind] = {n: v for n, v in components[kind].items() if f"#/components/{kind}/{n}" in reached}
    return document


__all__ = ["build", "naming"]
