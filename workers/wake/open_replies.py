"""The open replies of the wake role, each moved on by one worker at a time, beside the taps.

Moving a reply on may wait for an agent command (``codex queue`` answers in up to a minute, the
app-server daemon or a session's socket in seconds). Done on the thread that reads the reply topic,
that wait held back every tap behind it: an Allow tapped meanwhile expired unanswered, and the
role's heartbeat went stale, so every permission hook stopped waiting for the phone. So the steps
run on at most :data:`STEP_WORKERS` worker threads, while the role's own thread keeps taking taps
(answers are written at once, :mod:`.answers`) and writing its heartbeat every pass.

One record is stepped by one thread at a time (the record's dict is that thread's until its step
returns); a step asks for its next look after the delay it returns, or after :data:`LOOK_AGAIN`
when it names none. A ``--once`` run steps inline: it has nothing else to do meanwhile.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from donebell.shared.statedir._wake import FINAL
from donebell.workers.kit.agent_command import kill_running
from donebell.workers.wake.pipeline import WakePipeline

#: Replies moved on at the same time: enough for a slow agent command not to hold the others.
STEP_WORKERS = 2
#: When a step names no delay, the next look (the pass length of the role before it had workers).
LOOK_AGAIN = 9.0
#: After a step failed with an exception: the next try.
AFTER_FAILURE = 5.0
#: A record in one of these has nothing left to do (an answered tap included).
CLOSED = FINAL


class OpenReplies:
    def __init__(
        self,
        pipeline: WakePipeline,
        log: logging.Logger,
        *,
        inline: bool,
        on_done: Callable[[], None] = lambda: None,
    ) -> None:
        self.pipeline, self.log, self.inline, self.on_done = pipeline, log, inline, on_done
        self.records: dict[str, dict[str, Any]] = {}
        self.due: dict[str, float] = {}  # time.monotonic() of the next look
        self.running: dict[str, Future[float | None]] = {}
        self.pool = None if inline else ThreadPoolExecutor(STEP_WORKERS, thread_name_prefix="wake-step")

    def __len__(self) -> int:
        return len(self.records)

    def add(self, record: dict[str, Any]) -> None:
        """A reply received (or found open at start): looked at on the next dispatch."""
        key = record["key"]
        if key in self.records or record.get("status") in CLOSED:
            return  # one copy per record: a worker may be moving the one already here
        self.records[key] = record
        self.due[key] = 0.0

    def dispatch(self) -> None:
        """Start a step for each record that is due, as far as the workers allow."""
        at = time.monotonic()
        for key, record in list(self.records.items()):
            if key in self.running or self.due[key] > at:
                continue
            if self.pool is None:
                self.running[key] = _done(self._step(record))
            elif len(self.running) < STEP_WORKERS:
                future = self.pool.submit(self._step, record)
                future.add_done_callback(lambda _f: self.on_done())
                self.running[key] = future

    def collect(self) -> None:
        """Take in the steps that finished: closed records go, the others get their next look."""
        at = time.monotonic()
        for key, future in list(self.running.items()):
            if not future.done():
                continue
            del self.running[key]
            delay = future.result()
            if self.records[key].get("status") in CLOSED:
                del self.records[key], self.due[key]
            else:
                self.due[key] = at + (LOOK_AGAIN if delay is None else max(0.0, delay))

    def next_due(self) -> float | None:
        """Seconds until a record not being stepped wants its look (0: now); None: none waits."""
        waiting = [due for key, due in self.due.items() if key not in self.running]
        return max(0.0, min(waiting) - time.monotonic()) if waiting else None

    def _step(self, record: dict[str, Any]) -> float | None:
        try:
            return self.pipeline.step(record)
        except Exception as exc:  # noqa: BLE001 - one bad record must not stop the others
            self.log.error("wake %s: step failed: %s: %s", record.get("message_id"), type(exc).__name__, exc)
            return AFTER_FAILURE

    def close(self) -> None:
        """The role stops: kill the agent commands still waited for, drop the steps not begun."""
        kill_running()
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


def _done(value: float | None) -> Future[float | None]:
    future: Future[float | None] = Future()
    future.set_result(value)
    return future
