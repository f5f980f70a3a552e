"""Validate once, convert once: from a request's JSON to what the handler takes.

The spec's JSON Schema is the contract; each tool declares (`handler_input`) what its
handler receives:

* `data`: the JSON data as sent, validated once by the JSON Schema (jsonschema_rs) and
  handed over as it is: no model is built. For large inputs (100k stay records, 200k
  attendance selections) this is the whole cost of intake: one parse, one validation.
* `model`: the generated input model, validated once by pydantic in strict JSON mode
  straight from the bytes (one pass: parse, check and build). Where the model does not
  express the whole schema (`schema_check`, decided by codegen/fidelity.py) the JSON
  Schema check runs as well. When pydantic rejects an input, the JSON Schema decides: its
  message is the one sent (as before), and an input it accepts that strict pydantic did
  not (an integer written `5.0`) is converted the lax way. So the set of accepted inputs
  is exactly the schema's, provided strict pydantic accepts nothing the schema rejects:
  tests/contract/test_model_schema_agreement.py checks that per tool.

HTTP hands over the raw bytes (`JsonBody`), parsed only if the data is needed; MCP hands
over the arguments its SDK already decoded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jsonschema_rs
import msgspec
import pydantic_core
from pydantic import BaseModel, ValidationError

from kumitate.bindings import ToolBinding
from kumitate.errors import ToolError

MAX_DEPTH = 200
"""How deep JSON may nest. The parser (jiter, the one pydantic and the MCP SDK use) stops there,
at parse time, below the depth jsonschema_rs can report on (about 255)."""

_UNSET = object()


def decode_json(raw: bytes | bytearray) -> object:
    """Parse a JSON body strictly: invalid UTF-8, nesting past MAX_DEPTH or bad syntax are a 400.

    pydantic_core's parser is as fast as msgspec's here, bounds the depth, and refuses invalid
    UTF-8 and lone surrogates instead of passing them on to fail later."""
    try:
        return pydantic_core.from_json(raw, cache_strings="keys")
    except ValueError as exc:
        message = str(exc)
        if "recursion limit" in message:
            message = f"the JSON body nests deeper than {MAX_DEPTH} levels"
        elif "unicode" in message.lower() or "utf-8" in message.lower():
            message = f"the body is not valid UTF-8 JSON ({message})"
        else:
            message = f"malformed JSON body: {message}"
        raise ToolError(message, code="BAD_REQUEST") from None


class JsonBody:
    """A JSON request body as received; parsed at most once, and only when its data is needed."""

    __slots__ = ("_data", "raw")

    def __init__(self, raw: bytes | bytearray) -> None:
        self.raw = raw
        self._data = _UNSET

    @property
    def data(self) -> object:
        """The body decoded from JSON, once, on first use."""
        if self._data is _UNSET:
            self._data = decode_json(self.raw)
        return self._data

    @data.setter
    def data(self, data: object) -> None:
        """The body's data as decoded elsewhere (kumitate.offloop: in pieces, on a thread)."""
        self._data = data


def data_of(arguments: object) -> object:
    """The JSON data of `arguments`, whether a JsonBody or already decoded."""
    return arguments.data if isinstance(arguments, JsonBody) else arguments


def shorten(message: str, limit: int = 200) -> str:
    """Schema messages quote the offending value: never echo a whole upload back."""
    return message if len(message) <= limit else f"{message[: limit // 2]} … {message[-limit // 2 :]}"


def pointer(path: Sequence[str | int]) -> str:
    """A validation error's instance path as a JSON pointer (`<body>` for the whole input)."""
    return "/" + "/".join(str(p) for p in path) if path else "<body>"


def first_error(validator: jsonschema_rs.Draft202012Validator, data: object) -> jsonschema_rs.ValidationError | None:
    """Where and why `data` breaks the schema (the first problem found), or None when it matches.

    Only the first: jsonschema_rs builds every error before `iter_errors` yields one, in time that grows
    faster than their number (1.3 million keys failing a pattern took 40 s, all of it on the event loop),
    while `validate` stops at the first. A client fixes it and learns of the next on its retry."""
    try:
        validator.validate(data)
    except jsonschema_rs.ValidationError as err:
        return err
    return None


class Intake:
    """Turns arguments into the handler's input; one per pipeline (it caches compiled validators)."""

    def __init__(self) -> None:
        self._validators: dict[tuple[int, bool], jsonschema_rs.Draft202012Validator] = {}

    def validator(self, schema: dict[str, Any], formats: bool = False) -> jsonschema_rs.Draft202012Validator:
        """The compiled JSON Schema validator of `schema` (asserting `format` when `formats`: the policy's
        `assert_formats`), built once per schema object and reused."""
        key = (id(schema), formats)
        validator = self._validators.get(key)
        if validator is None:
            validator = self._validators[key] = jsonschema_rs.Draft202012Validator(schema, validate_formats=formats)
        return validator

    def check(self, schema: dict[str, Any], data: object, formats: bool = False) -> None:
        """The JSON Schema check: BAD_REQUEST naming the first problem, by JSON pointer."""
        err = first_error(self.validator(schema, formats), data)
        if err is not None:
            problem = f"{pointer(err.instance_path)}: {shorten(err.message)}"
            raise ToolError(f"input does not match the schema: {problem}", code="BAD_REQUEST")

    def prepare(self, binding: ToolBinding, arguments: object) -> object:
        """What the handler of `binding` takes for these arguments, or BAD_REQUEST."""
        formats = binding.policy.assert_formats
        if binding.handler_input == "data":
            data = data_of(arguments)
            self.check(binding.input_schema, data, formats)
            return data
        if not binding.schema_check and not formats:
            model = _strict_model(binding, arguments)
            if model is not None:
                return model
        data = data_of(arguments)
        self.check(binding.input_schema, data, formats)
        return self.model_of(binding, data)

    def model_of(self, binding: ToolBinding, data: object) -> BaseModel:
        """The input model of data the JSON Schema accepted (lax: an integer written `5.0` converts)."""
        try:
            return binding.input_model.model_validate(data, by_name=False)  # the wire names only (`from`)
        except ValidationError as exc:
            raise ToolError(f"input does not match the schema: {exc.errors()[0]['msg']}", code="BAD_REQUEST") from None


def _strict_model(binding: ToolBinding, arguments: object) -> BaseModel | None:
    """The model, validated by pydantic in strict JSON mode from the bytes; None when it rejects them
    (the JSON Schema then decides, and words the message)."""
    try:
        raw = arguments.raw if isinstance(arguments, JsonBody) else msgspec.json.encode(arguments)
        return binding.input_model.model_validate_json(raw, strict=True, by_name=False)
    except (ValidationError, msgspec.EncodeError, TypeError, OverflowError):
        return None
