"""One gate pass over ``pending/``: recovery, due check, per-root grouping, decision, commit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from donebell.shared.config import Settings
from donebell.shared.statedir import InvalidRecord, StateDir
from donebell.workers.gate import GatePass
from donebell.workers.gate.commit import apply
from donebell.workers.gate.context import GateContext
from donebell.workers.gate.decide import evaluate
from donebell.workers.gate.verdict import Verdict

#: Folders that mean "this key already moved on": its pending copy is crash debris.
_LATER = ("outbox", "sent", "suppressed", "dead")


def root_of(record: dict[str, Any]) -> str:
    """The coalescing group: the Codex root thread, or the Claude session."""
    if record.get("provider") == "claude":
        return f"claude:{record.get('session_id') or record['key']}"
    root = record.get("root_thread_id") or record.get("thread_id") or record["key"]
    return f"codex:{root}"


def _load_due(state: StateDir, now: float, result: GatePass) -> list[dict[str, Any]]:
    due: list[dict[str, Any]] = []
    for name in state.stray_files("pending"):
        if not name.endswith(".tmp"):
            state.dead_letter_invalid("pending", name, "not a <key>.json record file")
            result.invalid += 1
    for key in state.keys("pending"):
        try:
            record = state.read("pending", key)
        except InvalidRecord as exc:
            state.dead_letter_invalid("pending", f"{key}.json", str(exc))
            result.invalid += 1
            continue
        if record is None:
            continue
        if any(state.exists(folder, key) for folder in _LATER):
            # A crash between "create next state" and "remove pending": finish the removal.
            with state.mutation_lock(key):
                if any(state.exists(folder, key) for folder in _LATER):
                    state.remove("pending", key)
                    result.removed += 1
                    state.log("info", "pending copy of a finished key removed", key=key)
            continue
        probe = record.get("probe") or {}
        next_at = probe.get("next_probe_at")
        fresh_evidence = probe.get("revision_seen") not in (None, record.get("revision"))
        if isinstance(next_at, (int, float)) and next_at > now and not fresh_evidence:
            result.waiting += 1
            result.next_due = next_at if result.next_due is None else min(result.next_due, next_at)
            result.watch_paths.extend(_watch_of(record))
            continue
        due.append(record)
    return due


def _watch_of(record: dict[str, Any]) -> list[Path]:
    paths = [Path(p) for p in (record.get("probe") or {}).get("watch") or [] if isinstance(p, str)]
    transcript = record.get("transcript_path")
    if isinstance(transcript, str) and transcript:
        paths.append(Path(transcript))
    return paths


def _order(record: dict[str, Any], verdict: Verdict) -> tuple[float, float, str]:
    """Which of two promotable candidates of one root is newer (turn end, epoch, then capture)."""
    completed = verdict.fields.get("completed_at") or record.get("completed_at") or 0
    epoch = record.get("claude_epoch")
    turn_end = float(completed) if isinstance(completed, (int, float)) else 0.0
    return (
        turn_end or float(epoch if isinstance(epoch, int) else 0),
        float(record.get("created_at") or 0),
        record["key"],
    )


def _safe_evaluate(record: dict[str, Any], ctx: GateContext) -> Verdict:
    try:
        return evaluate(record, ctx)
    except Exception as exc:  # noqa: BLE001 - one odd candidate must not stop the pass
        ctx.state.log(
            "error", "gate evaluation failed", key=record.get("key"), error=f"{type(exc).__name__}: {exc}"[:300]
        )
        retry = min(30.0, ctx.settings.unknown_retry_max_seconds or 30.0)
        return Verdict.wait("gate-error", f"{type(exc).__name__}: {exc}"[:300], kind="unknown", retry_in=retry)


def run_pass(state: StateDir, settings: Settings, now: float, persistent: dict[Any, Any]) -> GatePass:
    result = GatePass()
    ctx = GateContext(state, settings, now, {}, persistent)
    due = _load_due(state, now, result)
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in due:
        groups.setdefault(root_of(record), []).append(record)
    for group in groups.values():
        group.sort(key=lambda r: (float(r.get("created_at") or 0), r["key"]))
        judged = [(record, _safe_evaluate(record, ctx)) for record in group]
        promotable = [(r, v) for r, v in judged if v.action == "promote"]
        if settings.idle_detection_mode != "off" and len(promotable) > 1:
            # Coalescing per root thread: only the newest candidate of a root may become a notification.
            newest = max(promotable, key=lambda rv: _order(*rv))[0]
            judged = [
                (
                    r,
                    v
                    if v.action != "promote" or r is newest
                    else Verdict.suppress(
                        "superseded", f"coalesced: newer candidate {newest['key'][:12]} of the same root"
                    ),
                )
                for r, v in judged
            ]
        for record, verdict in judged:
            _commit(ctx, record, verdict, result)
    result.watch_paths = sorted({Path(p) for p in result.watch_paths})
    return result


def _commit(ctx: GateContext, record: dict[str, Any], verdict: Verdict, result: GatePass) -> None:
    applied, final = apply(
        ctx.state,
        record,
        verdict,
        ctx.now,
        retry_max=ctx.settings.unknown_retry_max_seconds,
        recheck=lambda current: _safe_evaluate(current, ctx.fresh()),
    )
    if applied == "promoted":
        result.promoted += 1
    elif applied == "suppressed":
        result.suppressed += 1
    elif applied == "removed":
        result.removed += 1
    elif applied == "raced":
        result.next_due = ctx.now  # new evidence arrived mid-decision: look again right away
    elif applied == "waiting":
        result.waiting += 1
        try:
            probe = (ctx.state.read("pending", record["key"]) or {}).get("probe") or {}
        except InvalidRecord:
            probe = {}
        next_at = probe.get("next_probe_at")
        if isinstance(next_at, (int, float)):
            result.next_due = next_at if result.next_due is None else min(result.next_due, next_at)
        result.watch_paths.extend(final.watch)
        result.watch_paths.extend(_watch_of(record))
