"""The yana specs: meta-schema valid, examples valid against their schemas and true against the handlers."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from conftest import REPO, ctx
from jsonschema import Draft202012Validator

from handlers.yana import YanaHandlers
from handlers.yana.core.status import POLICY_VERSION, SERVER_VERSION
from kumitate.errors import ToolError

SPECS = REPO / "specs" / "yana"
TYPES = json.loads((SPECS / "types" / "yana.json").read_text(encoding="utf-8"))
TOOLS = {p.stem: yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted((SPECS / "tools").glob("*.yaml"))}
RESOURCES = {
    p.stem: yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted((SPECS / "resources").glob("*.yaml"))
}
ENVELOPE = {"run_id": "run-test", "trace_id": "trace-test", "server_version": "1.0.0", "policy_version": POLICY_VERSION}


def schema_of(ref_holder: dict[str, Any]) -> Draft202012Validator:
    """`{$ref: ../types/yana.json#/$defs/X}` → a validator with the types' $defs bundled in."""
    ref = ref_holder["$ref"]
    assert ref.startswith("../types/yana.json#/$defs/"), ref
    schema = {"$ref": "#" + ref.split("#", 1)[1], "$defs": TYPES["$defs"]}
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def meta(name: str) -> Draft202012Validator:
    from referencing import Registry, Resource

    metas = {p.name: json.loads(p.read_text()) for p in (REPO / "specs" / "_meta").glob("*.schema.json")}
    registry = Registry().with_resources(
        [(f"kumitate:meta/{n.split('.')[0]}", Resource.from_contents(s)) for n, s in metas.items()]
        + [(n, Resource.from_contents(s)) for n, s in metas.items()]
    )
    return Draft202012Validator(metas[f"{name}.schema.json"], registry=registry)


def subset(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and subset(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(expected) == len(actual) and all(map(subset, expected, actual))
    return bool(expected == actual)


def test_spec_files_match_the_meta_schemas() -> None:
    service = yaml.safe_load((SPECS / "service.yaml").read_text(encoding="utf-8"))
    meta("service").validate(service)
    assert service["versions"] == {"server_version": SERVER_VERSION, "policy_version": POLICY_VERSION}
    for tool in TOOLS.values():
        meta("tool").validate(tool)
    for resource in RESOURCES.values():
        meta("resource").validate(resource)
    assert set(TOOLS) == {"chat", "search", "ingest"}
    assert {t["http"]["path"] for t in TOOLS.values()} == {"/v1/chat", "/v1/search", "/v1/ingest"}
    assert {r["http"]["path"] for r in RESOURCES.values()} == {
        "/v1/healthz",
        "/v1/version",
        "/v1/logs/today",
        "/v1/brands/{brand}",
        "/v1/breweries/{brewery}",
    }


def test_every_error_code_is_catalogued() -> None:
    base = yaml.safe_load((REPO / "specs" / "errors.yaml").read_text(encoding="utf-8"))["codes"]
    known = set(base)
    for spec in [*TOOLS.values(), *RESOURCES.values()]:
        assert set(spec.get("errors", [])) <= known
        assert {e["error"] for e in spec.get("examples", []) if "error" in e} <= known
    handler_codes = {
        "BAD_REQUEST",
        "INVALID_IMAGE",
        "URI_NOT_ALLOWED",
        "RAG_UNAVAILABLE",
        "NOT_FOUND",
        "PAYLOAD_TOO_LARGE",
    }
    assert handler_codes <= known


def test_annotations_are_consistent() -> None:
    for tool in TOOLS.values():
        ann = tool["mcp"]["annotations"]
        assert set(ann) >= {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}
        if ann["readOnlyHint"]:
            assert ann["destructiveHint"] is False
    assert TOOLS["ingest"]["mcp"]["annotations"]["readOnlyHint"] is False


def test_every_property_has_a_description() -> None:
    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for name, prop in (node.get("properties") or {}).items():
                assert "description" in prop or "$ref" in prop, f"{where}.{name}"
            for key, value in node.items():
                walk(value, f"{where}.{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}[{i}]")

    walk(TYPES, "types")


EXAMPLES = [(name, ex) for name, tool in TOOLS.items() for ex in tool.get("examples", [])]


@pytest.mark.parametrize(("tool", "example"), EXAMPLES, ids=[f"{t}-{e['name']}" for t, e in EXAMPLES])
def test_examples_hold(tool: str, example: dict[str, Any], fresh: YanaHandlers) -> None:
    spec = TOOLS[tool]
    input_ok = schema_of(spec["input"]).is_valid(example["input"])
    if "error" in example:
        if not input_ok:
            assert example["error"] in {"BAD_REQUEST", "VALIDATION_ERROR"}  # the pipeline rejects it
            return
        with pytest.raises(ToolError) as err:
            getattr(fresh, tool)(example["input"], ctx())
        assert err.value.code == example["error"]
        return
    assert input_ok
    result = {**getattr(fresh, tool)(example["input"], ctx()), **ENVELOPE}
    schema_of(spec["output"]).validate(result)
    schema_of(spec["output"]).validate({**example["output"], **ENVELOPE} if example.get("match") == "exact" else result)
    if example.get("match", "exact") == "exact":
        assert result == {**example["output"], **ENVELOPE}
    else:
        assert subset(example["output"], result), (example["output"], result)


def test_resource_outputs_match_their_schemas(fresh: YanaHandlers) -> None:
    fresh.search({"query_text": "獺祭"}, ctx())
    schema_of(RESOURCES["healthz"]["output"]).validate(fresh.read_healthz(ctx()))
    schema_of(RESOURCES["version"]["output"]).validate(fresh.read_version(ctx()))
    schema_of(RESOURCES["logs_today"]["output"]).validate(fresh.read_logs_today(ctx()))


def test_chat_context_accepts_the_seed_ids_and_bounds_them() -> None:
    """Seed: `context.sessionId/runId はそのまま受け渡し` (besides run_id/session_id/turn/topic)."""
    from generated.yana.models import ChatInput
    from handlers.yana import _as_dict

    chat = schema_of(TOOLS["chat"]["input"])
    context = {"sessionId": "duo-sess.1", "runId": "duo-run:2", "run_id": "r", "session_id": "s", "turn": 1}
    assert chat.is_valid({"user_text": "獺祭", "context": context})
    model = ChatInput.model_validate({"user_text": "獺祭", "context": context})
    assert _as_dict(model)["context"] == {**context, "disable_sayana": False}  # the seed's spelling
    for bad in [{"sessionId": "has space"}, {"runId": "x" * 129}, {"runId": ""}, {"sessionId": "名前"}]:
        assert not chat.is_valid({"user_text": "獺祭", "context": bad}), bad
    # context is open (seed, client schema): unknown keys pass validation and reach the handler
    assert chat.is_valid({"user_text": "獺祭", "context": {"other": 1, "disable_sayana": True}})
