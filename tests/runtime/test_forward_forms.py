"""A facade's form sent on to the API (kumitate.forward): a form has no null, so a null field is left out
rather than spelt `null`, which the API reads as that text (Lob's nullable `lob_campaign_id`, whose pattern
`^cmp_...` the text breaks: the stub refused it)."""

from __future__ import annotations

from kumitate import formbody
from kumitate.forward import form_of


def test_a_null_field_is_left_out_of_a_form_sent_on() -> None:
    body = {"quantity": 2, "lob_campaign_id": None, "tags": ["a", None], "meta": {"k": None}}
    assert form_of(body) == {"quantity": 2, "tags": ["a", None], "meta": {"k": None}}
    content, _ = formbody.encode(form_of(body), formbody.URLENCODED)
    assert b"lob_campaign_id" not in content


def test_a_body_that_is_no_object_goes_as_it_came() -> None:
    assert form_of(["a"]) == ["a"]
