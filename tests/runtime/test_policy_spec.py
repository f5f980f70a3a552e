"""A policy is parsed once, into a frozen dataclass, when its binding is built."""

from __future__ import annotations

import dataclasses
import json
from typing import get_args, get_type_hints

import pytest

from codegen import specs
from generated.registry import SERVICES
from kumitate.bindings import CacheHint, Execution
from kumitate.policies.spec import GENERIC_CODES, Policy, RateLimit
from tests.conftest import REPO
from tests.runtime.test_pipeline import binding


def test_parse_reads_every_field() -> None:
    declared = {
        "scopes": ["a", "b"],
        "public": True,
        "rate_limit": {"rps": 5, "burst": 50},
        "timeout_ms": 2000,
        "idempotency": True,
        "idempotency_ttl_s": 3600,
        "max_output_bytes": 2048,
        "on_oversize": "trim",
        "max_request_bytes": 4096,
        "assert_formats": True,
    }
    assert Policy.parse(declared) == Policy(
        scopes=("a", "b"),
        public=True,
        rate_limit=RateLimit(5.0, 50),
        timeout_ms=2000,
        idempotency=True,
        idempotency_ttl_s=3600,
        max_output_bytes=2048,
        on_oversize="trim",
        max_request_bytes=4096,
        assert_formats=True,
    )


def test_defaults_and_frozen() -> None:
    policy = Policy.parse(None)
    assert policy == Policy() and policy.idempotency_ttl_s == 86400 and policy.on_oversize == "fail"
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.public = True  # type: ignore[misc]


def test_binding_parses_its_policy_and_allowed_codes() -> None:
    tool = binding("echo", scopes=["demo:read"], max_output_bytes=100, rate_limit={"rps": 1, "burst": 2})
    assert tool.policy.scopes == ("demo:read",) and tool.policy.rate_limit == RateLimit(1.0, 2)
    policy = {"NOT_FOUND", "OUTPUT_TOO_LARGE", "RATE_LIMITED", "UNAUTHORIZED", "FORBIDDEN"}
    assert tool.allowed == policy | GENERIC_CODES
    public = dataclasses.replace(tool, policy=Policy(public=True))  # a copy computes its own
    assert public.allowed == {"NOT_FOUND"} | GENERIC_CODES


def test_every_generated_binding_carries_its_spec_typed() -> None:
    """generated/<svc>/bindings.py builds Policy, Annotations and Deprecation records that equal the spec's."""
    tree = specs.load(REPO / "specs")
    for spec in tree.services:
        svc = SERVICES[spec.name]
        tools = {b.name: b for b in svc.tools}
        for tool in spec.tools:
            b = tools[tool.name]
            assert (b.policy, b.annotations, b.deprecated, b.execution, b.cache) == (
                tool.rules,
                tool.annotations,
                tool.deprecated,
                Execution.parse(tool.execution),
                CacheHint.parse(tool.cache),
            )
            assert set(b.errors) <= b.allowed
        ops = {b.name: b.policy for b in (*svc.resources, *svc.prompts)}
        assert ops == {op.name: op.rules for op in (*spec.resources, *spec.prompts)}
        assert {r.name: r.cache for r in svc.resources} == {r.name: CacheHint.parse(r.cache) for r in spec.resources}


def test_policy_codes_follow_what_it_turns_on() -> None:
    assert Policy(public=True).codes() == frozenset()
    assert Policy().codes() == {"UNAUTHORIZED"}  # no scopes: any valid token may call, none is refused 403
    assert Policy(scopes=("a",), timeout_ms=5, max_request_bytes=2048).codes() == {
        "UNAUTHORIZED",
        "FORBIDDEN",
        "REQUEST_TIMEOUT",
        "PAYLOAD_TOO_LARGE",
    }
    trim = Policy(public=True, idempotency=True, max_output_bytes=100, on_oversize="trim")
    assert trim.codes() == {"CONFLICT", "IN_PROGRESS", "OUTPUT_TOO_LARGE"}  # trim fails when nothing is left to trim


def test_the_dataclass_has_a_field_for_every_property_of_the_meta_schema() -> None:
    """kumitate.policies.spec.Policy and specs/_meta/policy.schema.json describe one vocabulary: a property added
    to one and not the other fails here (idempotency_note is the lint's alone)."""
    schema = json.loads((REPO / "specs" / "_meta" / "policy.schema.json").read_text(encoding="utf-8"))
    assert {f.name for f in dataclasses.fields(Policy)} | {"idempotency_note"} == set(schema["properties"])
    assert {f.name for f in dataclasses.fields(RateLimit)} == set(schema["properties"]["rate_limit"]["properties"])
    assert set(get_args(get_type_hints(Policy)["on_oversize"])) == set(schema["properties"]["on_oversize"]["enum"])
