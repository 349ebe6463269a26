"""The ``local-scanner`` role: the safety net that reads Codex rollouts when no hook reported.

``donebell worker local-scanner [--once] [--debug] [--scan-scope hot|all]``

Each pass runs :class:`~donebell.workers.scan_engine.ScanEngine` over ``$CODEX_HOME`` with cursors
in ``watch/local/``. Passes are woken by inotify on the hot folders and the SQLite home
(:meth:`watch_paths`), and by the heartbeat; every ``watch_scan_seconds`` one of them is a full
rescan, the source of truth. An idle pass costs a handful of ``stat`` calls: the work follows the
hot set, never the size of the archive.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from donebell.shared.paths import codex_home, codex_sqlite_home
from donebell.shared.statedir import now
from donebell.workers.role import PassResult, Role
from donebell.workers.scan_engine import ScanEngine, ScanOptions

MIN_PASS_GAP = 0.25  # coalesce bursts of file events (Codex appends many lines per turn)


def waiting_note(codex_home_exists: bool, index_status: str) -> str | None:
    """What a ready scanner is waiting for on a machine where Codex has not run yet."""
    if not codex_home_exists:
        return "waiting for Codex's first run (no Codex home yet)"
    if index_status == "missing":
        return "waiting for Codex's first run (no thread index yet)"
    return None


class LocalScannerRole(Role):
    name = "local-scanner"

    engine: ScanEngine | None = None

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--scan-scope",
            choices=("hot", "all"),
            default="hot",
            help="hot (default): the thread index and today's/yesterday's folders; "
            "all: also walk every rollout under sessions/ and archived_sessions/ once",
        )

    def setup(self) -> None:
        self.enabled = self.settings.watch_rollouts
        self.next_full = 0.0
        self.last_pass_end = -1e18
        self.last: dict[str, Any] = {}
        if not self.enabled:
            return
        home = Path(os.path.realpath(codex_home()))
        self.engine = ScanEngine(
            self.state,
            ScanOptions(
                source="scanner",
                cursor_folder="watch/local",
                codex_home=home,
                sqlite_home=Path(os.path.realpath(codex_sqlite_home())),
                origin=self.settings.origin or None,
                replay_seconds=self.settings.watch_initial_replay_seconds,
                include_message=self.settings.include_message,
                scope=getattr(self.args, "scan_scope", "hot") or "hot",
            ),
        )

    def run_pass(self) -> PassResult:
        if self.engine is None:
            return PassResult(next_in=None, idle=True)
        gap = time.monotonic() - self.last_pass_end
        if gap < MIN_PASS_GAP:
            time.sleep(MIN_PASS_GAP - gap)
        full = time.monotonic() >= self.next_full
        cpu = time.process_time()
        report = self.engine.scan(full=full)
        self.last_pass_end = time.monotonic()
        if full:
            self.next_full = self.last_pass_end + self.settings.watch_scan_seconds
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
        due = min(self.next_full, self.engine.index_retry_at or self.next_full)
        return PassResult(
            next_in=max(0.0, due - time.monotonic()),
            idle=True,
            counters=dict(report.counters),
            degraded=degraded,
        )

    def watch_paths(self) -> list[Path]:
        return [] if self.engine is None else self.engine.watch_paths()

    def health_extra(self) -> dict[str, Any]:
        if self.engine is None:
            return {"enabled": False}
        return {"enabled": True, **self.engine.health(), **self.last}
