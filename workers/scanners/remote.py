"""The ``remote-scanner`` role: scan ``watch_roots`` in one-shot, time-bounded child processes.

``donebell worker remote-scanner [--once] [--debug] [--root-index N] [--scan-scope hot|all]``

Remote Codex homes (WSL distributions seen from Windows, network shares, sshfs/NFS mounts, other
users' homes) can be slow or hang outright. This process never touches them itself: for each root
it starts :mod:`donebell.workers.scanners.remote_scan_child` every ``watch_scan_seconds`` and gives it
``watch_remote_timeout_seconds``, counted from the moment the child process exists. A child over
budget is killed with its whole process group and the root is recorded ``timed_out`` in
``health/remote-scanner.json``; a child stuck in an unkillable wait (a dead NFS server) is left to
the kernel, and its root is not started again until it is gone (``stuck``). Roots run in parallel,
so one stalled root does not delay the others; the local scanner and delivery are other processes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from donebell.shared.config.view import WatchRootEntry, WatchRootLike
from donebell.shared.process import groups
from donebell.shared.statedir import now
from donebell.workers.kit.pass_result import PassResult
from donebell.workers.role import Role
from donebell.workers.scanners.remote_scan_child import root_hash

POLL_SECONDS = 0.1
#: A pass that started children waits this long for them (polling every SETTLE_POLL_SECONDS): an
#: idle root's quick run ends within it, so a run costs the role one pass (and one health write),
#: not one per poll. Longer runs are then polled every POLL_SECONDS by later passes.
SETTLE_SECONDS = 0.3
SETTLE_POLL_SECONDS = 0.02
REAP_SECONDS = 0.5  # how long to wait for a killed child before calling it stuck
#: What a child's result line contributes to the root's entry in the health file.
RESULT_FIELDS = (
    "mode",
    "full_reason",
    "counters",
    "files_watched",
    "index_status",
    "index_detail",
    "errors",
    "detail",
    "cpu_seconds",
)


def normalize_roots(raw: Sequence[str | WatchRootLike]) -> list[WatchRootLike]:
    return [WatchRootEntry(path=r) if isinstance(r, str) else r for r in raw]


@dataclass
class RootRun:
    """One root's schedule, current child and last outcome."""

    root: WatchRootLike
    argv: list[str]
    budget: float
    hash: str = ""
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    next_due: float = 0.0
    lingering: list[subprocess.Popen[bytes]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.hash = root_hash(self.root.path)
        self.info = {
            "root_hash": self.hash,
            "path": self.root.path,
            "origin": self.root.origin,
            "status": "pending",
            "runs": 0,
            "ended": 0,
            "timed_out": 0,
            "failures": 0,
        }

    @property
    def busy(self) -> bool:
        return self.proc is not None or bool(self.lingering)

    def spawn(self) -> None:
        # Its own process group, so a run over budget is killed as one (proc_group.kill_tree).
        self.proc = groups.start(
            self.argv, "windowless", stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.started = time.monotonic()  # the budget starts once the child exists
        self.info.update(status="running", last_started_at=now(), pid=self.proc.pid)
        self.info["runs"] += 1

    def poll(self, mono: float, interval: float) -> str | None:
        """Advance this root; returns the outcome word when a run just ended."""
        self.lingering = [p for p in self.lingering if p.poll() is None]
        if self.proc is None:
            if not self.lingering and self.info["status"] == "stuck":
                self.info["status"] = "timed_out"
            return None
        proc = self.proc
        if proc.poll() is None:
            if mono - self.started < self.budget:
                return None
            groups.kill_tree(proc)
            self._close(proc)
            try:
                proc.wait(REAP_SECONDS)
            except subprocess.TimeoutExpired:
                self.lingering.append(proc)  # in an unkillable wait: never start a second one
            return self._end(
                "stuck" if self.lingering else "timed_out", mono, interval, error=f"timed out after {self.budget:g} s"
            )
        try:
            out, err = proc.communicate(timeout=REAP_SECONDS)
        except subprocess.TimeoutExpired:  # a grandchild holds the pipes open
            groups.kill_tree(proc)
            self._close(proc)
            out, err = b"", b""
        result = _last_json_line(out)
        status = str(result.get("status") or "failed") if result else "failed"
        error = (
            result.get("error")
            if result
            else (err.decode("utf-8", "replace").strip()[-300:] or f"exit code {proc.returncode}")
        )
        self.info.update({k: result.get(k) for k in RESULT_FIELDS if k in result})
        self.info["exit_code"] = proc.returncode
        return self._end(status, mono, interval, error=error if status == "failed" else None)

    def _end(self, status: str, mono: float, interval: float, error: str | None = None) -> str:
        self.proc = None
        self.next_due = mono + interval
        self.info.update(status=status, last_finished_at=now(), last_seconds=round(mono - self.started, 3))
        self.info["ended"] += 1
        if status in ("timed_out", "stuck"):
            self.info["timed_out"] += 1
            self.info["last_timed_out_at"] = now()
        if status == "failed":
            self.info["failures"] += 1
        if error:
            self.info["last_error"] = str(error)[:300]
        return status

    @staticmethod
    def _close(proc: subprocess.Popen[bytes]) -> None:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass

    def stop(self) -> None:
        for proc in [p for p in (self.proc, *self.lingering) if p is not None]:
            groups.kill_tree(proc)
            self._close(proc)


def _last_json_line(out: bytes) -> dict[str, Any]:
    for line in reversed(out.decode("utf-8", "replace").splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return {}


class RemoteScannerRole(Role):
    name = "remote-scanner"
    heartbeat_seconds: ClassVar[float] = 30.0  # its work comes every watch_scan_seconds: wake no more than needed

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--root-index", type=int, default=None, help="scan only watch_roots[N]")
        parser.add_argument(
            "--scan-scope",
            choices=("hot", "all"),
            default="hot",
            help="passed to each root's scan (all: walk its whole archive once)",
        )

    def setup(self) -> None:
        roots = normalize_roots(self.settings.watch_roots)
        index = getattr(self.args, "root_index", None)
        if index is not None:
            if not 0 <= index < len(roots):
                raise SystemExit(f"donebell worker remote-scanner: no watch_roots[{index}] ({len(roots)} configured)")
            roots = [roots[index]]
        budget = self.settings.watch_remote_timeout_seconds
        self.runs = [RootRun(r, self._argv(r, budget), budget) for r in roots]

    def _argv(self, root: WatchRootLike, budget: float) -> list[str]:
        spec = {
            "path": root.path,
            "origin": root.origin,
            "sqlite_path": root.sqlite_path,
            "budget": budget,
            "replay_seconds": self.settings.watch_initial_replay_seconds,
            "include_message": self.settings.include_message,
            "scope": getattr(self.args, "scan_scope", "hot") or "hot",
            "cursor_folder": f"watch/remote/{root_hash(root.path)}",
            "parent_pid": os.getpid(),
        }
        return groups.own_python(
            "donebell.workers.scanners.remote_scan_child",
            "--state-dir",
            str(self.state.root),
            "--spec",
            json.dumps(spec),
        )

    def run_pass(self) -> PassResult:
        counters: dict[str, int] = {}
        interval = self.settings.watch_scan_seconds
        settle_until: float | None = None
        while True:
            mono = time.monotonic()
            for run in self.runs:
                outcome = run.poll(mono, interval)
                if outcome is not None:
                    counters["runs"] = counters.get("runs", 0) + 1
                    counters[outcome] = counters.get(outcome, 0) + 1
                if not run.busy and mono >= run.next_due:
                    run.spawn()
                    settle_until = settle_until or mono + SETTLE_SECONDS
            running = [r for r in self.runs if r.proc is not None]
            if not running:
                break
            if self.bounded():
                time.sleep(POLL_SECONDS)  # --once: wait here until every root finished or was cut off
            elif settle_until is not None and mono < settle_until:
                time.sleep(SETTLE_POLL_SECONDS)
            else:
                break
        mono = time.monotonic()
        waits = [min(POLL_SECONDS, r.started + r.budget - mono) for r in running]
        waits += [r.next_due - mono for r in self.runs if not r.busy]
        waits += [1.0 for r in self.runs if r.lingering]
        bad = [
            f"{r.root.origin or r.root.path}: {r.info['status']}"
            for r in self.runs
            if r.info["status"] in ("timed_out", "stuck", "failed", "unavailable")
        ]
        return PassResult(
            next_in=max(0.0, min(waits)) if waits else None,
            idle=not running,
            counters=counters,
            degraded="; ".join(bad)[:300] or None,
        )

    def bounded(self) -> bool:
        return bool(getattr(self.args, "once", False))

    def health_extra(self) -> dict[str, Any]:
        return {
            "roots": [dict(r.info) for r in self.runs],
            "roots_configured": len(self.runs),
            "cycles_completed": min((int(r.info["ended"]) for r in self.runs), default=0),
            "timed_out_total": sum(int(r.info["timed_out"]) for r in self.runs),
        }

    def teardown(self) -> None:
        for run in getattr(self, "runs", []):
            run.stop()
