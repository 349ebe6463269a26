"""A PermissionRequest hook waits for the phone's Allow or Deny (``approvals_enabled``).

Only when approvals are on and the wake role is running and subscribed to the reply topic (its
health file is fresh and says ``subscription: subscribed``): a role that is down, still connecting,
refused (401/403) or without a server cannot receive a tap, so waiting would only hold the agent's
own dialog. The hook waits up to ``approval_wait_seconds`` after the request
(``approval_wait_interactive_seconds``, 10 s by default and at most 15, where the agent's own
dialog waits for the hook: the Codex TUI, which the agent says with ``dialog_waits``), reading ``wake/answers/<request key>.json`` (the
wake role writes it from a verified ticket; a local file, never the network), checking whether
the prompt was answered at the terminal (the agent went on: the same evidence as the needs-you
desk grace) and whether the wake role still runs and is subscribed, each time something it
watches changes (on Linux it sleeps meanwhile as a bare interpreter, ``approval_lean``; elsewhere
it polls). When it stops waiting without an answer it closes the
request by the same exclusive create, so a later tap is refused as ``already-answered``.

What it prints, docs/approvals.md: exactly ``hookEventName`` and ``decision.behavior`` (plus
``message`` for a deny), the one shape every measured Claude Code and Codex release obeys;
nothing on a timeout, an error or a closed request, so the agent's own dialog decides. Never an
allow by default, and never an answer of another call: the answer names the digest of the call
it answers (the tapped ticket's), and the hook prints it only when that is its own call's digest.
"""

from __future__ import annotations

import time

from donebell.shared import lean_json as json
from donebell.shared.statedir import DEAD, SUPPRESSED
from donebell.workers.kit.hook_context import HookContext

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

    from donebell.shared.statedir import StateDir

#: How often the answer file is looked for: the share of tap -> unblocked the hook adds.
POLL_SECONDS = 0.05
#: How often the terminal is checked for an answer given there.
DESK_EVERY_SECONDS = 0.5
DENY_MESSAGE = "Denied from the phone (donebell)."


def approval_wait(ctx: HookContext, *, dialog_waits: bool = False) -> float:
    """Seconds this PermissionRequest may wait for the phone (0: do not wait). ``dialog_waits``:
    the agent shows its own dialog only once the hook returns (the short, interactive wait)."""
    config = ctx.config
    if config["approvals_enabled"] is not True or config["wake_enabled"] is not True:
        return 0.0
    from donebell.shared import health  # psutil: only with approvals on

    wake = ctx.state.read_health("wake")
    # Aged by the file's mtime, not the role's own heartbeat_at: a service clock minutes behind
    # (or ahead) of this one must not make a running role look dead (or a dead one alive).
    written = ctx.state.health_written_at("wake")
    if wake is None or not health.alive(wake) or health.is_stale_written(wake, written, time.time()):
        ctx.log("warning", "approvals_enabled but the wake role is not running: not waiting for the phone")
        return 0.0
    subscription = wake.get("subscription")
    if subscription != "subscribed":  # shared/ntfy/subscribe.py's words: no tap can arrive now
        why = subscription if isinstance(subscription, str) else "unknown"
        ctx.log(
            "warning", f"approvals_enabled but the wake role is not subscribed ({why[:40]}): not waiting for the phone"
        )
        return 0.0
    wait = config["approval_wait_interactive_seconds" if dialog_waits else "approval_wait_seconds"]
    return float(wait) if isinstance(wait, (int, float)) and wait > 0 else 0.0


#: How many times the same call may be asked again with the agent's file unchanged (each ask is
#: a request of its own once the one before was answered).
AGAIN_LIMIT = 64


def unanswered_key(state: StateDir, key: str) -> str:
    """``key``, or, once that request was answered, the first of its repeats not answered yet."""
    box = state.answer_box()
    candidate = key
    for again in range(2, AGAIN_LIMIT + 2):
        if box.read(candidate) is None:
            return candidate
        from donebell.shared.keys import content_digest  # only for a call asked again

        candidate = content_digest(f"{key}|again|{again}")
    return candidate


def await_answer(ctx: HookContext, key: str, until: float, digest: str) -> str | None:
    """The agent's answer from the phone's decision for ``key`` on the call ``digest``, or None
    (print nothing).

    Between two rounds of checks the hook sleeps: on Linux as a bare interpreter woken by a change
    of what it watches (``approval_lean``; the process comes back here through the hook's entry
    point), elsewhere polling the answer every :data:`POLL_SECONDS` in-process.
    """
    from donebell.workers.kit import approval_lean

    box = ctx.state.answer_box()
    lean = approval_lean.LeanWait(ctx, key, until, digest) if approval_lean.available() else None
    reason, next_desk = "timeout", 0.0
    while True:
        if lean is not None:
            lean.look()
        found = box.read(key)
        if found is not None:
            return _output(ctx, key, found, digest)
        at = time.time()
        if at >= until:
            break
        if lean is not None or at >= next_desk:
            desk = answered_at_terminal(ctx, key)
            stopped = f"answered at the terminal: {desk}" if desk is not None else wake_gone(ctx)
            if stopped is not None:
                reason = stopped
                break
            next_desk = at + DESK_EVERY_SECONDS
        if lean is not None:
            lean.sleep()  # the process continues in the sleep: back here only if that failed
            lean = None
        time.sleep(min(POLL_SECONDS, until - at))
    found, ours = box.answer(key, "closed", reason=reason, digest=digest)
    if not ours:  # a tap landed in the same instant: it came first
        return _output(ctx, key, found, digest)
    ctx.log("info", "approval: stopped waiting; the agent's own dialog decides", key=key, reason=reason[:200])
    return None


def wake_gone(ctx: HookContext) -> str | None:
    """Why no tap can arrive any more (the wake role stopped, or says it is not subscribed), or None."""
    from donebell.shared import health

    wake = ctx.state.read_health("wake")
    written = ctx.state.health_written_at("wake")
    if wake is None or not health.alive(wake) or health.is_stale_written(wake, written, time.time()):
        return "the wake role stopped"
    subscription = wake.get("subscription")  # the same rule as before the wait (approval_wait)
    return None if subscription == "subscribed" else f"the wake role is not subscribed ({str(subscription)[:40]})"


def answered_at_terminal(ctx: HookContext, key: str) -> str | None:
    """Why the request is believed answered at the terminal, or None (the needs-you evidence)."""
    state = ctx.state
    folder = state.locate(key)
    if folder in (SUPPRESSED, DEAD):
        return f"its notification is in {folder}/"
    if folder is None:
        return None
    try:
        record = state.read(folder, key)
    except Exception:  # noqa: BLE001 - unreadable evidence is no answer
        return None
    from donebell.workers.kit.needs_answered import needs_answered

    return needs_answered(state, record, ctx.agent) if record is not None else None


def _output(ctx: HookContext, key: str, answer: dict[str, Any], digest: str) -> str | None:
    decision = answer.get("decision")
    if decision not in ("allow", "deny"):
        return None
    if answer.get("digest") != digest:  # an answer of another call (or one naming none) answers nothing here
        ctx.log("warning", "approval: the answer names another call; the agent's own dialog decides", key=key)
        return None
    ctx.log("info", f"approval: {decision} from the phone", key=key, message_id=answer.get("message_id"))
    behaviour: dict[str, Any] = {"behavior": decision}
    if decision == "deny":
        behaviour["message"] = DENY_MESSAGE
    out = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": behaviour}}
    return json.dumps(out, separators=(",", ":")) + "\n"
