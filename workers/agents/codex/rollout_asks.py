"""A Codex call waiting on the user's approval, as far as the rollout shows it (no hook needed).

Codex's ``PermissionRequest`` hook runs only once trusted; the local scanner reads every rollout.
Measured on Codex 0.171 (docs/approvals.md, "What is built"): while an approval dialog waits, the
rollout's last records are the call itself (``response_item`` ``function_call`` ``exec_command``
whose arguments ask ``sandbox_permissions: "require_escalated"``, with its ``justification``) and a
``token_usage_record``; nothing more is written until it is answered. The turn's ``turn_context``
says who answers: ``approval_policy`` and ``approvals_reviewer`` (``user`` in the TUI;
``auto_review`` under ``exec --approve-for-me``, where a model answers within a second).

That is evidence, not proof: a call allowed by a rule runs without asking and looks the same until
it ends. So a call counts as a request only when all of these hold:

* its turn's reviewer is the user and its policy can ask (``on-request``, ``on-failure``,
  ``untrusted``); a turn whose ``turn_context`` was not read (the cursor started at the file's
  end) never counts: no push rather than a wrong one;
* it has no ``function_call_output`` and its turn has not ended;
* the rollout has been quiet for :data:`ASK_QUIET_SECONDS` since (most allowed commands end sooner;
  one that runs longer is pushed, like a command allowed at the desk, docs/approvals.md);
* a process still has the thread open (it holds the thread's writer lock, ``writer_lock.py``): a call
  left open by a Codex that exited, or met again in a replayed old rollout, waits for nobody;
* the hook did not record the same request: the hook's key names the call's digest and the
  rollout's size when it ran, which is one of the line ends since the call (all are tried).

Then one needs-you record is written with the key the hook would have used at the rollout's
current size, and the delivery role's policies (desk grace, answered at the desk) decide as for
the hook's. The state lives in the cursor's turn (``ask``), so a restart neither loses nor repeats it.

The cursor is a file at rest: it keeps the call's digest, offsets and redacted one-line summary,
never the command (which may carry a token); the command's excerpt is kept only with
``include_message``, redacted, as the record itself would keep it.
"""

from __future__ import annotations

from typing import Any

import orjson
from donebell.shared.keys import event_key
from donebell.shared.records import NEEDS_YOU
from donebell.shared.statedir import StateDir, now
from donebell.workers.agents.codex.rollout_evidence import SourceContext
from donebell.workers.agents.codex.writer_lock import thread_is_open
from donebell.workers.kit.hook_context import stored_excerpt
from donebell.workers.kit.jsonl_tail import Cursor
from donebell.workers.kit.needs_you import create_unless_known, needs_record, summary_of, tool_digest

#: How long the rollout must stay quiet after an escalated call before it counts as a request.
ASK_QUIET_SECONDS = 10.0
ASKING_POLICIES = ("on-request", "on-failure", "untrusted")
ENDS_KEPT = 32
ARGUMENTS_LIMIT = 64 << 10


def feed(cur: Cursor, rec: dict[str, Any], start: int, end: int, *, include_message: bool = False) -> None:
    """Note what one rollout record says about a call waiting on the user (cursor turn state)."""
    kind, payload = rec.get("type"), rec.get("payload")
    if not isinstance(payload, dict):
        return
    open_turn = _open_ask_turn(cur)
    if kind == "turn_context":
        turn = cur.turns.get(str(payload.get("turn_id")))
        if turn is not None:
            policy, reviewer = payload.get("approval_policy"), payload.get("approvals_reviewer")
            turn["asks_user"] = policy in ASKING_POLICIES and reviewer == "user"
    elif kind == "response_item" and payload.get("type") == "function_call":
        _escalated_call(cur, payload, start, end, include_message)
        return
    elif kind == "response_item" and payload.get("type") == "function_call_output":
        if open_turn is not None and open_turn["ask"].get("call_id") == payload.get("call_id"):
            del open_turn["ask"]
            return
    elif kind == "event_msg" and payload.get("type") in ("task_complete", "turn_aborted", "task_started"):
        for turn in cur.turns.values():
            turn.pop("ask", None)
        return
    if open_turn is not None and not open_turn["ask"].get("done"):
        ask = open_turn["ask"]  # replaced, not changed: a cursor's copy shares the turn's values
        open_turn["ask"] = {**ask, "ends": [*ask["ends"], end][-ENDS_KEPT:], "last_at": now()}


def _escalated_call(cur: Cursor, payload: dict[str, Any], start: int, end: int, include_message: bool) -> None:
    raw = payload.get("arguments")
    if payload.get("name") != "exec_command" or not isinstance(raw, str) or len(raw) > ARGUMENTS_LIMIT:
        return
    try:
        args = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return
    if not isinstance(args, dict) or args.get("sandbox_permissions") != "require_escalated":
        return
    command, why = args.get("cmd"), args.get("justification")
    meta = payload.get("internal_chat_message_metadata_passthrough")
    turn_id = (meta.get("turn_id") if isinstance(meta, dict) else None) or cur.current_turn
    turn = cur.turns.get(str(turn_id))
    if turn is None or not isinstance(command, str):
        return
    turn["ask"] = {
        "turn_id": turn_id,
        "call_id": payload.get("call_id"),
        **_call_at_rest(command, why if isinstance(why, str) else None, include_message),
        "start": start,
        "ends": [end],
        "last_at": now(),
    }


def _call_at_rest(command: str, why: str | None, include_message: bool) -> dict[str, Any]:
    """What the cursor keeps of the call: the digest the hook's key names (of the same
    ``tool_input`` the hook gets), the redacted summary, and the command's excerpt only with
    ``include_message``; never the command itself."""
    tool_input = {"command": command, **({"description": why} if why else {})}
    payload = {"tool_name": "Bash", "tool_input": tool_input}
    return {
        "digest": tool_digest(payload),
        "summary": summary_of(payload),
        "excerpt": stored_excerpt(command, include_message),
    }


def _at_rest(ask: dict[str, Any]) -> dict[str, Any]:
    """An ``ask`` a cursor from before kept with its command: the same call without it."""
    if "command" not in ask:
        return ask
    kept = {k: v for k, v in ask.items() if k not in ("command", "why")}
    command, why = ask.get("command"), ask.get("why")
    if isinstance(command, str):
        kept.update(_call_at_rest(command, why if isinstance(why, str) else None, False))
    return kept


def _open_ask_turn(cur: Cursor) -> dict[str, Any] | None:
    turn = cur.turns.get(str(cur.current_turn))
    if turn is None or not isinstance(turn.get("ask"), dict):
        return None
    turn["ask"] = _at_rest(turn["ask"])
    return turn


def due_at(cur: Cursor) -> float | None:
    """When the cursor's open call counts as a request (epoch seconds), or None: nothing to do."""
    turn = _open_ask_turn(cur)
    if turn is None or turn["ask"].get("done") or turn.get("asks_user") is not True:
        return None
    return float(turn["ask"]["last_at"]) + ASK_QUIET_SECONDS


def record_ask(state: StateDir, cur: Cursor, ctx: SourceContext) -> str:
    """Write the needs-you record of the cursor's due call (or find the hook's): what happened.
    The call is marked done once there is an outcome; an error leaves it due for the next pass."""
    turn = _open_ask_turn(cur)
    assert turn is not None
    outcome = _outcome(state, cur, turn["ask"], ctx)
    turn["ask"] = {**turn["ask"], "done": True}
    return outcome


def _outcome(state: StateDir, cur: Cursor, ask: dict[str, Any], ctx: SourceContext) -> str:
    meta = cur.meta or {}
    thread_id = meta.get("thread_id") or cur.thread_id
    if not thread_id:
        return "no-thread"
    if not thread_is_open(ctx.codex_home, thread_id):
        # No process has the thread open (Codex exited, or an old call met again): nobody waits.
        state.log("info", "needs-you: a call left open in a thread nobody has open; no push", thread_id=thread_id)
        return "closed"
    digest, turn_id = ask.get("digest"), str(ask["turn_id"])
    if not isinstance(digest, str):
        return "no-call"
    payload = {"tool_name": "Bash", "cwd": meta.get("cwd"), "transcript_path": cur.path}

    def key_at(size: int) -> str:
        return event_key("codex", thread_id, f"{NEEDS_YOU}|{turn_id}|{digest}|{size}")

    hooks = [key for key in map(key_at, [ask["start"], *ask["ends"]]) if state.locate(key)]
    if hooks:
        state.log("info", "needs-you: the hook recorded this call already", key=hooks[0], thread_id=thread_id)
        return "hook"
    root = meta.get("root_thread_id") if meta.get("classification") == "child" else None
    ids = {
        "thread_id": thread_id,
        "turn_id": turn_id,
        "root_thread_id": root or thread_id,
        "call_id": ask.get("call_id"),
    }
    size = ask["ends"][-1]
    excerpt = ask.get("excerpt") if ctx.include_message else None
    record = needs_record(
        payload, key_at(size), "codex", "codex-rollout", "rollout", cur.path, ids, origin=ctx.origin, request=excerpt
    )
    # the desk grace reads what the agent writes after the call; the summary is the call's own
    record.update(answer_offset=size, summary=ask.get("summary"), tool_digest=digest)
    if create_unless_known(state, record) is not None:
        return "known"
    state.log("info", "needs-you recorded", key=record["key"], provider="codex", signal="rollout", thread_id=thread_id)
    return "recorded"
