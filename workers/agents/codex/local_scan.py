"""Codex's share of a local-scanner pass: the scan engine over ``$CODEX_HOME``, cursors in ``watch/local/``.

The role (``workers/scanners/local.py``) decides when a pass runs and whether it is a full one;
this runs :class:`~donebell.workers.agents.codex.scan_engine.ScanEngine` for it and keeps what the
role's health file shows about Codex (the last scan's figures, the thread index, what a machine
where Codex never ran is waiting for).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from donebell.shared.config.view import SettingsLike
from donebell.shared.statedir import WATCH_LOCAL, StateDir, now
from donebell.workers.agents.codex import codex_home, codex_sqlite_home
from donebell.workers.agents.codex.scan_engine import ScanEngine, ScanOptions
from donebell.workers.kit.pass_result import PassResult


def waiting_note(codex_home_exists: bool, index_status: str) -> str | None:
    """What a ready scanner is waiting for on a machine where Codex has not run yet."""
    if not codex_home_exists:
        return "waiting for Codex's first run (no Codex home yet)"
    if index_status == "missing":
        return "waiting for Codex's first run (no thread index yet)"
    return None


def local_scan(state: StateDir, settings: SettingsLike, scope: str) -> CodexLocalScan | None:
    """The rollout scan, unless ``watch_rollouts`` is off."""
    if not settings.watch_rollouts:
        return None
    engine = ScanEngine(
        state,
        ScanOptions(
            source="scanner",
            cursor_folder=WATCH_LOCAL,
            codex_home=Path(os.path.realpath(codex_home())),
            sqlite_home=Path(os.path.realpath(codex_sqlite_home())),
            origin=settings.origin or None,
            replay_seconds=settings.watch_initial_replay_seconds,
            include_message=settings.include_message,
            scope=scope,
        ),
    )
    return CodexLocalScan(engine)


class CodexLocalScan:
    """:class:`~donebell.workers.agents.protocols.LocalScan` for Codex rollouts."""

    def __init__(self, engine: ScanEngine) -> None:
        self.engine = engine
        self.last: dict[str, Any] = {}

    def scan(self, full: bool) -> PassResult:
        cpu = time.process_time()
        report = self.engine.scan(full=full)
        if full:
            self.last["last_full_scan_at"] = now()
        self.last.update(
            last_scan_at=now(),
            last_scan_seconds=round(report.seconds, 6),
            last_scan_cpu_seconds=round(time.process_time() - cpu, 6),
            last_scan_full=full,
            cursors_advanced_last=report.counters.get("cursors_advanced", 0),
        )
        if report.errors:
            self.last["last_file_error"] = report.errors[-1]
            self.last["last_file_error_at"] = now()
        status = self.engine.index_result.status
        degraded = None
        # No Codex home (a Claude-only machine) or no thread index yet (Codex never ran) is
        # nothing to watch yet, not a fault: the role is ready and says what it waits for.
        self.last["note"] = waiting_note(self.engine.opts.codex_home.is_dir(), status)
        if status not in ("ok", "not-checked", "missing") and self.engine.opts.codex_home.is_dir():
            degraded = f"thread index {status}: discovering from the hot folders only"
        retry_at = self.engine.index_retry_at
        waits = [max(0.0, retry_at - time.monotonic())] if retry_at else []
        ask_at = self.engine.tailer.next_ask_at  # a call waiting quietly: look again when it is due
        if ask_at is not None:
            waits.append(max(0.0, ask_at - now()))
        return PassResult(
            next_in=min(waits) if waits else None,
            idle=True,
            counters=dict(report.counters),
            degraded=degraded,
        )

    def watch_paths(self) -> list[Path]:
        return self.engine.watch_paths()

    def health(self) -> dict[str, Any]:
        return {**self.engine.health(), **self.last}
