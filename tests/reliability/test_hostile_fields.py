"""Wrong types in every field of a pending candidate and of an outbox record: one odd record never
stops the gate or the sender for everybody else, and never crashes a role.

The records are real ones (written by ``donebell hook codex-stop`` for a real rollout), copied under
fresh keys with one field replaced by each of :data:`WRONG` values, beside one good turn of another
root. Each field is its own case, so a failure names the field.
"""

from __future__ import annotations

import collections
import copy
from collections.abc import Callable
from typing import Any

import pytest
from donebell.shared.keys import event_key, sequence_id
from donebell.shared.records import new_candidate, to_outbox
from support.figures import record
from support.ntfy_standin import NtfyStandin
from support.rig import Rig

WRONG: tuple[Any, ...] = (None, 0, -1, 1e308, True, "x", "", [], [1], {}, {"a": 1}, "y" * 100_000)
#: The fields of a real Codex Stop candidate (records.new_candidate + the hook's fields).
CANDIDATE_FIELDS = tuple(
    k
    for k in new_candidate(
        key="0" * 64,
        provider="codex",
        source="codex-stop",
        thread_id=None,
        turn_id=None,
        classification=None,
        classification_evidence=None,
        parent_thread_id=None,
        root_thread_id=None,
        error=None,
        last_message=None,
        origin=None,
        completed_at=None,
        duration_ms=None,
        cwd=None,
        transcript_path=None,
        codex_home=None,
        sqlite_home=None,
        outcome=None,
        has_user_message=None,
        has_final_message=None,
        stop_hook_active=None,
    )
    if k not in ("schema", "key")
)
OUTBOX_FIELDS = (
    *CANDIDATE_FIELDS,
    "promoted_at",
    "verdict",
    "sequence_id",
    "attempts",
    "next_attempt_at",
    "last_error",
)
#: Known product bugs (docs/reliability.md): one record with these fields wrong stops every gate pass.
GATE_BUGS: dict[str, str] = {}  # fields whose wrong type once stopped the gate: all fixed


def _variants(template: dict[str, Any], field: str, label: str) -> list[dict[str, Any]]:
    out = []
    for n, value in enumerate(WRONG):
        rec = copy.deepcopy(template)
        rec[field] = value
        rec["key"] = event_key("codex", f"{label}-{field}", str(n))
        if field != "sequence_id" and "sequence_id" in rec:
            rec["sequence_id"] = sequence_id("codex", rec["key"])
        out.append(rec)
    return out


def _two_turns(rig: Rig) -> tuple[dict[str, Any], Any]:
    """A good pending turn, and the real pending record of a second root as the template."""
    good, other = rig.new_turn(), rig.new_turn()
    for turn in (good, other):
        assert rig.hook_stop(turn).rc == 0
        rig.complete(turn)
    template = rig.state.read("pending", other.key)
    assert template is not None
    rig.state.remove("pending", other.key)
    return template, good


@pytest.mark.parametrize(
    "field",
    [
        pytest.param(f, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=GATE_BUGS[f]))
        if f in GATE_BUGS
        else f
        for f in CANDIDATE_FIELDS
    ],
)
def test_a_wrong_typed_pending_field_never_stops_the_gate(
    make_rig: Callable[..., Rig], standin: NtfyStandin, field: str
) -> None:
    """12 wrong values of one pending field beside a good turn of another root: the good turn is delivered,
    the role exits 0, no gate pass fails, and each odd record ends in exactly one folder."""
    rig = make_rig()
    template, good = _two_turns(rig)
    variants = _variants(template, field, "pending")
    for rec in variants:
        assert rig.state.create("pending", rec)

    run = rig.deliver_once()

    assert run.rc == 0, run.output
    failures = [line for line in rig.log() if line.get("msg") == "gate pass failed; delivering the outbox anyway"]
    assert failures == [], failures[0]["error"]
    assert rig.where(good.key) == ["sent"]
    where = collections.Counter("+".join(rig.where_or_dead_letter(rec["key"])) for rec in variants)
    assert all("+" not in w and w for w in where), where
    record(f"wrong_type_pending_{field}", values=len(WRONG), outcomes=dict(where))


def test_wrong_types_in_every_outbox_field_never_wedge_delivery(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """Every outbox field set to each of 12 wrong values (~450 records) beside a good one: each record is
    sent or dead-lettered (none stuck, none crashing the role) and the good one is delivered."""
    rig = make_rig()
    template, good = _two_turns(rig)
    outbox_template: dict[str, Any] = {**to_outbox(template, verdict="idle")}
    variants = [rec for field in OUTBOX_FIELDS for rec in _variants(outbox_template, field, "outbox")]
    for rec in variants:
        assert rig.state.create("outbox", rec)

    passes = rig.settle([good.key, *(rec["key"] for rec in variants)], scan=False)

    assert rig.where(good.key) == ["sent"]
    where = collections.Counter("+".join(rig.where(rec["key"])) or "gone" for rec in variants)
    assert set(where) <= {"sent", "dead"}, where
    assert rig.state.count("outbox") == 0
    record("wrong_type_outbox", fields=len(OUTBOX_FIELDS), records=len(variants), passes=passes, outcomes=dict(where))
