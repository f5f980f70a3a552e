"""The one validator the generated models carry: an optional property the schema does not let be null.

datamodel-code-generator types such a property `X | None = None`: in Python, None means "left out".
Sent as JSON, though, `null` is what the schema refuses, so a model built from JSON refuses it too
(codegen/models.py attaches this validator to exactly those fields). Built in Python (a handler
making its output), a field left out is not sent (`exclude_unset`), and one passed as None explicitly is
left out of the answer too (kumitate.steps.result.OutputCheck), so a handler may write either.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import ValidationInfo

__all__ = ["refuse_null"]

T = TypeVar("T")


def refuse_null(value: T, info: ValidationInfo) -> T:
    """A pydantic validator: refuse an explicit JSON null for an optional field, which must be left out instead."""
    if value is None and info.mode == "json":
        raise ValueError("null is not allowed here: leave the field out instead")
    return value
