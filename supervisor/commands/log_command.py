"""``donebell log [--last N] [--follow] [--json]``: the recent decisions, one readable line each.

Built from the state directory, read-only: every record's current place is one event
(``notified`` from ``sent/``, ``suppressed`` with its reason, ``waiting`` with what the gate waits
for, ``held`` while a notification policy holds it (quiet hours, desk grace, a digest:
:mod:`.holds`), ``sending`` while an attempt failed and will be retried, ``dead`` with the error), plus the
warnings and errors of ``notify.log``. Newest last; ``--follow`` keeps printing new events (and a
waiting record whose reason changed) until interrupted; ``--json`` prints one JSON object a line.
Receipts hold ids and outcomes only, never message text, so nothing printed here is private.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import Any

from donebell.shared.paths import state_dir_path
from donebell.shared.records import NEEDS_YOU
from donebell.shared.statedir import (
    DEAD,
    LOG_NAME,
    OUTBOX,
    PENDING,
    RECEIPT_FOLDERS,
    SENT,
    SUPPRESSED,
    InvalidRecord,
    StateDir,
)
from donebell.shared.text.short_id import short_id
from donebell.supervisor.commands.explain import waiting_text
from donebell.supervisor.commands.holds import Hold, outbox_holds

FOLLOW_POLL_SECONDS = 1.0
#: Records the service writes (the hooks write ``pending/``): their times are on the service's clock.
SERVICE_FOLDERS = frozenset({SENT, SUPPRESSED, DEAD, OUTBOX})
#: Clock differences below this are write latency, not skew.
SKEW_NOISE_SECONDS = 2.0
LOG_TAIL_BYTES = 256 << 10
_KINDS = {SENT: "notified", SUPPRESSED: "suppressed", DEAD: "dead", PENDING: "waiting", OUTBOX: "sending"}
#: What a receipt reason means, for the one-line form (docs/design.md, "Receipt reasons").
_MEANING = {
    "subagent": "a subagent's turn: its root task notifies, once",
    "superseded": "a newer turn of the same task replaced it",
    "technical-turn": "a turn with nothing to report",
    "unverifiable": "could not prove the task was finished (strict mode)",
    "claude-session-unverifiable": "could not prove the Claude session was finished (strict mode)",
    "duplicate": "already notified",
    "disabled": "notifications for this agent are switched off",
    "invalid-record": "the record was unreadable",
    "permanent-http-error": "the server refused it",
    "max-attempts": "gave up after max_attempts",
    "test-replaced": "a newer `donebell test` replaced this queued test; not sent",
    "test-expired": "this test was not sent before it expired; not sent",
}


@dataclass(frozen=True)
class Event:
    at: float
    kind: str  # notified | suppressed | waiting | held | sending | dead | tapped | warning | error
    detail: str
    provider: str | None = None
    id: str | None = None  # the `#…` short id a notification shows
    project: str | None = None
    key: str | None = None

    def line(self) -> str:
        clock = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.at))
        who = " ".join(p for p in (self.provider, f"#{self.id}" if self.id else None, self.project) if p)
        return f"{clock}  {self.kind:<10} {who + '  ' if who else ''}{self.detail}"


def _number(value: object, default: float = 0.0) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _record_event(folder: str, record: dict[str, Any], at_now: float, holds: dict[str, Hold] | None = None) -> Event:
    ident = record.get("thread_id") or record.get("session_id")
    kind = None
    cwd = record.get("cwd")
    reason = str(record.get("reason") or "")
    attempts = int(_number(record.get("attempts")))
    if folder == SENT:
        at = _number(record.get("sent_at"), _number(record.get("created_at")))
        detail = "test notification" if reason == "test" else f"sent: {pushed_as(record)}"
        detail += f" (after {attempts} attempts)" if attempts > 1 else ""
    elif folder == SUPPRESSED:
        at = _number(record.get("created_at"))
        detail = f"{reason}: {_MEANING[reason]}" if reason in _MEANING else reason or "suppressed"
    elif folder == DEAD:
        at = _number(record.get("failed_at"), _number(record.get("created_at")))
        detail = reason + (f": {record['last_error']}" if record.get("last_error") else "")
    elif folder == OUTBOX:
        at = _number(record.get("promoted_at"), _number(record.get("created_at")))
        detail = "queued for delivery"
        hold = (holds or {}).get(str(record.get("key")))
        if hold is not None:
            kind, detail = "held", hold.text()
        elif attempts:
            detail = f"attempt {attempts} failed ({record.get('last_error') or 'error'}); will retry"
    else:
        history = (record.get("probe") or {}).get("history") or []
        at = _number(history[-1].get("at") if history else None, _number(record.get("created_at")))
        detail = (waiting_text(record, at_now) or "waiting").removeprefix("waiting: ")
    return Event(
        at=at,
        kind=kind or _KINDS[folder],
        detail=detail[:300],
        provider=str(record.get("provider")) if record.get("provider") else None,
        id=short_id(ident) if isinstance(ident, str) and ident else None,
        project=os.path.basename(cwd.rstrip("/\\")) or None if isinstance(cwd, str) else None,
        key=str(record.get("key")) if record.get("key") else None,
    )


def pushed_as(record: dict[str, Any]) -> str:
    """What the phone was told: the task needs you, or it ended (done, failed, stopped), or a digest."""
    if record.get("notice") == NEEDS_YOU:
        return "needs you (a permission prompt or a question)"
    if record.get("members"):
        return f"a digest of {len(record['members'])} task(s)"
    return str(record.get("outcome") or "done")


def _newest_keys(state: StateDir, folder: str, limit: int | None) -> list[str]:
    """The keys of ``folder``, newest file last; only the newest ``limit`` when given."""
    stamped = []
    for key in state.keys(folder):
        try:
            stamped.append((state.record_path(folder, key).stat().st_mtime, key))
        except OSError:
            continue
    stamped.sort()
    return [key for _, key in (stamped[-limit:] if limit is not None else stamped)]


def record_events(
    state: StateDir, limit: int | None, at_now: float, done: set[tuple[str, str]] | None = None, skew: float = 0.0
) -> list[Event]:
    """One event per record; receipts named in ``done`` (final, already shown) are not read again.
    The times the service wrote are moved by its clock's ``skew`` onto this machine's clock."""
    holds = outbox_holds(state, at_now)
    events = []
    for folder in _KINDS:
        for key in _newest_keys(state, folder, limit):
            if done is not None and folder in RECEIPT_FOLDERS:
                if (folder, key) in done:
                    continue
                done.add((folder, key))
            try:
                record = state.read(folder, key)
            except (InvalidRecord, OSError):
                continue
            if record is not None:
                event = _record_event(folder, record, at_now, holds)
                events.append(replace(event, at=event.at - skew) if folder in SERVICE_FOLDERS else event)
    return events


def tap_events(state: StateDir, limit: int | None, skew: float = 0.0) -> list[Event]:
    """One ``tapped`` event per reply from the phone (Continue, Allow, Deny): what became of it.
    The wake role writes its records with the service's clock: moved by its ``skew``."""
    from donebell.supervisor.commands.log_taps import taps

    return [Event(**{**fields, "at": fields["at"] - skew}) for fields in taps(state, limit)]


def log_events(state: StateDir, skew: float = 0.0) -> list[Event]:
    """Warnings and errors from the tail of ``notify.log`` (a role's lines moved by the service's ``skew``)."""
    try:
        data = state.read_bytes(state.root / LOG_NAME, limit=16 << 20) or b""
    except (InvalidRecord, OSError):
        return []
    events = []
    for raw in data[-LOG_TAIL_BYTES:].splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(line, dict) or line.get("level") not in ("warning", "error"):
            continue
        extra = "; ".join(
            f"{k}={v}" for k, v in line.items() if k not in ("ts", "pid", "level", "msg", "key") and v is not None
        )
        key = line.get("key")
        events.append(
            Event(
                at=_number(line.get("ts")) - (skew if line.get("role") else 0.0),
                kind=str(line["level"]),
                detail=(str(line.get("msg")) + (f" ({extra})" if extra else ""))[:300],
                key=str(key) if key else None,
            )
        )
    return events


def service_clock_skew(state: StateDir) -> float:
    """How far the service's clock is ahead of this machine's (negative: behind), measured on one of
    its files: the supervisor's own ``heartbeat_at`` against the file system's stamp of that write.
    The hooks write with this machine's clock and the service with its own; without this, a service
    clock minutes off would list its events before (or after) the hook's that caused them."""
    beat = (state.read_health("supervisor") or {}).get("heartbeat_at")
    written = state.health_written_at("supervisor")
    if not isinstance(beat, (int, float)) or written is None or abs(beat - written) < SKEW_NOISE_SECONDS:
        return 0.0
    return float(beat) - written


def collect(state: StateDir, last: int | None, done: set[tuple[str, str]] | None = None) -> list[Event]:
    """The newest ``last`` events (all with None), oldest first."""
    skew = service_clock_skew(state)
    events = record_events(state, last, time.time(), done, skew) + tap_events(state, last, skew)
    events += log_events(state, skew)
    events.sort(key=lambda e: (e.at, e.kind, e.key or ""))
    return events[-last:] if last is not None else events


def _emit(events: Iterable[Event], as_json: bool) -> None:
    for event in events:
        sys.stdout.write((json.dumps(asdict(event), ensure_ascii=False) if as_json else event.line()) + "\n")
    sys.stdout.flush()


def _follow(state: StateDir, seen: set[Event], done: set[tuple[str, str]], as_json: bool) -> None:
    while True:
        time.sleep(FOLLOW_POLL_SECONDS)
        fresh = [e for e in collect(state, None, done) if e not in seen]
        seen.update(fresh)
        _emit(fresh, as_json)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="donebell log", description="Recent decisions: notified, suppressed and why, waiting, dead."
    )
    parser.add_argument("--last", type=int, default=20, metavar="N", help="how many events (default 20; 0: all)")
    parser.add_argument("--follow", "-f", action="store_true", help="keep printing new events until Ctrl-C")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    args = parser.parse_args(argv)
    if args.last < 0:
        parser.error("--last must be 0 (all) or more")
    root = state_dir_path()
    if not root.is_dir():
        sys.stderr.write(f"donebell log: no state directory at {root} (nothing has run yet)\n")
        return 1
    state = StateDir(root)  # never .ensure(): log creates nothing
    if not args.follow:
        _emit(collect(state, args.last or None), args.json)
        return 0
    # Everything that exists now is old news, not only the ``--last N`` shown: an older waiting
    # record or log line would otherwise print on the first poll, after the newest.
    done: set[tuple[str, str]] = set()
    everything = collect(state, None, done)
    _emit(everything[-args.last :] if args.last else everything, args.json)
    try:
        _follow(state, set(everything), done, args.json)
    except KeyboardInterrupt:
        return 0
    return 0
