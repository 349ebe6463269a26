"""Which pending candidates a gate pass judges: reading ``pending/``, recovery, the due check.

A record is dead-lettered when it cannot be judged, removed when its key already moved on (crash
debris), left waiting until its ``next_probe_at``, or loaded with its coalescing group (root), at
most :data:`MAX_ROOTS_PER_PASS` roots per budgeted pass.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from donebell.shared.ingest import finish_reopen
from donebell.shared.statedir import DEAD, OUTBOX, PENDING, SENT, SUPPRESSED, InvalidRecord, StateDir
from donebell.workers import pass_control
from donebell.workers.agents.registry import agent
from donebell.workers.gate import GatePass
from donebell.workers.gate.remote import RootSpec, remote_root

#: Folders that mean "this key already moved on": its pending copy is crash debris.
_LATER = (OUTBOX, SENT, SUPPRESSED, DEAD)
#: Coalescing groups (roots) one pass loads: a 10,000-candidate backlog is worked through in
#: passes of this many roots (every due candidate of a loaded root comes along), so a pass's
#: memory stays bounded; a pass yields after its budget anyway (``pass_control``). ``--once``
#: (no budget) still judges everything in one pass.
MAX_ROOTS_PER_PASS = 500


def root_of(record: dict[str, Any]) -> str:
    """The coalescing group, as the record's agent names it (a Codex root thread, a Claude
    session); a record of an unregistered agent is a group of its own."""
    found = agent(record.get("provider"))
    return found.coalescing_root(record) if found is not None else f"{record.get('provider')}:{record['key']}"


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


def load_due(
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
    stamped, strays = state.listing(PENDING)  # one listing of pending/ per pass
    for name in strays:
        if not name.endswith(".tmp"):
            state.dead_letter_invalid(PENDING, name, "not a <key>.json record file")
            result.invalid += 1
    capped = pass_control.budgeted()
    for key, stamp in stamped:
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
        record = state.read(PENDING, key)
    except InvalidRecord as exc:
        state.dead_letter_invalid(PENDING, f"{key}.json", str(exc))
        result.invalid += 1
        return None
    if record is None or key in in_flight:
        return None  # in flight: counted as waiting once the pass knows what is still out
    problem = shape_problem(record)
    if problem is not None:
        with state.mutation_lock(key):
            state.dead_letter_invalid(PENDING, f"{key}.json", problem)
        result.invalid += 1
        return None
    if any(state.exists(folder, key) for folder in _LATER) and not finish_reopen(state, record):
        # A crash between "create next state" and "remove pending": finish the removal.
        with state.mutation_lock(key):
            if any(state.exists(folder, key) for folder in _LATER):
                state.remove(PENDING, key)
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
            result.watch_paths.extend(watch_of(record))
        return None
    return record


def watch_of(record: dict[str, Any]) -> list[Path]:
    paths = [Path(p) for p in (record.get("probe") or {}).get("watch") or [] if isinstance(p, str)]
    transcript = record.get("transcript_path")
    if isinstance(transcript, str) and transcript:
        paths.append(Path(transcript))
    return paths
