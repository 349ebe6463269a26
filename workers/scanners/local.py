"""The ``local-scanner`` role: the safety net that reads Codex rollouts and Claude transcripts
when no hook reported.

``donebell worker local-scanner [--once] [--debug] [--scan-scope hot|all]``

Each pass runs :class:`~donebell.workers.agents.codex.scan_engine.ScanEngine` over ``$CODEX_HOME`` with cursors
in ``watch/local/``. Passes are woken by inotify on the hot folders and the SQLite home
(:meth:`watch_paths`), and by the heartbeat; every ``watch_scan_seconds`` one of them is a full
rescan, the source of truth. An idle pass costs a handful of ``stat`` calls: the work follows the
hot set, never the size of the archive. Claude transcripts are tailed by
:class:`~donebell.workers.agents.claude.tail.ClaudeTail` in the same passes (docs/hooks.md).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

from donebell.shared.paths import claude_config_dir, codex_home, codex_sqlite_home
from donebell.shared.statedir import now
from donebell.workers.agents.claude.tail import ClaudeTail
from donebell.workers.agents.codex.scan_engine import ScanEngine, ScanOptions
from donebell.workers.role import PassResult, Role

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
    claude: ClaudeTail | None = None

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
        if self.settings.watch_claude_transcripts and self.settings.enable_claude_code:
            self.claude = ClaudeTail(
                self.state,
                Path(os.path.realpath(claude_config_dir())),
                idle_grace=self.settings.idle_grace_seconds,
                origin=self.settings.origin or None,
                include_message=self.settings.include_message,
                replay_seconds=self.settings.watch_initial_replay_seconds,
            )
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
        result = self._codex_pass()
        if self.claude is None:
            return result
        report = self.claude.scan(full=bool(self.last.get("last_scan_full", True)))
        result.counters.update(report.counters)
        if report.next_in is not None:
            result.next_in = report.next_in if result.next_in is None else min(result.next_in, report.next_in)
        return result

    def _codex_pass(self) -> PassResult:
        if self.engine is None and self.claude is None:
            return PassResult(next_in=None, idle=True)
        gap = time.monotonic() - self.last_pass_end
        if gap < MIN_PASS_GAP:
            time.sleep(MIN_PASS_GAP - gap)
        if self.engine is None:  # Claude only: the passes still need a periodic full one
            full = time.monotonic() >= self.next_full
            self.last_pass_end = time.monotonic()
            if full:
                self.next_full = self.last_pass_end + self.settings.watch_scan_seconds
            self.last["last_scan_full"] = full
            return PassResult(next_in=max(0.0, self.next_full - time.monotonic()), idle=True)
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
        claude = [] if self.claude is None else self.claude.watch_paths()
        return ([] if self.engine is None else self.engine.watch_paths()) + claude

    def health_extra(self) -> dict[str, Any]:
        claude = {} if self.claude is None else self.claude.health()
        if self.engine is None:
            return {"enabled": False, **claude}
        return {"enabled": True, **self.engine.health(), **self.last, **claude}
