"""A tapped Allow or Deny: the wake role's side of answering a permission prompt (docs/approvals.md).

The ticket verified (signature, host, expiry) and its nonce claimed (a second use is ``replay``),
the answer must name a request this host is still asking: its needs-you record exists, of the
same agent, conversation and turn, and the digest of the exact tool call matches (else
``unknown-request``: a ticket of another request never answers this one). The desk wins: a prompt
answered at the terminal (the agent went on) is closed and the tap refused as
``already-answered``, as is any tap after the request's one answer (the other button, a second
phone, the hook's own close when it stopped waiting). The answer is written to
``wake/answers/`` by exclusive create before the reply is marked ``answered``, with the digest of
the call it answers; the waiting hook prints it only for that very call.
"""

from __future__ import annotations

from typing import Any

from donebell.shared.records import NEEDS_YOU
from donebell.shared.statedir import DEAD, SUPPRESSED, InvalidRecord
from donebell.workers.agents import registry
from donebell.workers.wake.pipeline_like import WakePipeline


def handle_answer(pipe: WakePipeline, record: dict[str, Any]) -> None:
    """Verify the tapped answer ``record`` (status ``received``) and answer its request, or refuse."""
    from donebell.workers.wake.policy import approvals_problem

    if not pipe.queue.claim(f"nonce-{record['nonce']}", record["key"]):
        pipe.refuse(record, "replay")
        return
    if approvals_problem(pipe.settings) is not None:
        pipe.refuse(record, "approvals-off")
        return
    request = str(record.get("request") or "")
    needs, folder = _request(pipe, request)
    if needs is None or not _same_request(needs, record):
        pipe.refuse(record, "unknown-request")
        return
    box = pipe.state.answer_box()
    desk = _answered_at_terminal(pipe, needs, folder)
    if desk is not None:
        box.answer(request, "closed", reason=f"answered at the terminal: {desk}"[:200])
        _refuse_answered(pipe, record, needs)
        return
    decision = str(record["decision"])
    answer, ours = box.answer(
        request, decision, message_id=record["message_id"], provider=record["provider"], digest=needs["tool_digest"]
    )
    if not ours:
        _refuse_answered(pipe, record, needs)
        return
    pipe.queue.advance(record, "answered", answered_at=answer["created_at"])
    pipe.count(f"answered-{decision}")
    pipe.log.info("wake reply %s answered the permission prompt: %s", record["message_id"], decision)


def _refuse_answered(pipe: WakePipeline, record: dict[str, Any], needs: dict[str, Any]) -> None:
    """Refused ``already-answered``; the card that still offers the buttons is cleared on the
    phone where the server can (ntfy 2.16+), and what it said is kept with the refusal."""
    sequence_id = needs.get("sequence_id")
    card = None
    if pipe.clear_card is not None and isinstance(sequence_id, str) and sequence_id:
        card = pipe.clear_card(sequence_id)
    pipe.queue.advance(record, "refused", reason="already-answered", **({"card": card} if card else {}))
    pipe.count("refused-already-answered")
    pipe.log.warning("wake reply %s refused: already-answered (card: %s)", record["message_id"], card or "kept")


def _request(pipe: WakePipeline, request: str) -> tuple[dict[str, Any] | None, str | None]:
    folder = pipe.state.locate(request) if request else None
    if folder is None:
        return None, None
    try:
        found = pipe.state.read(folder, request)
    except InvalidRecord:
        return None, folder
    return (found if found is not None and found.get("notice") == NEEDS_YOU else None), folder


def _same_request(needs: dict[str, Any], record: dict[str, Any]) -> bool:
    """The ticket names this very request: agent, conversation, turn and the exact call."""
    found = registry.agent(needs.get("provider"))
    if found is None or needs.get("provider") != record.get("provider"):
        return False
    conv, turn = found.conversation_of(needs)
    digest = needs.get("tool_digest")
    return (conv, turn or "-") == (record.get("conversation_id"), record.get("turn_id")) and (
        isinstance(digest, str) and digest == record.get("digest")
    )


def _answered_at_terminal(pipe: WakePipeline, needs: dict[str, Any], folder: str | None) -> str | None:
    if folder in (SUPPRESSED, DEAD):
        return f"its notification is in {folder}/"
    from donebell.workers.kit.needs_answered import needs_answered

    return needs_answered(pipe.state, needs, registry.agent(needs.get("provider")))
