"""``donebell explain <id> [--json]``: why did (or didn't) it notify?

Finds every record of the id in the state directory (pending, outbox, sent, suppressed, dead; an
event key directly, any other id a user can see by scanning the records: a Codex thread, a Claude
session, the ``#…`` short id of a notification, its ntfy sequence id or message id, see
:mod:`.explain_ids`), and prints where each
candidate is, every probe decision the gate stored with its evidence and time, and what a waiting
candidate is waiting for. Read-only: it never creates, moves or locks anything.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from donebell.shared.config import secret_text
from donebell.shared.keys import claude_session_key, is_event_key
from donebell.shared.paths import state_dir_path
from donebell.shared.statedir import CLAUDE, DEAD, OUTBOX, PENDING, PIPELINE, SENT, SUPPRESSED, InvalidRecord, StateDir
from donebell.supervisor.commands.explain_ids import matches, normalize
from donebell.supervisor.commands.explain_story import ago, clock, render, short
from donebell.supervisor.commands.holds import outbox_holds
from donebell.workers.wake.history import render_wakes, wake_history


def find(state: StateDir, ident: str) -> list[tuple[str, dict[str, Any]]]:
    """``(folder, record)`` of every record ``ident`` names (any id of ``explain_ids``)."""
    found: list[tuple[str, dict[str, Any]]] = []
    ident = normalize(ident)
    if is_event_key(ident):
        folder = state.locate(ident)
        if folder is not None:
            record = _read(state, folder, ident)
            if record is not None:
                found.append((folder, record))
        return found
    for folder in PIPELINE:
        for key in state.keys(folder):
            record = _read(state, folder, key)
            if record is not None and matches(record, ident):
                found.append((folder, record))
    found.sort(key=lambda fr: (_born(fr[1]), str(fr[1].get("key"))))
    return found


def _born(record: dict[str, Any]) -> float:
    """When the candidate was first captured (a receipt's own created_at is its finishing time)."""
    value = record.get("candidate_created_at") or record.get("created_at") or 0
    return float(value) if isinstance(value, (int, float)) else 0.0


def _read(state: StateDir, folder: str, key: str) -> dict[str, Any] | None:
    try:
        return state.read(folder, key)
    except (InvalidRecord, OSError):
        return None


def waiting_text(record: dict[str, Any], now: float) -> str | None:
    """One line saying what a pending candidate waits for (None when it is not pending)."""
    probe = record.get("probe") or {}
    detail = probe.get("waiting_for") or {}
    history = probe.get("history") or []
    if not history:
        return "waiting: not evaluated yet (the delivery worker has not run since it arrived)"
    last = history[-1]
    reason = detail.get("reason") or last.get("reason")
    if reason in ("child-running", "child-partial", "child-invalid"):
        state = {
            "child-running": "still running",
            "child-partial": "writing a record",
            "child-invalid": "has invalid evidence",
        }
        since, orphan = detail.get("since"), detail.get("orphan_at")
        text = f"waiting: child {short(detail.get('child'))} {state[reason]}"
        if isinstance(since, (int, float)):
            text += f" (since {ago(now - since)} ago)"
        if isinstance(orphan, (int, float)):
            text += f"; orphan timeout in {ago(orphan - now)}" if orphan > now else "; orphan timeout reached"
        return text
    if reason == "goal-active":
        text = "waiting: the goal is still active (a continuation turn will follow, or the goal must end)"
        orphan = detail.get("orphan_at")
        if isinstance(orphan, (int, float)):
            text += f"; released if the thread stays silent, in {ago(orphan - now)}"
        return text
    if reason == "awaiting-completion":
        return "waiting: the turn's task_complete is not in the rollout yet"
    if reason == "quiet-window":
        return f"waiting: quiet window ({last.get('evidence')})"
    deadline = detail.get("grace_deadline")
    if probe.get("wait_kind") in ("unknown", "invalid") and isinstance(deadline, (int, float)):
        left = f"in {ago(deadline - now)}" if deadline > now else "now"
        return f"waiting: {reason}: {last.get('evidence')}; probe grace ends {left} (strict then suppresses as unverifiable)"
    return f"waiting: {reason}: {last.get('evidence')}"


#: What the notification policies wrote into a record or its receipt (docs/delivery.md).
POLICY_FIELDS = ("policy", "policy_evidence", "task_seconds", "digest", "digest_of", "members")


def policy_text(item: dict[str, Any]) -> str | None:
    """One line on what a notification policy did with this record, or None."""
    parts = []
    if item.get("policy_evidence"):
        parts.append(f"{item.get('reason')}: {item['policy_evidence']}")
    if item.get("digest"):
        parts.append(f"sent in {item.get('digest_of') or ''} digest {str(item['digest'])[:12]}")
    if item.get("members"):
        parts.append(f"digest of {len(item['members'])} task(s) ({item.get('digest_of')})")
    policy = item.get("policy") or {}
    if isinstance(policy, dict) and isinstance(policy.get("quiet_until"), (int, float)):
        parts.append(f"held by quiet hours until {clock(policy['quiet_until'])}")
    if isinstance(policy, dict) and policy.get("silent"):
        parts.append("sent silently (quiet hours, priority 1)")
    return "; ".join(parts) or None


def summarize(folder: str, record: dict[str, Any], now: float) -> dict[str, Any]:
    """The JSON form of one candidate's story."""
    probe = record.get("probe") or {}
    history = probe.get("history") or record.get("probe_history") or []
    out: dict[str, Any] = {
        "key": record.get("key"),
        "folder": folder,
        "provider": record.get("provider"),
        **{name: record.get(name) for name in ("thread_id", "turn_id", "session_id", "prompt_id") if record.get(name)},
        "sources": record.get("sources") or ([record["source"]] if record.get("source") else []),
        "outcome": record.get("outcome"),
        "created_at": _born(record),
        "history": history,
        "ladder": current_ladder(probe.get("ladder") or record.get("probe_ladder"), history),
    }
    if folder in (SENT, SUPPRESSED, DEAD):
        out["reason"] = record.get("reason")
    if folder in (OUTBOX, SENT):
        out["verdict"] = record.get("verdict")
        out["promoted_at"] = record.get("promoted_at")
    out.update({k: record[k] for k in POLICY_FIELDS if record.get(k) is not None})
    if folder == OUTBOX:
        out.update({k: record.get(k) for k in ("attempts", "next_attempt_at", "last_error")})
    if record.get("test") is True or (folder == SENT and record.get("reason") == "test"):
        out["test"] = True
    if folder in (SENT, SUPPRESSED, DEAD):
        out["finished_at"] = record.get("created_at")  # a receipt's own created_at: when it finished
        out["captured_known"] = bool(record.get("candidate_created_at"))  # older receipts lack it
        out.update({k: record[k] for k in ("sent_at", "failed_at", "http_status", "message_id") if record.get(k)})
    if folder == PENDING:
        out["next_probe_at"] = probe.get("next_probe_at")
        out["waiting_for"] = probe.get("waiting_for")
        out["waiting"] = waiting_text(record, now)
    return out


def current_ladder(ladder: object, history: list[dict[str, Any]]) -> list[list[str]]:
    """The stored gate steps, if they led to the last decision in the history (else ``[]``).

    A decision the commit made itself (``changed``: the two snapshots disagreed) runs no ladder,
    so the stored steps then belong to an earlier evaluation and would explain the wrong thing.
    """
    if not isinstance(ladder, list) or not ladder or not history:
        return []
    steps = [[str(s[0]), str(s[1])] for s in ladder if isinstance(s, list) and len(s) == 2]
    last = history[-1]
    decided = f"{last.get('decision')} {last.get('reason')}"
    final = steps[-1][1] if steps else ""
    ran_through = final in ("passed", "assumed") and last.get("decision") == "promote"
    return steps if final == decided or ran_through else []


def ladder_lines(ladder: list[list[str]]) -> list[str]:
    """The provider gate's checks in its last evaluation, each with its outcome, up to the one that decided."""
    if not ladder:
        return []
    width = max(len(name) for name, _ in ladder)
    return ["    gate checks, last evaluation:"] + [f"      {name:<{width}}  {outcome}" for name, outcome in ladder]


def conversation_ids(ident: str, items: list[dict[str, Any]]) -> list[str]:
    """The thread or session ids ``ident`` stands for: itself, or, for a ``#…`` short id (what the
    phone shows), a sequence id or a message id, the full ids of the records it names. The wake
    history and a Claude session are kept under the full id only."""
    ident = normalize(ident)
    found = [] if is_event_key(ident) else [ident]
    for item in items:
        for name in ("thread_id", "session_id"):
            value = item.get(name)
            if isinstance(value, str) and value and value not in found:
                found.append(value)
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="donebell explain", description="Why did (or didn't) a task notify?")
    parser.add_argument(
        "id",
        help="any id you can see: the #short id of a notification, a Codex thread id, a Claude session id, "
        "an ntfy sequence id or message id, or an event key (64 hex)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    root = state_dir_path()
    now = time.time()
    if not root.is_dir():
        sys.stderr.write(f"donebell explain: no state directory at {root}\n")
        return 1
    state = StateDir(root)
    items = [summarize(folder, record, now) for folder, record in find(state, args.id)]
    holds = outbox_holds(state, now)
    for item in items:
        if item["folder"] == OUTBOX and str(item["key"]) in holds:
            item["hold"] = holds[str(item["key"])].as_json()
    conversations = conversation_ids(args.id, items)
    session = next((s for s in (_read(state, CLAUDE, claude_session_key(c)) for c in conversations) if s), None)
    wakes = wake_history(state, args.id) or [w for c in conversations for w in wake_history(state, c)]
    if args.json:
        text = (
            json.dumps(
                {"id": args.id, "state_dir": str(root), "records": items, "claude_session": session, "wakes": wakes},
                indent=2,
                default=str,
            )
            + "\n"
        )
    elif items or session or wakes:
        story = render(args.id, items, session, now, policy_text, ladder_lines)
        text = story + "".join(f"{line}\n" for line in render_wakes(wakes))
    else:
        text = f"{args.id}: no record in {root}\n  (never reported, a different state directory, or receipts expired by retention)\n"
    # A last_error written by an older version may quote a secret: never print it.
    sys.stdout.write(secret_text.scrub(text, *secret_text.configured_secrets()))
    return 0 if items or session or wakes else 1
