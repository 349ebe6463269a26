"""Tell the phone what became of a tap that did not start a turn (docs/wake.md, "Several machines").

A tap that was refused as ``stale`` or whose agent command failed must not vanish into
``wake/replies/``: the wake role logs one line (with the agent's own reason) and publishes a short
notification to the notification topic, with the original card's ``sequence_id``, so ntfy 2.16+
replaces that card and older servers show it as a new push. Its title names the machine. A failed
start never ran a turn, so its ticket and turn are released and the notice carries fresh buttons:
one tap more, once the cause is fixed (a stale tap's notice gets them too: the user decides now).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from donebell.shared.keys import event_key, sequence_id
from donebell.shared.statedir import SENT, InvalidRecord
from donebell.workers.kit.labels import format_duration, origin_label
from donebell.workers.wake.actions import wake_actions

if TYPE_CHECKING:
    from donebell.workers.wake.pipeline_like import WakePipeline

NOTICE_MAX_CHARS = 400


def failed(pipe: WakePipeline, record: dict[str, Any], reason: str) -> str:
    """A Continue whose agent did not start a turn: one more tap is allowed, and the phone hears why."""
    # No turn started: the button is not used up. Its ticket and the turn are free again (a tap
    # on the same button, or on the notice's fresh one, tries once more).
    pipe.queue.release(f"nonce-{record.get('nonce')}")
    pipe.queue.release(f"turn-{record.get('provider')}-{record.get('conversation_id')}-{record.get('turn_id')}")
    return _notice(pipe, record, "Continue failed", f"the agent did not start: {reason}")


def stale(pipe: WakePipeline, record: dict[str, Any], age: float, window: float) -> None:
    """Refuse a tap made too long before this machine read it (``stale``), in the log and on the phone."""
    pipe.queue.advance(record, "refused", reason="stale")
    pipe.count("refused-stale")
    late = f"the tap reached this machine {format_duration(age)} after it was made (the limit is {format_duration(window)})"
    told = _notice(pipe, record, "Continue not run", f"{late}: not run; tap again to continue now")
    pipe.log.warning("wake reply %s refused: stale: %s (phone: %s)", record["message_id"], late, told)


def _notice(pipe: WakePipeline, record: dict[str, Any], what: str, text: str) -> str:
    """Publish the notice (if the role can publish); what became of it, for the log."""
    if pipe.publish is None or record.get("decision") is not None:
        return "not told: no publisher" if pipe.publish is None else "not told: an Allow/Deny tap"
    receipt = _receipt(pipe, record)
    settings = pipe.settings
    payload: dict[str, Any] = {
        "topic": settings.topic,
        "title": f"{origin_label(receipt or {}, settings)}: {what}",
        "message": text[:NOTICE_MAX_CHARS],
        "tags": ["warning"],
    }
    if receipt is not None:
        key = str(receipt.get("key") or "")
        payload["sequence_id"] = str(receipt.get("sequence_id") or sequence_id(str(record["provider"]), key))
        buttons = wake_actions(receipt, settings, state=pipe.state)
        if buttons:
            payload["actions"] = buttons
    return pipe.publish(payload)


def _receipt(pipe: WakePipeline, record: dict[str, Any]) -> dict[str, Any] | None:
    """The sent receipt of the notified turn (its card's sequence id, the turn its buttons name)."""
    try:
        key = event_key(str(record["provider"]), str(record["conversation_id"]), str(record["turn_id"]))
        return pipe.state.read(SENT, key)
    except (InvalidRecord, KeyError, OSError):
        return None
