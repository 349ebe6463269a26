"""The kill storm's machinery, shared by ``test_kill_storm.py`` and ``benchmarks/bench_reliability.py``.

A load generator submits root Codex tasks (a real rollout each; most announced by a Stop hook,
some only by the rollout, as when a hook is missing). A killer sends SIGKILL to a random live
target: a role process (delivery, local-scanner, maintenance, or an on-demand delivery worker a
hook started), the supervisor itself (restarted at once, as systemd would), or a hook in flight.
Then the installation settles, is stopped with SIGTERM, and whatever is left is counted.
"""

from __future__ import annotations

import collections
import json
import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from support.rig import Rig, Turn
from support.runner import Proc
from support.service import Service, kill_leftovers, processes_of

#: Share of tasks announced only by their rollout (no hook): the scanner must find them.
WITHOUT_HOOK = 0.2
#: The supervisor's rules in seconds; a role killed three times in a minute goes fatal and is retried after 1 s.
STORM_SUPERVISOR = {"DONEBELL_SUPERVISOR_FATAL_RETRY": "1", "DONEBELL_SUPERVISOR_THROTTLE": "0.3"}
ROLE_TITLES = ("donebell: delivery", "donebell: local-scanner", "donebell: maintenance")


class Load:
    """Submits the tasks, one every ``gap`` seconds, on its own thread."""

    def __init__(self, rig: Rig, rng: random.Random, tasks: int, gap: float) -> None:
        self.rig, self.rng, self.tasks, self.gap = rig, rng, tasks, gap
        self.turns: list[Turn] = []
        self.hooks: list[Proc] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.run, name="load", daemon=True)

    def run(self) -> None:
        for _ in range(self.tasks):
            turn = self.rig.new_turn()
            if self.rng.random() >= WITHOUT_HOOK:
                payload = json.dumps(self.rig.stop_payload(turn)).encode()
                hook = self.rig.start("hook", "codex-stop", stdin=payload)
                with self.lock:
                    self.hooks.append(hook)
                time.sleep(0.02)  # Codex writes task_complete right after its Stop hook returns
            self.rig.complete(turn, backdate=0)
            with self.lock:
                self.turns.append(turn)
            time.sleep(self.gap)

    def live_hooks(self) -> list[Proc]:
        with self.lock:
            hooks = list(self.hooks)
        return [h for h in hooks if h.rc is None and _running(h.pid)]


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Killer:
    """SIGKILLs ``kills`` random targets, one every ``every`` seconds (jittered)."""

    def __init__(self, rig: Rig, svc: Service, load: Load, rng: random.Random, kills: int, every: float) -> None:
        self.rig, self.svc, self.load, self.rng = rig, svc, load, rng
        self.target, self.every = kills, every
        self.kills: collections.Counter[str] = collections.Counter()

    def run(self) -> None:
        while sum(self.kills.values()) < self.target:
            time.sleep(self.rng.uniform(0.5, 1.5) * self.every)
            kind = self.rng.choices(["role", "supervisor", "hook"], weights=[6, 1.5, 2.5])[0]
            if kind == "supervisor":
                self.svc.proc.send_signal(signal.SIGKILL)
                self.svc.restart()
                self.kills["supervisor"] += 1
                continue
            if kind == "hook":
                targets = self._hook_in_flight()
            else:
                targets = [
                    (pid, cmd.removeprefix("donebell: "))
                    for pid, cmd in processes_of(self.rig).items()
                    if cmd in ROLE_TITLES
                ]
            if targets:
                pid, name = self.rng.choice(targets)
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                self.kills[name] += 1

    def _hook_in_flight(self, patience: float = 1.0) -> list[tuple[int, str]]:
        """A hook lives for tens of milliseconds: watch for one for up to ``patience`` seconds."""
        deadline = time.monotonic() + patience
        while self.load.thread.is_alive() and time.monotonic() < deadline:
            live = self.load.live_hooks()
            if live:
                return [(h.pid, "hook") for h in live]
            time.sleep(0.002)
        return []


def _settled(rig: Rig, turns: list[Turn], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not all(rig.where(t.key) == ["sent"] for t in turns):
        if time.monotonic() > deadline:
            where = collections.Counter("+".join(rig.where(t.key)) or "nowhere" for t in turns)
            raise AssertionError(f"not all delivered after the storm: {dict(where)}")
        time.sleep(0.2)


@dataclass
class StormOutcome:
    seed: int
    turns: list[Turn]
    hooks: list[Proc]
    kills: collections.Counter[str]
    storm_seconds: float
    settle_seconds: float  # from the last kill until every task was delivered
    stop_rc: int
    leftovers: list[str] = field(default_factory=list)
    service_output: str = ""


def run_storm(
    rig: Rig, log: Path, *, tasks: int, kills: int, every: float, seed: int, settle_timeout: float
) -> StormOutcome:
    """The whole storm against ``rig`` (whose config and stand-in the caller set up)."""
    rng = random.Random(seed)
    rig.extra_env.pop("DONEBELL_KICK_COMMAND", None)  # hooks may start an on-demand worker, as in real use
    rig.extra_env.update(STORM_SUPERVISOR)
    svc = Service(rig, log)
    try:
        svc.wait_ready()
        load = Load(rig, rng, tasks, gap=kills * every / tasks)
        killer = Killer(rig, svc, load, random.Random(rng.random()), kills, every)
        started = time.monotonic()
        load.thread.start()
        killer.run()
        load.thread.join()
        storm_seconds = time.monotonic() - started
        if svc.proc.poll() is not None:
            svc.restart()
        svc.wait_ready()  # the last kill may have hit the supervisor: let its successor start
        for hook in load.hooks:
            hook.wait(30)
        _settled(rig, load.turns, timeout=settle_timeout)
        settle_seconds = time.monotonic() - started - storm_seconds
        stop_rc = svc.stop()
        deadline = time.monotonic() + 40  # on-demand workers leave once the queue is empty
        while processes_of(rig) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = kill_leftovers(rig)
    finally:
        svc.stop()
        kill_leftovers(rig)
    return StormOutcome(
        seed, load.turns, load.hooks, killer.kills, storm_seconds, settle_seconds, stop_rc, left, svc.output()
    )


def storm_seed() -> int:
    """``DONEBELL_STORM_SEED`` replays a storm; otherwise a fresh random seed."""
    return int(os.environ.get("DONEBELL_STORM_SEED", str(random.randrange(1 << 30))))
