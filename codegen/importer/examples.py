"""The document's request and response examples as spec examples, kept only when they validate.

An example in a spec is executable (`make test` runs it on both transports) and lint KT105 checks it
against the tool's schemas, so one that does not fit the tool's input or output is dropped, and the
report says why. Inputs come from the parameters' and the body's examples, outputs from the success's;
named examples pair by name, else the first input goes with the first output.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema_rs

from codegen.importer.inputs import Input, resolve
from codegen.importer.names import snake
from codegen.importer.outputs import Output
from codegen.importer.report import OperationReport
from codegen.importer.schema import Converter


def _value(value: object) -> object:
    """An example as data: one written as a JSON text (`"{ \"Name\": ... }"`) is parsed."""
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _named(document: dict[str, Any], media: dict[str, Any] | None) -> dict[str, Any]:
    """A media type's examples by name: `examples`, else `example`, else its schema's example."""
    if not isinstance(media, dict):
        return {}
    found: dict[str, Any] = {}
    for name, raw in (media.get("examples") or {}).items():
        example = resolve(document, raw)
        if isinstance(example, dict) and "value" in example:
            found[str(name)] = _value(example["value"])
    if not found and "example" in media:
        found["example"] = _value(media["example"])
    schema = resolve(document, media.get("schema"))
    if not found and isinstance(schema, dict):
        if "example" in schema:
            found["example"] = schema["example"]
        elif isinstance(schema.get("examples"), list) and schema["examples"]:
            found["example"] = schema["examples"][0]
    return found


def _param_value(document: dict[str, Any], param: dict[str, Any]) -> tuple[bool, Any]:
    if "example" in param:
        return True, param["example"]
    for raw in (param.get("examples") or {}).values():
        example = resolve(document, raw)
        if isinstance(example, dict) and "value" in example:
            return True, example["value"]
    schema = resolve(document, param.get("schema"))
    if isinstance(schema, dict) and "example" in schema:
        return True, schema["example"]
    if isinstance(schema, dict) and isinstance(schema.get("examples"), list) and schema["examples"]:
        return True, schema["examples"][0]
    return False, None


def inputs(document: dict[str, Any], given: Input) -> dict[str, dict[str, Any]]:
    """The example inputs: the body's named examples, each with every parameter's example value."""
    params: dict[str, Any] = {}
    for carried in given.params:
        found, value = _param_value(document, carried.raw)
        if found:
            params[carried.prop] = value
    bodies = _named(document, given.body_raw)
    if not bodies:
        return {"example": params} if params or not given.required else {}
    out: dict[str, dict[str, Any]] = {}
    for name, value in bodies.items():
        if given.body == "rest":
            out[name] = {**params, **value} if isinstance(value, dict) else {**params, "\0": value}
        else:
            out[name] = {**params, given.body["property"]: value}
    return out


def outputs(document: dict[str, Any], given: Output) -> dict[str, Any]:
    """The example outputs of the success, shaped as the tool's output."""
    headers: dict[str, Any] = {}
    for prop, header in given.header_raw.items():
        found, value = _param_value(document, header)
        if found:
            headers[prop] = value
    if given.body == "none":
        return {"example": headers}
    bodies = _named(document, given.media)
    if isinstance(given.body, dict):
        return {name: {**headers, given.body["property"]: value} for name, value in bodies.items()}
    return {name: {**headers, **value} if isinstance(value, dict) else value for name, value in bodies.items()}


def _documented(found: dict[str, Any]) -> bool:
    """Whether the document gave any of these examples (not only the empty input or output of a call)."""
    return any(value not in ({}, None) for value in found.values())


def _problem(convert: Converter, schema: dict[str, Any], value: object) -> str | None:
    try:
        validator = jsonschema_rs.Draft202012Validator(convert.with_defs(schema))
    except (ValueError, jsonschema_rs.ValidationError) as exc:
        return f"its schema cannot check it ({exc})"
    for error in validator.iter_errors(value):
        where = "/".join(str(p) for p in error.instance_path)
        return f"{'/' + where if where else 'the value'}: {error.message[:160]}"
    return None


def examples(
    document: dict[str, Any],
    given_in: Input,
    given_out: Output,
    schemas: tuple[Any, Any],
    convert: Converter,
    report: OperationReport,
) -> list[dict[str, Any]]:
    """Spec examples `{name, input, output}` from the document, each checked against the tool's schemas."""
    ins, outs = inputs(document, given_in), outputs(document, given_out)
    if not _documented(ins) and not _documented(outs):
        return []
    pairs = [(name, ins[name], outs[name]) for name in ins if name in outs]
    used = {name for name, _, _ in pairs}
    if not pairs and ins and outs:
        (in_name, first_in), (out_name, first_out) = next(iter(ins.items())), next(iter(outs.items()))
        pairs = [(in_name if in_name != "example" else out_name, first_in, first_out)]
        used = {in_name, out_name}
    unpaired = (set(ins) | set(outs)) - used
    if not pairs:
        report.dropped.append(
            f"example(s) {', '.join(sorted(unpaired))}: a request example without a response one, or the other way"
        )
        return []
    documented = {name for name in unpaired if ins.get(name, outs.get(name)) not in ({}, None)}
    if documented:
        report.dropped.append(
            f"example(s) {', '.join(sorted(documented))}: no request or response example to pair with"
        )
    kept: list[dict[str, Any]] = []
    names: set[str] = set()
    for name, value_in, value_out in pairs:
        label = snake(name) or "example"
        label = label if label[0].isalpha() else f"example_{label}"
        while label in names:
            label += "_2"
        problem = _problem(convert, schemas[0], value_in) or None
        where = "input"
        if problem is None:
            problem, where = _problem(convert, schemas[1], value_out), "output"
        if problem is not None:
            report.dropped.append(f"example {name!r}: its {where} does not fit the tool's schema ({problem})")
            continue
        names.add(label)
        example = {"name": label, "input": copy.deepcopy(value_in), "output": copy.deepcopy(value_out)}
        unknown = [
            h["property"]
            for h in given_out.headers
            if not isinstance(value_out, dict) or h["property"] not in value_out
        ]
        if unknown:  # a header the document gives no example of: its value is the API's to choose
            example["match"] = "subset"
        kept.append(example)
        report.notes.append(f"example {name!r} kept as {label!r}")
    return kept
