"""The ``local-scanner`` role: the safety net that reads Codex rollouts and Claude transcripts
when no hook reported.

``donebell worker local-scanner [--once] [--debug] [--scan-scope hot|all]``

Each pass runs every registered agent's local scan (``Scanning.local_scan``, docs/design.md
"Adding an agent"): Codex's scan engine over ``$CODEX_HOME`` with cursors in ``watch/local/``
(``workers/agents/codex/local_scan.py``), Claude's transcript tailer with cursors in
``watch/claude/`` (``workers/agents/claude/local_scan.py``, docs/hooks.md). Passes are woken by
inotify on what they watch (:meth:`watch_paths`: the hot folders, the SQLite home, the projects
folders), and by the heartbeat; every ``watch_scan_seconds`` one of them is a full rescan, the
source of truth. An idle pass costs a handful of ``stat`` calls: the work follows the hot set,
never the size of the archive.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from donebell.workers.agents.registry import agent, names
from donebell.workers.kit.pass_result import PassResult
from donebell.workers.role import Role

if TYPE_CHECKING:
    from donebell.workers.agents.protocols import LocalScan

MIN_PASS_GAP = 0.25  # coalesce bursts of file events (Codex appends many lines per turn)


class LocalScannerRole(Role):
    name = "local-scanner"

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
        scope = getattr(self.args, "scan_scope", "hot") or "hot"
        self.scans: list[LocalScan] = []
        for name in names():  # registration order: Codex's engine, then Claude's tailer
            found = agent(name)
            scan = found.local_scan(self.state, self.settings, scope) if found is not None else None
            if scan is not None:
                self.scans.append(scan)

    def run_pass(self) -> PassResult:
        if not self.scans:
            return PassResult(next_in=None, idle=True)
        gap = time.monotonic() - self.last_pass_end
        if gap < MIN_PASS_GAP:
            time.sleep(MIN_PASS_GAP - gap)
        full = time.monotonic() >= self.next_full
        shares = [scan.scan(full) for scan in self.scans]
        self.last_pass_end = time.monotonic()
        if full:
            self.next_full = self.last_pass_end + self.settings.watch_scan_seconds
        result = PassResult(next_in=max(0.0, self.next_full - time.monotonic()), idle=True)
        for share in shares:
            result.counters.update(share.counters)
            if share.next_in is not None:
                result.next_in = share.next_in if result.next_in is None else min(result.next_in, share.next_in)
            result.degraded = result.degraded or share.degraded
        return result

    def watch_paths(self) -> list[Path]:
        return [path for scan in self.scans for path in scan.watch_paths()]

    def health_extra(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"enabled": self.enabled}
        for scan in self.scans:
            extra.update(scan.health())
        return extra
