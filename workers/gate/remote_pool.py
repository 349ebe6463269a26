"""The remote roots' probe workers, seen from the delivery process: start, send, collect, cut off.

Nothing here waits on a remote file; the delivery process only talks to pipes. One worker process
per root (:mod:`~donebell.workers.gate.remote_worker`), started when a candidate of that root is
due and retired after :data:`IDLE_EXIT_SECONDS` without work. One request at a time per root.
A thread per worker blocks on its stdout *pipe* (never on the share) and queues what it reads;
another writes its requests. A gate pass takes the answers that have arrived, waiting at most
:data:`SYNC_WINDOW_SECONDS` after it sent something (a healthy share answers in milliseconds).

A request unanswered after ``watch_remote_timeout_seconds``: the worker is killed; one that does
not die (an unkillable kernel wait: a dead hard NFS mount, an unanswered FUSE request) is kept as
*lingering*, and no new worker starts for that root while it lives, so a hung root costs one
stuck process, never more. Until then, and for one more budget after a timeout (backing off
after a worker error), the root is in trouble: its due candidates get the offline verdict
(``remote-unresponsive`` / ``remote-probe-error``) without any probe.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import json
import os
import queue
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any

from donebell.shared import platform
from donebell.shared.backoff import doubling
from donebell.shared.process.groups import CREATE_NO_WINDOW, NEUTRAL_CWD, own_python
from donebell.workers.gate.remote import PROBE_ERROR, UNRESPONSIVE, from_wire
from donebell.workers.kit.verdict import Verdict

SYNC_WINDOW_SECONDS = 0.3
IDLE_EXIT_SECONDS = 60.0
POLL_MIN_SECONDS = 0.05
POLL_MAX_SECONDS = 0.5
#: A failing worker's root is left alone 1 s, 2 s, 4 s ... (doubling per error in a row), then 30 s.
ERROR_BACKOFF_BASE_SECONDS = 0.5
ERROR_BACKOFF_MAX_SECONDS = 30.0

Inbox = queue.Queue[tuple[str, int, bytes | None]]


@dataclass
class Probe:
    """One request in flight: the records as the delivery process read them."""

    ident: int
    groups: list[list[dict[str, Any]]]
    sent_wall: float
    sent_mono: float
    budget: float

    @property
    def keys(self) -> list[str]:
        return [record["key"] for group in self.groups for record in group]


@dataclass
class Answer:
    """What came of one probe: per-key ``(first, second)`` verdicts, or a failure reason."""

    root: str
    probe: Probe
    results: dict[str, tuple[Verdict, Verdict | None]] = field(default_factory=dict)
    failure: str | None = None  # UNRESPONSIVE / PROBE_ERROR when there is no usable answer
    evidence: str = ""
    done_mono: float | None = None  # when the worker finished (time.monotonic is system-wide)
    since: float = 0.0  # failure: since when (wall clock) the root has been in trouble


@dataclass
class Trouble:
    """Why a root is not probed right now."""

    reason: str
    evidence: str
    since: float


def _read_loop(stream: IO[bytes], root: str, generation: int, inbox: Inbox) -> None:
    try:
        with contextlib.suppress(OSError, ValueError):
            for line in stream:
                inbox.put((root, generation, line))
    finally:
        inbox.put((root, generation, None))
        with contextlib.suppress(OSError):
            stream.close()


def _write_loop(stream: IO[bytes], outgoing: queue.Queue[bytes | None]) -> None:
    with contextlib.suppress(OSError, ValueError):  # a dead worker's pipe: stop writing
        while (data := outgoing.get()) is not None:
            stream.write(data)
            stream.flush()
    with contextlib.suppress(OSError):
        stream.close()


def _trim(record: dict[str, Any]) -> dict[str, Any]:
    """The record without its probe history (the evaluation never reads it; requests stay small)."""
    probe = {k: v for k, v in (record.get("probe") or {}).items() if k != "history"}
    return {**record, "probe": probe}


class Worker:
    """One root's probe worker process and its record of trouble."""

    def __init__(self, root: str, state_dir: str, inbox: Inbox) -> None:
        self.root, self.state_dir, self.inbox = root, state_dir, inbox
        self.proc: subprocess.Popen[bytes] | None = None
        self.outgoing: queue.Queue[bytes | None] | None = None
        self.generation = 0
        self.probe: Probe | None = None
        self.lingering: list[subprocess.Popen[bytes]] = []  # killed over budget, not dead yet
        self.exiting: list[subprocess.Popen[bytes]] = []  # retired or exited, to be reaped
        self.trouble: Trouble | None = None
        self.retry_at = 0.0
        self.errors_in_row = 0
        self.last_used = time.monotonic()
        self.counters = {"probes": 0, "answered": 0, "timeouts": 0, "errors": 0, "workers_started": 0}
        self.last_answer_at: float | None = None
        self.last_error: str | None = None

    def start(self) -> None:
        argv = own_python("donebell.workers.gate.remote_worker", "--state-dir", self.state_dir,
                          "--root", self.root, "--parent-pid", str(os.getpid()))  # fmt: skip
        flags = CREATE_NO_WINDOW if platform.on_windows() else 0
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            close_fds=True, creationflags=flags, cwd=NEUTRAL_CWD,
        )  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        self.proc, self.generation = proc, self.generation + 1
        self.outgoing = queue.Queue()
        name = f"donebell-probe-{proc.pid}"
        threading.Thread(target=_write_loop, args=(proc.stdin, self.outgoing), name=name, daemon=True).start()
        threading.Thread(
            target=_read_loop, args=(proc.stdout, self.root, self.generation, self.inbox), name=name, daemon=True
        ).start()
        self.counters["workers_started"] += 1

    def send(self, probe: Probe, payload: bytes) -> None:
        if self.proc is None or self.proc.poll() is not None:
            self._let_go()
            self.start()
        assert self.outgoing is not None
        self.outgoing.put(payload)
        self.probe, self.last_used = probe, time.monotonic()
        self.counters["probes"] += 1

    def _let_go(self, *, kill: bool = False) -> None:
        """Stop talking to the current process (its late words are ignored by generation)."""
        proc, self.proc = self.proc, None
        if self.outgoing is not None:
            self.outgoing.put(None)  # the writer closes stdin: a healthy worker exits
            self.outgoing = None
        if proc is None:
            return
        if kill:
            with contextlib.suppress(OSError):
                proc.kill()
            if proc.poll() is None:
                self.lingering.append(proc)
                return
        self.exiting.append(proc)

    def reap(self) -> None:
        self.lingering = [p for p in self.lingering if p.poll() is None]
        self.exiting = [p for p in self.exiting if p.poll() is None]

    def fail(self, probe: Probe, reason: str, evidence: str) -> Answer:
        """Record a probe without a usable answer; the root is in trouble until ``retry_at``."""
        since = self.trouble.since if self.trouble is not None else probe.sent_wall
        self.trouble = Trouble(reason, evidence, since)
        self.last_error = evidence[:300]
        if reason == UNRESPONSIVE:
            self.counters["timeouts"] += 1
            self.retry_at = time.monotonic() + probe.budget
        else:
            self.counters["errors"] += 1
            self.errors_in_row += 1
            backoff = doubling(ERROR_BACKOFF_BASE_SECONDS, self.errors_in_row)
            self.retry_at = time.monotonic() + min(ERROR_BACKOFF_MAX_SECONDS, backoff)
        return Answer(self.root, probe, failure=reason, evidence=evidence, since=since)

    def take(self, line: bytes | None) -> Answer | None:
        """One line (or end of output) from the current worker process."""
        probe = self.probe
        if line is None:
            code = self.proc.poll() if self.proc is not None else None
            self._let_go()
            if probe is None:
                return None
            self.probe = None
            return self.fail(probe, PROBE_ERROR, f"probe worker exited without answering (exit code {code})")
        try:
            reply = json.loads(line)
        except ValueError:
            return None
        if probe is None or not isinstance(reply, dict) or reply.get("id") != probe.ident:
            return None
        self.probe, self.last_used = None, time.monotonic()
        if reply.get("error"):
            return self.fail(probe, PROBE_ERROR, f"probe worker error: {reply['error']}")
        results: dict[str, tuple[Verdict, Verdict | None]] = {}
        for item in reply.get("results") or []:
            second = item.get("second")
            results[item["key"]] = (from_wire(item["first"]), from_wire(second) if second else None)
        self.trouble, self.errors_in_row = None, 0
        self.counters["answered"] += 1
        self.last_answer_at = time.time()
        return Answer(self.root, probe, results, done_mono=reply.get("done_mono"))

    def health(self) -> dict[str, Any]:
        if self.probe is not None:
            state = "probing"
        elif self.trouble is not None and (self.lingering or time.monotonic() < self.retry_at):
            state = "unresponsive" if self.trouble.reason == UNRESPONSIVE else "error"
        else:
            state = "ready"
        return {
            "root": self.root,
            "state": state,
            "pid": self.proc.pid if self.proc is not None else None,
            "in_flight": len(self.probe.keys) if self.probe is not None else 0,
            "since": self.trouble.since if self.trouble is not None and state != "ready" else None,
            "lingering_pids": [p.pid for p in self.lingering],
            "last_answer_at": self.last_answer_at,
            "last_error": self.last_error,
            **self.counters,
        }


class RemotePool:
    """Every root's worker; lives as long as the delivery process (``GateContext.persistent``)."""

    def __init__(self, state_dir: str) -> None:
        self.state_dir = state_dir
        self.inbox: Inbox = queue.Queue()
        self.workers: dict[str, Worker] = {}
        self._ids = itertools.count(1)

    def in_flight(self) -> set[str]:
        return {key for w in self.workers.values() if w.probe is not None for key in w.probe.keys}

    def trouble(self, root: str) -> Trouble | None | bool:
        """False when the root can take a probe now, True while one is in flight, else its trouble."""
        w = self.workers.get(root)
        if w is None:
            return False
        w.reap()
        if w.probe is not None:
            return True
        if w.trouble is None or not (w.lingering or time.monotonic() < w.retry_at):
            return False
        if w.lingering:
            pids = ", ".join(str(p.pid) for p in w.lingering)
            return Trouble(w.trouble.reason, f"{w.trouble.evidence}; probe worker {pids} still stuck", w.trouble.since)
        return w.trouble

    def send(self, root: str, groups: list[list[dict[str, Any]]], settings: dict[str, Any], now: float,
             budget: float) -> None:  # fmt: skip
        w = self.workers.get(root)
        if w is None:
            w = self.workers[root] = Worker(root, self.state_dir, self.inbox)
        probe = Probe(next(self._ids), groups, time.time(), time.monotonic(), budget)
        request = {
            "id": probe.ident,
            "now": now,
            "settings": settings,
            "groups": [[_trim(r) for r in g] for g in groups],
        }
        w.send(probe, json.dumps(request, default=str).encode("utf-8") + b"\n")

    def receive(self, until_mono: float) -> list[Answer]:
        """The answers that have arrived; waits until ``until_mono`` while a probe is in flight."""
        answers: list[Answer] = []
        while True:
            wait = until_mono - time.monotonic()
            try:
                if wait > 0 and self.in_flight():
                    root, generation, line = self.inbox.get(timeout=wait)
                else:
                    root, generation, line = self.inbox.get_nowait()
            except queue.Empty:
                return answers
            w = self.workers.get(root)
            if w is not None and generation == w.generation:
                answer = w.take(line)
                if answer is not None:
                    answers.append(answer)

    def expire(self) -> list[Answer]:
        """Cut off probes over budget: kill their workers; the roots become unresponsive."""
        answers: list[Answer] = []
        mono = time.monotonic()
        for w in self.workers.values():
            probe = w.probe
            if probe is not None and mono - probe.sent_mono >= probe.budget:
                w.probe = None
                w._let_go(kill=True)
                evidence = f"watch root {w.root} did not answer a probe within {probe.budget:g} s (watch_remote_timeout_seconds)"
                answers.append(w.fail(probe, UNRESPONSIVE, evidence))
        return answers

    def retire_idle(self) -> None:
        mono = time.monotonic()
        for w in self.workers.values():
            w.reap()
            if w.proc is not None and w.probe is None and mono - w.last_used >= IDLE_EXIT_SECONDS:
                w._let_go()

    def next_poll(self) -> float | None:
        """Seconds until an in-flight probe should be looked at again (backs off to 0.5 s)."""
        mono = time.monotonic()
        waits = []
        for w in self.workers.values():
            if w.probe is not None:
                elapsed = mono - w.probe.sent_mono
                wait = min(max(POLL_MIN_SECONDS, elapsed / 4), POLL_MAX_SECONDS)
                waits.append(max(0.0, min(wait, w.probe.budget - elapsed)))
        return min(waits) if waits else None

    def health(self) -> list[dict[str, Any]]:
        return [w.health() for w in self.workers.values()]

    def close(self) -> None:
        """Kill every worker (process exit, tests); stuck ones are left to the kernel."""
        for w in self.workers.values():
            w.probe = None
            w._let_go(kill=True)
            for proc in w.exiting:
                with contextlib.suppress(OSError):
                    proc.kill()


def pool_for(persistent: dict[Any, Any], state_dir: str) -> RemotePool:
    """The process-lifetime pool of one state directory (killed at interpreter exit)."""
    pool = persistent.get("remote_pool")
    if not isinstance(pool, RemotePool):
        pool = persistent["remote_pool"] = RemotePool(state_dir)
        atexit.register(pool.close)
    return pool
