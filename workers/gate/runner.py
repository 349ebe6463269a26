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
from typing import Any

from donebell.shared.ingest import finish_reopen
from donebell.shared.statedir import InvalidRecord, StateDir
from donebell.workers import pass_control
from donebell.workers.gate import GatePass
from donebell.workers.gate.commit import Promotions, apply
from donebell.workers.gate.context import GateContext
from donebell.workers.gate.decide import safe_evaluate
from donebell.workers.gate.remote import RootSpec, configured_roots, mark, offline_verdict, remote_root, settings_wire
from donebell.workers.gate.remote_pool import SYNC_WINDOW_SECONDS, Answer, RemotePool, Trouble, pool_for
from donebell.workers.gate.verdict import Verdict

TYPE_CHECKING = False
if TYPE_CHECKING:
    from donebell.shared.settings_view import SettingsLike

#: Folders that mean "this key already moved on": its pending copy is crash debris.
_LATER = ("outbox", "sent", "suppressed", "dead")
#: A remote second snapshot older than this when committed is taken again instead of promoted.
FRESH_SECONDS = 2.0
#: Coalescing groups (roots) one pass loads: a 10,000-candidate backlog is worked through in
#: passes of this many roots (every due candidate of a loaded root comes along), so a pass's
#: memory stays bounded; a pass yields after its budget anyway (``pass_control``). ``--once``
#: (no budget) still judges everything in one pass.
MAX_ROOTS_PER_PASS = 500

Judged = list[tuple[dict[str, Any], Verdict]]


def root_of(record: dict[str, Any]) -> str:
    """The coalescing group: the Codex root thread, or the Claude session."""
    if record.get("provider") == "claude":
        return f"claude:{record.get('session_id') or record['key']}"
    root = record.get("root_thread_id") or record.get("thread_id") or record["key"]
    return f"codex:{root}"


def shape_problem(record: dict[str, Any]) -> str | None:
    """Why a parsed pending record cannot be judged (a field of the wrong type), or None.

    Such a record is corrupt state: it goes to ``dead/`` like an unparsable one, instead of
    aborting the pass for every other candidate.
    """
    if not isinstance(record.get("probe"), (dict, type(None))):
        return "field 'probe' is not an object"
    for name in ("created_at", "updated_at", "completed_at"):
        value = record.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            return f"field '{name}' is not a number"
    if not isinstance(record.get("revision", 1), int):
        return "field 'revision' is not an integer"
    return None


def _load_due(
    state: StateDir,
    now: float,
    result: GatePass,
    in_flight: set[str],
    roots: list[RootSpec],
    horizon: float,
    known: dict[str, tuple[tuple[int, int, int], str]],
) -> list[dict[str, Any]]:
    """The candidates due for judgement; ``horizon`` is the longest legitimate wait ahead.

    ``known`` maps a pending key to the stamp of the file it was read from and its root, from
    earlier passes: once a pass has its roots, a record whose file is unchanged and whose root is
    not among them is left for a next pass without being read again (a backlog's later passes
    would otherwise re-read every record still waiting: quadratic in the backlog). It is
    replaced by what this pass saw.
    """
    due: list[dict[str, Any]] = []
    roots_taken: set[str] = set()
    seen: dict[str, tuple[tuple[int, int, int], str]] = {}
    for name in state.stray_files("pending"):
        if not name.endswith(".tmp"):
            state.dead_letter_invalid("pending", name, "not a <key>.json record file")
            result.invalid += 1
    capped = pass_control.budgeted()
    for key, stamp in state.stamped_keys("pending"):
        hint = known.get(key)
        if capped and len(roots_taken) >= MAX_ROOTS_PER_PASS and hint is not None and hint[0] == stamp:
            seen[key] = hint
            if hint[1] not in roots_taken:
                result.waiting += 1  # a backlog: judged by a next pass, not read again by this one
                result.next_due = now
                continue
        record = _due_record(state, key, now, result, in_flight, roots, horizon)
        if record is None:
            continue
        root = root_of(record)
        seen[key] = (stamp, root)
        if root not in roots_taken and len(roots_taken) >= MAX_ROOTS_PER_PASS and capped:
            result.waiting += 1  # a backlog: judged by a next pass, not held in memory by this one
            result.next_due = now
            continue
        roots_taken.add(root)
        due.append(record)
    known.clear()
    known.update(seen)
    return due


def _due_record(
    state: StateDir, key: str, now: float, result: GatePass, in_flight: set[str], roots: list[RootSpec], horizon: float
) -> dict[str, Any] | None:
    """``pending/<key>`` if it is due for judgement now; else None, with the reason accounted for."""
    try:
        record = state.read("pending", key)
    except InvalidRecord as exc:
        state.dead_letter_invalid("pending", f"{key}.json", str(exc))
        result.invalid += 1
        return None
    if record is None or key in in_flight:
        return None  # in flight: counted as waiting once the pass knows what is still out
    problem = shape_problem(record)
    if problem is not None:
        with state.mutation_lock(key):
            state.dead_letter_invalid("pending", f"{key}.json", problem)
        result.invalid += 1
        return None
    if any(state.exists(folder, key) for folder in _LATER) and not finish_reopen(state, record):
        # A crash between "create next state" and "remove pending": finish the removal.
        with state.mutation_lock(key):
            if any(state.exists(folder, key) for folder in _LATER):
                state.remove("pending", key)
                result.removed += 1
                state.log("info", "pending copy of a finished key removed", key=key)
        return None
    probe = record.get("probe") or {}
    next_at = probe.get("next_probe_at")
    fresh_evidence = probe.get("revision_seen") not in (None, record.get("revision"))
    # A wait further ahead than any interval the gate sets means the clock went back: probe now.
    jumped = isinstance(next_at, (int, float)) and next_at > now + horizon
    if isinstance(next_at, (int, float)) and next_at > now and not fresh_evidence and not jumped:
        result.waiting += 1
        result.next_due = next_at if result.next_due is None else min(result.next_due, next_at)
        if remote_root(record, roots) is None:  # a watch on a hung share would block delivery
            result.watch_paths.extend(_watch_of(record))
        return None
    return record


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


def _coalesce(judged: Judged, settings: SettingsLike) -> Judged:
    """Coalescing per root thread: only the newest candidate of a root may become a notification."""
    promotable = [(r, v) for r, v in judged if v.action == "promote"]
    if settings.idle_detection_mode == "off" or len(promotable) <= 1:
        return judged
    newest = max(promotable, key=lambda rv: _order(*rv))[0]
    superseded = Verdict.suppress("superseded", f"coalesced: newer candidate {newest['key'][:12]} of the same root")
    return [(r, v if v.action != "promote" or r is newest else superseded) for r, v in judged]


def run_pass(state: StateDir, settings: SettingsLike, now: float, persistent: dict[Any, Any]) -> GatePass:
    result = GatePass()
    ctx = GateContext(state, settings, now, {}, persistent)
    roots = configured_roots(settings)
    pool: RemotePool | None = persistent.get("remote_pool")
    if pool is not None:
        _commit_answers(ctx, pool.receive(0.0) + pool.expire(), result)
    cap = settings.unknown_retry_max_seconds  # every wait the gate schedules is capped by it
    horizon = 2 * max(cap, settings.idle_grace_seconds, 5.0) if cap > 0 else float("inf")
    in_flight = pool.in_flight() if pool is not None else set()
    due = _load_due(state, now, result, in_flight, roots, horizon, persistent.setdefault("pending_roots", {}))
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
            probe = (ctx.state.read("pending", record["key"]) or {}).get("probe") or {}
        except InvalidRecord:
            probe = {}
        next_at = probe.get("next_probe_at")
        if isinstance(next_at, (int, float)):
            result.next_due = next_at if result.next_due is None else min(result.next_due, next_at)
        if not remote:
            result.watch_paths.extend(final.watch)
            result.watch_paths.extend(_watch_of(record))
