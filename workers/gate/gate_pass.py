"""One gate pass over ``pending/``: recovery, due check, per-root grouping, decision, commit.

Candidates of a remote watch root are never read here (``remote.py``): their groups go to the
root's probe worker (``remote_pool.py``) and their verdicts are committed when the answer is in,
in this pass (healthy shares answer within the sync window) or a later one. Local groups are
evaluated meanwhile, so a hung share delays no local candidate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from donebell.shared.statedir import PENDING, InvalidRecord, StateDir
from donebell.workers import pass_control
from donebell.workers.gate import GatePass
from donebell.workers.gate.commit import Promotions, apply
from donebell.workers.gate.decide import safe_evaluate
from donebell.workers.gate.due import load_due, root_of, watch_of
from donebell.workers.gate.remote import RootSpec, configured_roots, mark, offline_verdict, remote_root, settings_wire
from donebell.workers.gate.remote_pool import SYNC_WINDOW_SECONDS, Answer, RemotePool, Trouble, pool_for
from donebell.workers.kit.gate_context import GateContext
from donebell.workers.kit.probe_schedule import clock_jump_horizon
from donebell.workers.kit.verdict import Verdict

if TYPE_CHECKING:
    from donebell.shared.config.view import SettingsLike


#: A remote second snapshot older than this when committed is taken again instead of promoted.
FRESH_SECONDS = 2.0

Judged = list[tuple[dict[str, Any], Verdict]]


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


def _coalesce(judged: Judged, settings: SettingsLike) -> Judged:
    """Coalescing per root thread: only the newest candidate of a root may become a notification."""
    promotable = [(r, v) for r, v in judged if v.action == "promote"]
    if settings.idle_detection_mode == "off" or len(promotable) <= 1:
        return judged
    newest = max(promotable, key=lambda rv: _order(*rv))[0]
    superseded = Verdict.suppress("superseded", f"coalesced: newer candidate {newest['key'][:12]} of the same root")
    return [(r, v if v.action != "promote" or r is newest else superseded) for r, v in judged]


def run_pass(state: StateDir, settings: SettingsLike, now: float, persistent: dict[Any, Any]) -> GatePass:
    ctx = GateContext(state, settings, now, {}, persistent)
    try:
        return _run(ctx)
    finally:
        ctx.close()  # no file of Codex's stays open between passes


def _run(ctx: GateContext) -> GatePass:
    state, settings, now, persistent = ctx.state, ctx.settings, ctx.now, ctx.persistent
    result = GatePass()
    roots = configured_roots(settings)
    pool: RemotePool | None = persistent.get("remote_pool")
    if pool is not None:
        _commit_answers(ctx, pool.receive(0.0) + pool.expire(), result)
    horizon = clock_jump_horizon(settings.unknown_retry_max_seconds, settings.idle_grace_seconds)
    in_flight = pool.in_flight() if pool is not None else set()
    due = load_due(state, now, result, in_flight, roots, horizon, persistent.setdefault("pending_roots", {}))
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in due:
        groups.setdefault(root_of(record), []).append(record)
    remote: dict[str, list[list[dict[str, Any]]]] = {}
    local: list[tuple[list[dict[str, Any]], str | None]] = []
    for group in groups.values():
        group.sort(key=lambda r: (float(r.get("created_at") or 0), r["key"]))
        where = _remote_of(group, roots)
        if where is not None and settings.idle_detection_mode != "off":  # off reads no evidence
            remote.setdefault(where, []).append(group)
        else:
            local.append((group, where))
    sent_at = _dispatch(ctx, pool_for(persistent, str(state.root)), remote, result) if remote else None
    _judge_local(ctx, local, result)
    pool = persistent.get("remote_pool")
    if pool is not None:
        until = sent_at + SYNC_WINDOW_SECONDS if sent_at is not None else 0.0
        _commit_answers(ctx, pool.receive(until) + pool.expire(), result)
        pool.retire_idle()
        result.waiting += len(pool.in_flight())
        poll = pool.next_poll()
        if poll is not None:
            due_at = time.time() + poll
            result.next_due = due_at if result.next_due is None else min(result.next_due, due_at)
        result.remote = pool.health()
    result.watch_paths = sorted({Path(p) for p in result.watch_paths})
    return result


def _judge_local(ctx: GateContext, local: list[tuple[list[dict[str, Any]], str | None]], result: GatePass) -> None:
    """Evaluate and commit the local groups; their promotions are made durable in batches."""
    promotions = Promotions(ctx.state)
    try:
        for index, (group, where) in enumerate(local):
            if pass_control.should_stop():  # budget spent or SIGTERM: the rest is due next pass
                result.waiting += sum(len(g) for g, _ in local[index:])
                result.next_due = ctx.now
                break
            judged = _coalesce([(record, safe_evaluate(record, ctx)) for record in group], ctx.settings)
            for record, verdict in judged:
                if where is None:
                    _commit(ctx, record, verdict, result, promotions=promotions)
                else:  # idle_detection_mode off: decided without evidence, so without the root
                    recheck = _offline_recheck(ctx, where)
                    _commit(ctx, record, mark(verdict, where), result, recheck=recheck, remote=True)
            if promotions.full():
                _promote_staged(ctx, promotions, result)
    finally:
        _promote_staged(ctx, promotions, result)


def _promote_staged(ctx: GateContext, promotions: Promotions, result: GatePass) -> None:
    promoted, raced = promotions.commit()
    result.promoted += promoted
    if raced:
        result.next_due = ctx.now  # new evidence arrived mid-decision: look again right away


def _remote_of(group: list[dict[str, Any]], roots: list[RootSpec]) -> str | None:
    """The watch root of a coalescing group (any remote member makes the whole group remote)."""
    return next((root for root in (remote_root(r, roots) for r in group) if root is not None), None)


def _dispatch(
    ctx: GateContext, pool: RemotePool, remote: dict[str, list[list[dict[str, Any]]]], result: GatePass
) -> float | None:
    """Send each ready root its due groups; a root in trouble gets the offline verdicts at once."""
    sent_at = None
    settings = settings_wire(ctx.settings)
    for root, root_groups in remote.items():
        trouble = pool.trouble(root)
        if trouble is False:
            pool.send(root, root_groups, settings, ctx.now, ctx.settings.watch_remote_timeout_seconds)
            sent_at = time.monotonic()
        elif isinstance(trouble, Trouble):
            for group in root_groups:
                for record in group:
                    _commit_offline(ctx, record, root, trouble.reason, trouble.evidence, trouble.since, result)
        else:  # a probe of this root is still out: these wait for the next one (counted, not lost)
            result.waiting += sum(len(group) for group in root_groups)
    return sent_at


def _commit_offline(
    ctx: GateContext, record: dict[str, Any], root: str, reason: str, evidence: str, since: float, result: GatePass
) -> None:
    def decide(current: dict[str, Any]) -> Verdict:
        return mark(offline_verdict(current, ctx.settings, ctx.now, reason, evidence, root=root, since=since), root)

    _commit(ctx, record, decide(record), result, recheck=decide, remote=True)


def _commit_answers(ctx: GateContext, answers: list[Answer], result: GatePass) -> None:
    for answer in answers:
        for group in answer.probe.groups:
            if answer.failure is not None:
                for record in group:
                    _commit_offline(ctx, record, answer.root, answer.failure, answer.evidence, answer.since, result)
                continue
            stale = answer.done_mono is None or time.monotonic() - answer.done_mono > FRESH_SECONDS
            judged: Judged = []
            for record in group:
                first, second = answer.results.get(record["key"], (None, None))
                if first is None:
                    continue  # not answered for: due again next pass
                if first.action == "promote" and (stale or second is None):
                    first = Verdict.wait("changed", "remote evidence too old to promote on: probe again", retry_in=0.0)
                judged.append((record, mark(first, answer.root)))
                if second is not None:
                    mark(second, answer.root)
            for record, verdict in _coalesce(judged, ctx.settings):
                fresh = answer.results[record["key"]][1]
                _commit(ctx, record, verdict, result, recheck=_precomputed(fresh, verdict), remote=True)


def _offline_recheck(ctx: GateContext, root: str) -> Callable[[dict[str, Any]], Verdict]:
    """The recheck of a remote candidate decided without evidence (mode off): still marked remote."""
    return lambda current: mark(safe_evaluate(current, ctx.fresh()), root)


def _precomputed(second: Verdict | None, first: Verdict) -> Callable[[dict[str, Any]], Verdict]:
    """The second fresh snapshot the probe worker took right after the first (no file access here)."""
    return lambda _current: second if second is not None else first


def _commit(
    ctx: GateContext,
    record: dict[str, Any],
    verdict: Verdict,
    result: GatePass,
    *,
    recheck: Callable[[dict[str, Any]], Verdict] | None = None,
    remote: bool = False,
    promotions: Promotions | None = None,
) -> None:
    applied, final = apply(
        ctx.state,
        record,
        verdict,
        ctx.now,
        retry_max=ctx.settings.unknown_retry_max_seconds,
        recheck=recheck or (lambda current: safe_evaluate(current, ctx.fresh())),
        promotions=promotions,
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
            probe = (ctx.state.read(PENDING, record["key"]) or {}).get("probe") or {}
        except InvalidRecord:
            probe = {}
        next_at = probe.get("next_probe_at")
        if isinstance(next_at, (int, float)):
            result.next_due = next_at if result.next_due is None else min(result.next_due, next_at)
        if not remote:
            result.watch_paths.extend(final.watch)
            result.watch_paths.extend(watch_of(record))
