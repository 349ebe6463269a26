"""A weak candidate folded into the real key its agent matched it to (the ``merged`` verdict).

A hook that could not name its turn gets a weak random key (``keys.identity``); when the agent's
gate matches it to a turn (Codex: ``workers/agents/codex/weak_match.py``) it answers
``Verdict.suppress(MERGED, fields={"merged_into": <real key>, <the turn's own fields>})``. The
commit then folds the weak candidate into ``pending/<real key>`` with the same
:func:`~donebell.shared.ingest.submit_candidate` every source uses, before it finishes the weak one
with a ``merged`` receipt; the real key is judged as any candidate with a Stop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from donebell.shared.ingest import submit_candidate
from donebell.shared.statedir import StateDir

if TYPE_CHECKING:
    from donebell.shared.record_types import Candidate, ReceiptReason

MERGED: ReceiptReason = "merged"


def merge_into(state: StateDir, weak: dict[str, Any], fields: dict[str, Any]) -> str:
    """Fold the weak candidate ``weak`` into the real key ``fields["merged_into"]``; the submit result.

    Called outside the weak key's mutation lock (the hook never holds two, nor does the gate), and
    before the weak candidate is finished: a crash in between leaves it pending, and the next
    pass merges again (a source already merged changes nothing).
    """
    turn = {name: value for name, value in fields.items() if name != "merged_into"}
    candidate = {
        name: value for name, value in weak.items() if name not in ("probe", "revision", "updated_at", "sources")
    }
    candidate.update(turn, key=fields["merged_into"], weak_identity=False, revision=1)
    candidate["sources"] = [weak.get("source")]
    candidate["merged_from"] = weak["key"]
    # The weak candidate as read back from pending/ (validated there), re-keyed: a candidate's fields.
    result: str = submit_candidate(state, cast("Candidate", candidate))
    state.log("info", "weak Stop merged into its turn's key", key=candidate["key"], weak_key=weak["key"], result=result)
    return result
