"""A task blocks on the user: one "needs you" outbox record per blocking request.

Signals (docs/approvals.md): each agent's own (``workers/agents/claude/needs_you.py``: Claude
Code's ``PermissionRequest`` hook and its needs-type ``Notification``s; ``workers/agents/codex/
needs_you.py``: Codex's ``PermissionRequest`` hook, ``donebell hook codex-permission``) names the
request, and :func:`write_request` writes its record. No gate decides anything here: the agent
itself says it is waiting, so the record goes straight to ``outbox/`` (as ``donebell test`` does)
with ``notice: "needs-you"`` and the delivery role's policies decide when, or whether, it is pushed
(desk grace: the agent moving on is the answer at the terminal;
``workers/kit/needs_answered.py``).

**One per blocking request, one request per exact call.** The key is ``event_key(provider,
conversation, "needs-you|<turn>|<digest>|<marker>")``: the digest of the exact tool name and input
(:func:`tool_digest`; a signal that names no call, such as Claude's Notification, has none) and the
agent's marker of the request. Two calls of one turn never share a key, whatever the agent's file
shows; a repeated payload gives the same key, found anywhere in the pipeline: nothing new. Every
record of a call keeps its ``tool_digest``.

The hook prints nothing (no opinion: the agent's own dialog or policy decides) and never touches
the network: it writes one file and may start a delivery worker, like every other hook. With
``approvals_enabled`` a PermissionRequest's record also carries the digest of the exact call and
the end of the hook's wait (``approval_until``: the Allow / Deny tickets expire then), and the
hook then waits for the phone's answer (``approval_wait.py``).
"""

from __future__ import annotations

import os

from donebell.shared import lean_json as json
from donebell.shared.keys import content_digest, event_key, sequence_id
from donebell.shared.records import NEEDS_YOU, base
from donebell.shared.statedir import OUTBOX, now
from donebell.workers.kit.hook_context import HookContext, message_field, text_field

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

    from donebell.shared.statedir import StateDir

#: What each signal says the task waits for (the notification's first words).
WANTS = {
    "PermissionRequest": "permission",
    "permission_prompt": "permission",
    "elicitation_dialog": "question",
    "agent_needs_input": "input",
    "rollout": "permission",  # a Codex call the rollout shows waiting (workers/agents/codex/rollout_asks.py)
}
PATH_LIMIT = 4096
NAME_LIMIT = 80
SUMMARY_CHARS = 200


def request_key(provider: str, conversation: str, turn: str, marker: str, payload: dict[str, Any]) -> str:
    """The request's key: the exact call's digest (when the signal names a call) and the agent's marker."""
    call = f"{tool_digest(payload)}|" if "tool_name" in payload else ""
    return event_key(provider, conversation, f"{NEEDS_YOU}|{turn}|{call}{marker}")


def write_request(
    ctx: HookContext,
    payload: dict[str, Any],
    *,
    provider: str,
    conversation: str,
    turn: str,
    marker: str,
    signal: str,
    answer_path: str | None,
    key: str | None = None,
    adopt: bool = False,
    dialog_waits: bool = False,
    **ids: Any,
) -> str | None:
    """Create the outbox record unless its key exists anywhere; returns the key if it was created.
    ``key``: the agent already named the request; ``adopt``: it is one another signal of the same
    dialog opened (a Notification that names no call), whose record, while not yet sent, gets
    this signal's call (tool, summary, digest, the buttons' wait); ``dialog_waits``: the agent draws
    its own dialog only once this hook returns (the Codex TUI): the short, interactive wait."""
    state = ctx.state
    key = key or request_key(provider, conversation, turn, marker, payload)
    source = f"{provider}-{signal.lower()}"
    if "tool_name" in payload:
        ids["tool_digest"] = tool_digest(payload)
    if signal == "PermissionRequest":
        key = _wait_for_the_phone(ctx, payload, key, ids, dialog_waits)
    record = needs_record(
        payload,
        key,
        provider,
        source,
        signal,
        answer_path,
        ids,
        origin=ctx.origin,
        request=ctx.excerpt(request_text(payload)),
    )
    where = create_unless_known(state, record, enrich=adopt)
    if where == "enriched":
        ctx.log("info", "needs-you: the call named on the request another signal opened", key=key, signal=signal)
        return key
    if where is not None:
        ctx.log("info", "needs-you: the same request again, nothing new", key=key, where=where, signal=signal)
        return None
    ctx.log("info", "needs-you recorded", key=key, provider=provider, signal=signal, marker=marker[:120])
    ctx.request_delivery()
    return key


def _wait_for_the_phone(
    ctx: HookContext, payload: dict[str, Any], key: str, ids: dict[str, Any], dialog_waits: bool = False
) -> str:
    """With approvals on: the record names the call and the wait's end, and the hook will wait.
    Returns the request's key.

    A repeat of a request still waiting waits until that record's end (its buttons' expiry). A
    request that already has an answer is over (its dialog was answered): a new prompt with the
    same key (the same call asked again, the agent's file unchanged) is a new request, under a
    key of its own, never answered by the earlier tap.
    """
    from donebell.workers.kit import approval_wait  # only for a PermissionRequest

    wait = approval_wait.approval_wait(ctx, dialog_waits=dialog_waits)
    if wait <= 0:
        return key
    key = approval_wait.unanswered_key(ctx.state, key)
    until = now() + wait
    try:
        folder = ctx.state.locate(key)
        earlier = ctx.state.read(folder, key) if folder is not None else None
    except Exception:  # noqa: BLE001 - a damaged earlier record: this request's own wait
        earlier = None
    if earlier is not None and isinstance(earlier.get("approval_until"), (int, float)):
        until = float(earlier["approval_until"])
    digest = tool_digest(payload)
    ids.update(approval_until=until, tool_digest=digest)
    ctx.after = lambda: approval_wait.await_answer(ctx, key, until, digest)
    return key


#: What a signal that names the call adds to a request another signal opened without it.
CALL_FIELDS = ("tool", "summary", "request_text", "tool_digest", "tool_use_id", "approval_until", "agent_type")


def create_unless_known(state: StateDir, record: dict[str, Any], *, enrich: bool = False) -> str | None:
    """Create the record in ``outbox/`` unless its key exists anywhere: the folder it was found
    in. With ``enrich``, a record still in ``outbox/`` gets ``record``'s call (``"enriched"``)."""
    key = record["key"]
    with state.mutation_lock(key):
        where = state.locate(key)
        if where is None:
            state.create(OUTBOX, record)
        elif where == OUTBOX and enrich:
            found = state.read(OUTBOX, key)
            if found is not None:
                call = {name: record[name] for name in CALL_FIELDS if record.get(name) is not None}
                sources = [
                    *found.get("sources", []),
                    *(s for s in record["sources"] if s not in found.get("sources", [])),
                ]
                state.replace(OUTBOX, {**found, **call, "sources": sources, "revision": found.get("revision", 1) + 1})
                return "enriched"
    return where


def needs_record(
    payload: dict[str, Any],
    key: str,
    provider: str,
    source: str,
    signal: str,
    answer_path: str | None,
    ids: dict[str, Any],
    *,
    origin: str | None,
    request: str | None,
) -> dict[str, Any]:
    """The outbox record of one request. ``request`` is the request text as it may be stored
    (None unless ``include_message``, then redacted)."""
    at = now()
    record = base("outbox", key, provider)
    tool = text_field(payload, "tool_name", NAME_LIMIT)
    record.update(
        ids,
        notice=NEEDS_YOU,
        wants=WANTS.get(signal, WANTS.get(str(payload.get("notification_type")), "input")),
        source=source,
        sources=[source],
        weak_identity=False,
        outcome=None,
        tool=tool,
        summary=summary_of(payload),
        request_text=request,
        agent_id=text_field(payload, "agent_id"),
        agent_type=text_field(payload, "agent_type", NAME_LIMIT),
        cwd=text_field(payload, "cwd", PATH_LIMIT),
        transcript_path=text_field(payload, "transcript_path", PATH_LIMIT),
        answer_path=answer_path,
        answer_offset=file_size(answer_path),
        origin=origin,
        revision=1,
        updated_at=at,
        promoted_at=at,  # the desk grace counts from the moment the agent asked
        verdict=NEEDS_YOU,
        sequence_id=sequence_id(provider, key),
        attempts=0,
        next_attempt_at=None,
        last_error=None,
    )
    return record


def summary_of(payload: dict[str, Any]) -> str | None:
    """What the agent wants, in one redacted line, never the command itself: the call's own
    ``description`` (its justification), a file's name, or Claude's notification text."""
    raw = payload.get("tool_input")
    tool_input: dict[str, Any] = raw if isinstance(raw, dict) else {}
    text = tool_input.get("description")
    if not isinstance(text, str) or not text.strip():
        path = tool_input.get("file_path") or tool_input.get("notebook_path")
        text = f"file {os.path.basename(path)}" if isinstance(path, str) and path else None
    if text is None:
        text = message_field(payload, "message", 4 * SUMMARY_CHARS)
    if not isinstance(text, str) or not text.strip():
        return None
    from donebell.shared.text.redaction import redact  # only when there is text to keep

    return " ".join(redact(text).split())[:SUMMARY_CHARS] or None


def request_text(payload: dict[str, Any]) -> str | None:
    """The request itself (a shell command, a file path, a URL): stored only with ``include_message``."""
    raw = payload.get("tool_input")
    if not isinstance(raw, dict):
        return None
    for name in ("command", "file_path", "notebook_path", "url", "pattern"):
        value = raw.get(name)
        if isinstance(value, str) and value.strip():
            return value
    return None


def tool_digest(payload: dict[str, Any]) -> str:
    """SHA-256 (16 hex) of the exact tool name and input: two different calls never share a key."""
    material = json.dumps([payload.get("tool_name"), payload.get("tool_input")], sort_keys=True, default=str)
    return content_digest(material)[:16]


def file_size(path: str | None) -> int | None:
    if not path:
        return None
    try:
        return os.stat(path).st_size
    except OSError:
        return None
