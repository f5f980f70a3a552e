"""Invitee keys: `u:<id>`, `e:<sha256_16(email)>`, `lm:<id>`.

Emails are hashed here and nowhere else; the plain address is never stored,
returned or logged, so callers can pass it in and keep only the key. User and
list-member ids may not contain "@": an address passed as an id would otherwise
end up in plain text inside a `u:` key.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from generated.errors import InvalidInputError

KEY_RE = re.compile(r"^(u:[A-Za-z0-9_.-]{1,64}|e:[0-9a-f]{16}|lm:[A-Za-z0-9_.-]{1,64})$")
_ID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
KINDS = {"user": "u", "email": "e", "list_member": "lm", "u": "u", "e": "e", "lm": "lm"}


def email_key(email: str) -> str:
    """`e:` + the first 16 hex digits of sha256 of the lower-cased, stripped address."""
    normal = email.strip().lower()
    if not _EMAIL.match(normal):
        raise InvalidInputError("email is not an address of the form local@domain")
    return "e:" + hashlib.sha256(normal.encode("utf-8")).hexdigest()[:16]


def invitee_key(kind: str, value: Any) -> str:
    """Derive the key for one identifier; INVALID_INPUT when the value cannot form a key."""
    prefix = KINDS.get(kind)
    if prefix is None:
        raise InvalidInputError(f"kind must be user, email or list_member, not {kind!r}")
    if prefix == "e":
        return email_key(str(value))
    text = str(value).strip()
    what = "user id" if prefix == "u" else "list member id"
    if "@" in text:
        raise InvalidInputError(f"{what} must not contain @; pass an email with kind email so it is hashed")
    if not _ID.match(text):
        raise InvalidInputError(f"{what} must be 1-64 letters, digits or _ . -")
    return f"{prefix}:{text}"


def key_of_invitee(invitee: dict[str, Any], index: int) -> str:
    """The key of one parse input invitee: invitee_key, else user_id, email, list_member_id."""
    if invitee.get("invitee_key"):
        key = str(invitee["invitee_key"])
        if not KEY_RE.match(key):
            raise InvalidInputError(  # the value is not echoed: it may be an email
                f"invitees[{index}].invitee_key is not a valid invitee key (u:<id>, e:<16 hex digits>, lm:<id>)"
            )
        return key
    try:
        if invitee.get("user_id") is not None:
            return invitee_key("user", invitee["user_id"])
        if invitee.get("email"):
            return email_key(invitee["email"])
        if invitee.get("list_member_id") is not None:
            return invitee_key("list_member", invitee["list_member_id"])
    except InvalidInputError as exc:
        raise InvalidInputError(f"invitees[{index}]: {exc.message}") from None
    raise InvalidInputError(
        f"invitees[{index}] has no invitee_key, user_id, email or list_member_id to derive a key from"
    )
