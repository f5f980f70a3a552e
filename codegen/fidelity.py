"""Whether a tool's generated input model says everything its JSON Schema says.

A `handler_input: model` tool is validated by pydantic alone (one parse, one validation,
straight from the request bytes) when its model expresses the whole schema; otherwise the
JSON Schema check runs as well, for what the model cannot express. The rule is a keyword
allow-list of what datamodel-code-generator turns into pydantic constraints with the same
meaning, and tests/contract/test_model_schema_agreement.py checks the result per tool on
the examples and on generated valid and invalid inputs.
"""

from __future__ import annotations

import re

from codegen.refs import JsonValue

EXPRESSED = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
        "pattern",
        "anyOf",
        "$ref",
        "$defs",
    }
)
"""Keywords the generated model enforces as the schema does."""

ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly", "$comment"}
    | {"contentEncoding", "contentMediaType", "$schema", "$id"}
)
"""Keywords that assert nothing in JSON Schema 2020-12 (content* are annotations there)."""

_UNICODE_CLASSES = re.compile(r"\\[dDwWsSbB]")
"""`\\d`, `\\w`, `\\s`, `\\b` are ASCII in ECMA-262 (JSON Schema) but Unicode in the Rust regex pydantic uses."""

_NESTED = ("properties", "$defs")
_SUBSCHEMA = ("items", "additionalProperties")


def model_expresses(schema: JsonValue) -> bool:
    """True when every assertion in `schema` is one the generated pydantic model makes too.

    An optional property is `X | None = None` in the generated model (None: left out); built from JSON,
    the model refuses a null the schema refuses (kumitate.nulls.refuse_null, attached by codegen/models.py)."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict):
        return False
    for key, value in schema.items():
        if key in ANNOTATIONS or key == "required":
            continue
        if key not in EXPRESSED:
            return False
        if key == "pattern" and _UNICODE_CLASSES.search(str(value)):
            return False
        if key in _NESTED and not all(model_expresses(v) for v in value.values()):
            return False
        if key in _SUBSCHEMA and not model_expresses(value):
            return False
        if key == "anyOf" and not all(model_expresses(v) for v in value):
            return False
    return True
