"""Reply to continue into the session that is still open (the agent's ``live_inbox``).

When the conversation's session is still open (Claude Code: an interactive session with its
messaging socket), the reply is delivered into it as one user message instead of starting a
second process on the same conversation; when it is gone, the reply goes the resume way, as
before. What happened is reported in the reply's record as ``delivery``:

* ``delivered``: the session took the message and its transcript shows the new turn;
* ``held``: the session took the message but no turn has started after :data:`HELD_AFTER_SECONDS`
  while it stays open (its inbound policy holds it, e.g. for a permission-mode mismatch, until the
  user lets it in); still watched until the confirmation window ends;
* ``expired``: the message was taken but the session closed, or the window ended, without the turn;
* ``resumed``: the session was gone; the agent's own resume (or its daemon) started the turn.

The socket itself answers nothing, so every one of these is read from the agent's own files.
"""

from __future__ import annotations

from typing import Any

from donebell.shared.statedir import now
from donebell.workers.agents import registry
from donebell.workers.kit.thread_view import DaemonError, ThreadView
from donebell.workers.wake.pipeline_like import WakePipeline

#: A message taken by the session but not turned into a turn this long after: ``held``.
HELD_AFTER_SECONDS = 20.0


def start_in_session(pipe: WakePipeline, record: dict[str, Any], view: ThreadView, prompt: str) -> float | None | bool:
    """Deliver into the open session: seconds to the next look; False when there is none (or
    nothing listens: nothing was asked, so the resume way goes now)."""
    agent = registry.agent(record["provider"])
    inbox = agent.live_inbox(record["conversation_id"]) if agent is not None else None
    if agent is None or inbox is None:
        return False
    attempt = int(record.get("attempts") or 0) + 1
    fields = {"attempts": attempt, "baseline_turns": view.turns, "requested_at": now(), "via": "inbox"}
    pipe.queue.advance(record, "requested", **fields)  # before the write: never a second message
    try:
        agent.post_to_inbox(inbox, prompt)
    except DaemonError as exc:
        if exc.unreachable:
            pipe.log.info("wake %s: the session's inbox is gone (%s); resuming instead", record["message_id"], exc)
            pipe.queue.advance(record, "verified", via="exec", attempts=attempt - 1)
            return False
        pipe.log.warning("wake %s: %s; waiting for the transcript to confirm", record["message_id"], exc)
    pipe.count("requested")
    pipe.log.info("wake %s: delivered into the open session; waiting for its turn", record["message_id"])
    return 0.25


def unconfirmed_inbox(pipe: WakePipeline, record: dict[str, Any]) -> float | None:
    """A message in the session's inbox and no new turn yet: held, expired, or look again."""
    agent = registry.agent(record["provider"])
    open_now = agent is not None and agent.live_inbox(record["conversation_id"]) is not None
    waited = now() - float(record.get("requested_at") or 0)
    if not open_now or waited > pipe.confirm_seconds:
        why = "the session closed without the turn" if not open_now else "no new turn seen"
        pipe.queue.advance(record, "unconfirmed", reason=why, delivery="expired")
        pipe.count("unconfirmed")
        pipe.log.warning("wake %s: expired: %s", record["message_id"], why)
        return None
    if waited > HELD_AFTER_SECONDS and record.get("delivery") != "held":
        pipe.queue.advance(record, "requested", delivery="held")
        pipe.log.info("wake %s: held by the session (no turn %.0f s after delivery)", record["message_id"], waited)
    return 2.0


def confirmed_delivery(record: dict[str, Any]) -> str:
    """``delivered`` into an open session (its inbox or its daemon), else ``resumed``."""
    return "delivered" if record.get("via") in ("inbox", "app-server") else "resumed"
