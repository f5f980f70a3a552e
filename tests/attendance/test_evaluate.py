"""evaluate_attendance: per-slot state, decisions, time zones, scope, conflict policy; hypothesis properties."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handlers.attendance.core.evaluate import evaluate_attendance
from kumitate.errors import ToolError

KEYS = [f"u:{i}" for i in range(1, 7)]


def rule(
    kind: str,
    params: dict[str, Any] | None = None,
    mode: str = "EARLIEST_VALID",
    tie: str = "earliest_slot",
    **extra: Any,
) -> dict[str, Any]:
    return {
        "type": kind,
        "invitee_scope": {
            "include_invitee_keys": extra.pop("include", KEYS),
            "exclude_invitee_keys": extra.pop("exclude", []),
        },
        "rule": params or {},
        "finalize_policy": {"mode": mode, "tie_breaker": tie, **extra.pop("policy", {})},
        **({"slot_policy": extra.pop("slot_policy")} if "slot_policy" in extra else {}),
    }


SLOTS = [
    {"slot_id": "late", "start": "2025-06-02T10:00:00+09:00"},  # 01:00Z
    {"slot_id": "early", "start": "2025-06-02T00:30:00Z"},  # 00:30Z
    {"slot_id": "berlin", "start": "2025-06-02T02:00:00", "timezone": "Europe/Berlin"},  # 00:00Z
]


def sel(key: str, slot: str, status: str = "selected") -> dict[str, str]:
    return {"invitee_key": key, "slot_id": slot, "status": status}


def run(
    r: dict[str, Any],
    selections: list[dict[str, str]],
    slots: list[dict[str, Any]] = SLOTS,
    now: str = "2025-06-01T00:00:00Z",
) -> dict[str, Any]:
    return evaluate_attendance({"rule": r, "slots": slots, "selections": selections, "now": now})


def test_earliest_is_by_absolute_instant() -> None:
    everyone = [sel(k, s) for k in KEYS[:2] for s in ("late", "early", "berlin")]
    r = rule(
        "K_OF_N",
        {"k": 2, "n": 6},
        slot_policy={"allow_multiple_slots_per_invitee": True},
        policy={"auto_finalize": True, "auto_finalize_delay_seconds": 90},
    )
    out = run(r, everyone)
    assert [s["start_utc"] for s in out["slots"]] == [
        "2025-06-02T01:00:00Z",
        "2025-06-02T00:30:00Z",
        "2025-06-02T00:00:00Z",
    ]
    assert out["decision"]["candidates"] == ["berlin", "early", "late"]
    assert (out["decision"]["finalize"], out["decision"]["slot_id"], out["decision"]["reason"]) == (
        True,
        "berlin",
        "earliest_valid",
    )
    assert out["auto_finalize_at"] == "2025-06-01T00:01:30Z"


def test_earliest_valid_mode_comes_before_the_tie_breaker() -> None:
    selections = [sel("u:1", "late"), sel("u:2", "late"), sel("u:3", "late"), sel("u:4", "early"), sel("u:5", "early")]
    # EARLIEST_VALID = the first slot that satisfies the rule, even with highest_score (seed 最初に条件を満たしたSlot)
    out = run(rule("K_OF_N", {"k": 2, "n": 6}, tie="highest_score"), selections)
    assert out["decision"]["candidates"] == ["early", "late"]
    assert (out["decision"]["slot_id"], out["decision"]["reason"]) == ("early", "earliest_valid")
    # the tie-breaker orders only slots that start at the same instant
    twins = [
        {"slot_id": "a", "start": "2025-06-02T10:00:00+09:00"},
        {"slot_id": "b", "start": "2025-06-02T01:00:00Z"},
        {"slot_id": "c", "start": "2025-06-03T10:00:00+09:00"},
    ]
    picks = [sel("u:1", "a"), sel("u:2", "a"), sel("u:3", "b"), sel("u:4", "b"), sel("u:5", "b"), sel("u:6", "c")]
    r = rule("ANY", tie="highest_score", slot_policy={"allow_multiple_slots_per_invitee": True})
    assert run(r, picks, twins)["decision"]["candidates"] == ["b", "a", "c"]


def test_highest_score_tie_breaker_and_best_score_waits() -> None:
    selections = [sel("u:1", "late"), sel("u:2", "late"), sel("u:3", "late"), sel("u:4", "early"), sel("u:5", "early")]
    manual = run(rule("K_OF_N", {"k": 2, "n": 6}, mode="MANUAL", tie="highest_score"), selections)
    assert manual["decision"]["candidates"] == ["late", "early"]
    assert manual["decision"]["recommended_slot_id"] == "late"
    best = run(rule("K_OF_N", {"k": 2, "n": 6}, mode="BEST_SCORE"), selections)
    assert best["decision"]["finalize"] is False
    assert best["decision"]["reason"] == "awaiting_responses"
    assert best["decision"]["recommended_slot_id"] == "late"
    assert best["decision"]["pending_invitee_keys"] == ["u:6"]
    done = run(rule("K_OF_N", {"k": 2, "n": 6}, mode="BEST_SCORE"), [*selections, sel("u:6", "berlin", "declined")])
    assert (done["decision"]["finalize"], done["decision"]["slot_id"], done["decision"]["reason"]) == (
        True,
        "late",
        "best_score",
    )
    assert done["auto_finalize_at"] is None


def test_manual_and_no_valid_and_no_slots() -> None:
    out = run(rule("ANY", mode="MANUAL"), [sel("u:1", "early")])
    assert (out["decision"]["finalize"], out["decision"]["reason"], out["decision"]["recommended_slot_id"]) == (
        False,
        "manual_mode",
        "early",
    )
    out = run(rule("ALL"), [sel("u:1", "early")])
    assert out["decision"]["reason"] == "no_valid_slot"
    assert out["slots"][1]["missing_required"] == ["u:2", "u:3", "u:4", "u:5", "u:6"]
    assert out["slots"][1]["shortfall"] == 5
    assert run(rule("ANY"), [], slots=[])["decision"]["reason"] == "no_slots"


def test_required_plus_quorum_state() -> None:
    r = rule("REQUIRED_PLUS_QUORUM", {"required_invitee_keys": ["u:1", "u:2"], "min_additional": 2}, mode="BEST_SCORE")
    out = run(r, [sel("u:1", "early"), sel("u:3", "early"), sel("u:4", "early"), sel("u:5", "early")])
    early = out["slots"][1]
    assert (early["satisfied"], early["score"], early["missing_required"], early["shortfall"]) == (False, 4, ["u:2"], 1)


def test_group_any_state() -> None:
    groups = [
        {"name": "A", "min": 2, "any_of_invitee_keys": ["u:1", "u:2", "u:3"]},
        {"name": "B", "min": 3, "any_of_invitee_keys": ["u:4", "u:5", "u:6"]},
    ]
    out = run(rule("GROUP_ANY", {"groups": groups}), [sel("u:1", "late"), sel("u:4", "late"), sel("u:5", "late")])
    assert out["slots"][0]["groups"] == [
        {"name": "A", "min": 2, "count": 1, "satisfied": False, "satisfiable": True},
        {"name": "B", "min": 3, "count": 2, "satisfied": False, "satisfiable": True},
    ]
    assert out["slots"][0]["shortfall"] == 1


def test_scope_and_ignored_selections() -> None:
    r = rule("K_OF_N", {"k": 2, "n": 5}, exclude=["u:6"])
    out = run(r, [sel("u:6", "early"), sel("u:1", "early"), sel("u:9", "early"), sel("u:2", "nope")])
    assert out["slots"][1]["score"] == 1
    assert out["ignored_selections"] == 3


def test_conflict_policy_and_multiple_slots() -> None:
    selections = [sel("u:1", "late"), sel("u:1", "early")]
    first = run(rule("ANY"), selections)
    assert [s["score"] for s in first["slots"]] == [1, 0, 0]
    last = run(rule("ANY", slot_policy={"conflict_policy": "last_selected"}), selections)
    assert [s["score"] for s in last["slots"]] == [0, 1, 0]
    both = run(rule("ANY", slot_policy={"allow_multiple_slots_per_invitee": True}), selections)
    assert [s["score"] for s in both["slots"]] == [1, 1, 0]
    # a later answer for the same slot wins
    changed = run(rule("ANY"), [sel("u:1", "late"), sel("u:1", "late", "declined"), sel("u:1", "early")])
    assert [s["score"] for s in changed["slots"]] == [0, 1, 0]


def test_selected_at_orders_answers_when_all_have_it() -> None:
    selections = [
        {**sel("u:1", "late"), "selected_at": "2025-05-02T00:00:00Z"},
        {**sel("u:1", "early"), "selected_at": "2025-05-01T00:00:00Z"},
    ]
    assert [s["score"] for s in run(rule("ANY"), selections)["slots"]] == [0, 1, 0]


def test_past_slots_are_reported_but_never_finalised() -> None:
    selections = [sel("u:1", "early"), sel("u:1", "late", "declined"), sel("u:2", "late")]
    r = rule("ANY", slot_policy={"allow_multiple_slots_per_invitee": True})
    # now = 00:45Z: berlin (00:00Z) and early (00:30Z) have started, late (01:00Z) has not
    out = run(r, [*selections, sel("u:3", "berlin")], now="2025-06-02T00:45:00Z")
    assert [(s["slot_id"], s["in_past"], s["satisfied"]) for s in out["slots"]] == [
        ("late", False, True),
        ("early", True, True),
        ("berlin", True, True),
    ]
    assert out["decision"]["candidates"] == ["late"]
    assert (out["decision"]["finalize"], out["decision"]["slot_id"]) == (True, "late")
    # a slot starting exactly now counts as started; only started slots valid → slot_in_past
    out = run(r, [sel("u:1", "early")], now="2025-06-02T00:30:00Z")
    assert out["slots"][1]["in_past"] is True
    assert (out["decision"]["finalize"], out["decision"]["slot_id"], out["decision"]["reason"]) == (
        False,
        None,
        "slot_in_past",
    )
    assert out["decision"]["recommended_slot_id"] is None
    assert (
        out["decision"]["message"]
        == "条件を満たす候補日時はすべて開始時刻を過ぎています。新しい候補日時を追加してください。"
    )
    assert out["auto_finalize_at"] is None


def test_bad_inputs() -> None:
    with pytest.raises(ToolError) as err:
        run(
            rule("ANY"),
            [],
            slots=[{"slot_id": "a", "start": "2025-06-02T10:00:00"}, {"slot_id": "a", "start": "2025-06-02T10:00:00"}],
        )
    assert (err.value.code, err.value.message) == ("INVALID_INPUT", "slots[1].slot_id 'a' is used twice")
    with pytest.raises(ToolError) as err:
        run(rule("ANY"), [], slots=[{"slot_id": "a", "start": "tomorrow"}])
    assert err.value.message == "slots[0].start: 'tomorrow' is not an RFC 3339 date-time"
    with pytest.raises(ToolError) as err:
        run(rule("ANY"), [], slots=[{"slot_id": "a", "start": "2025-06-02T10:00:00Z", "end": "2025-06-02T09:00:00Z"}])
    assert err.value.message == "slots[0].end is before its start"
    # now + auto_finalize_delay_seconds past year 9999 is a catalogued error, not a 500
    auto = rule("ANY", policy={"auto_finalize": True, "auto_finalize_delay_seconds": 7200})
    far = [{"slot_id": "z", "start": "9999-12-31T23:30:00Z"}]
    with pytest.raises(ToolError) as err:
        run(auto, [sel("u:1", "z")], slots=far, now="9999-12-31T23:00:00Z")
    assert (err.value.code, err.value.message) == (
        "INVALID_INPUT",
        "now plus auto_finalize_delay_seconds (7200) is after the year 9999",
    )
    with pytest.raises(ToolError) as err:
        run(rule("ANY"), [], slots=[{"slot_id": "a", "start": "0001-01-01T00:00:00+09:00"}])
    assert (err.value.code, err.value.message) == (
        "INVALID_INPUT",
        "slots[0].start: '0001-01-01T00:00:00+09:00' is out of the supported range in UTC",
    )
    with pytest.raises(ToolError) as err:
        run(rule("ANY"), [], now="0001-01-01T00:00:00+01:00")
    assert err.value.code == "INVALID_INPUT"
    with pytest.raises(ToolError) as err:
        run(rule("K_OF_N", {"k": 3}), [])
    assert (err.value.code, err.value.message) == (
        "VALIDATION_ERROR",
        "invalid attendance rule: rule.n is required for type K_OF_N",
    )


# -- properties -----------------------------------------------------------------------------
SLOT_IDS = ["s0", "s1", "s2", "s3"]
PROP_SLOTS = [{"slot_id": s, "start": f"2025-06-0{i + 1}T10:00:00+09:00"} for i, s in enumerate(SLOT_IDS)]
MULTI = {"allow_multiple_slots_per_invitee": True}
selection_st = st.builds(
    sel, st.sampled_from(KEYS), st.sampled_from(SLOT_IDS), st.sampled_from(["selected", "declined", "pending"])
)
selections_st = st.lists(selection_st, max_size=30)
rules_st = st.one_of(
    st.just(rule("ALL", slot_policy=MULTI)),
    st.just(rule("ANY", slot_policy=MULTI)),
    st.integers(1, 6).map(lambda k: rule("K_OF_N", {"k": k, "n": 6}, slot_policy=MULTI)),
    st.tuples(st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True), st.integers(0, 3)).map(
        lambda t: rule(
            "REQUIRED_PLUS_QUORUM", {"required_invitee_keys": t[0], "min_additional": t[1]}, slot_policy=MULTI
        )
    ),
    st.integers(1, 3).map(
        lambda m: rule(
            "GROUP_ANY",
            {
                "groups": [
                    {"name": "A", "min": m, "any_of_invitee_keys": KEYS[:3]},
                    {"name": "B", "min": m, "any_of_invitee_keys": KEYS[3:]},
                ]
            },
            slot_policy=MULTI,
        )
    ),
)


def satisfied(r: dict[str, Any], selections: list[dict[str, str]]) -> list[bool]:
    return [s["satisfied"] for s in run(r, selections, PROP_SLOTS)["slots"]]


@settings(max_examples=150, deadline=None)
@given(rules_st, selections_st, st.sampled_from(KEYS), st.sampled_from(SLOT_IDS))
def test_adding_a_selection_never_breaks_a_satisfied_slot(
    r: dict[str, Any], selections: list[dict[str, str]], key: str, slot: str
) -> None:
    before = satisfied(r, selections)
    after = satisfied(r, [*selections, sel(key, slot)])
    assert all(a or not b for b, a in zip(before, after, strict=True))


@settings(max_examples=100, deadline=None)
@given(selections_st, st.sampled_from(KEYS), st.sampled_from(SLOT_IDS))
def test_first_selected_is_monotone_for_appended_selections(
    selections: list[dict[str, str]], key: str, slot: str
) -> None:
    r = rule("K_OF_N", {"k": 2, "n": 6})
    before = satisfied(r, selections)
    after = satisfied(r, [*selections, sel(key, slot)])
    assert all(a or not b for b, a in zip(before, after, strict=True))


@settings(max_examples=100, deadline=None)
@given(selections_st)
def test_all_equals_k_of_n_with_k_n(selections: list[dict[str, str]]) -> None:
    assert satisfied(rule("ALL", slot_policy=MULTI), selections) == satisfied(
        rule("K_OF_N", {"k": 6, "n": 6}, slot_policy=MULTI), selections
    )


@settings(max_examples=100, deadline=None)
@given(selections_st)
def test_any_equals_k_of_n_with_k_1(selections: list[dict[str, str]]) -> None:
    assert satisfied(rule("ANY", slot_policy=MULTI), selections) == satisfied(
        rule("K_OF_N", {"k": 1, "n": 6}, slot_policy=MULTI), selections
    )


@settings(max_examples=100, deadline=None)
@given(selections_st, st.integers(0, 5))
def test_required_with_no_required_pool_is_k_of_n(selections: list[dict[str, str]], extra: int) -> None:
    rpq = rule("REQUIRED_PLUS_QUORUM", {"required_invitee_keys": ["u:1"], "min_additional": extra}, slot_policy=MULTI)
    single = rule(
        "GROUP_ANY", {"groups": [{"name": "all", "min": extra + 1, "any_of_invitee_keys": KEYS}]}, slot_policy=MULTI
    )
    everyone_needed = [
        a and b
        for a, b in zip(
            satisfied(single, selections),
            satisfied(rule("ALL", include=["u:1"], slot_policy=MULTI), selections),
            strict=True,
        )
    ]
    # RPQ(u:1, extra) ⇔ u:1 attends and at least extra+1 attend in total
    assert satisfied(rpq, selections) == everyone_needed


@settings(max_examples=100, deadline=None)
@given(selections_st)
def test_score_and_decision_invariants(selections: list[dict[str, str]]) -> None:
    out = run(rule("K_OF_N", {"k": 3, "n": 6}, slot_policy=MULTI), selections, PROP_SLOTS)
    for slot in out["slots"]:
        assert 0 <= slot["score"] <= 6
        assert slot["satisfied"] == (slot["score"] >= 3) == (slot["shortfall"] == 0)
    valid = [s["slot_id"] for s in out["slots"] if s["satisfied"]]
    assert sorted(out["decision"]["candidates"]) == sorted(valid)
    assert out["decision"]["finalize"] == bool(valid)
