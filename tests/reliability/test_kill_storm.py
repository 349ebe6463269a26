"""Kill storm: ``donebell run`` with its real roles under SIGKILL while root tasks keep arriving.

A load generator submits root Codex tasks (a real rollout each; most announced by a Stop hook,
some only by the rollout, as when a hook is missing). A killer sends SIGKILL to a random live
target: a role process (delivery, local-scanner, maintenance, or an on-demand delivery worker a
hook started), the supervisor itself (restarted at once, as systemd would), or a hook in flight.
After the storm: every task delivered, the counts match, duplicates only ever repeat a task's own
``sequence_id``, SIGTERM stops the service (exit 0) and no process of the installation is left.

Sizes: ``DONEBELL_FULL_STORMS=1`` runs 500 tasks and 200 kills; the default is 60 and 25.
``DONEBELL_STORM_SEED`` replays a run (the seed is printed).
"""

from __future__ import annotations

import collections
import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from support.ntfy_standin import NtfyStandin

from reliability.figures import record
from reliability.rig import Rig, Turn
from reliability.runner import Proc, size
from reliability.service import Service, kill_leftovers, processes_of

TASKS = size(60, 500)
KILLS = size(25, 200)
#: Seconds between two kills; tasks arrive over the same span.
KILL_EVERY = size(0.3, 0.4)
#: Share of tasks announced only by their rollout (no hook): the scanner must find them.
WITHOUT_HOOK = 0.2
#: The supervisor's rules in seconds; a role killed three times in a minute goes fatal and is retried after 1 s.
STORM_SUPERVISOR = {"DONEBELL_SUPERVISOR_FATAL_RETRY": "1", "DONEBELL_SUPERVISOR_THROTTLE": "0.3"}
ROLE_TITLES = ("donebell: delivery", "donebell: local-scanner", "donebell: maintenance")


class Load:
    """Submits the tasks, one every ``gap`` seconds, on its own thread."""

    def __init__(self, rig: Rig, rng: random.Random, gap: float) -> None:
        self.rig, self.rng, self.gap = rig, rng, gap
        self.turns: list[Turn] = []
        self.hooks: list[Proc] = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.run, name="load", daemon=True)

    def run(self) -> None:
        for _ in range(TASKS):
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
    """SIGKILLs ``KILLS`` random targets, one every ``KILL_EVERY`` seconds."""

    def __init__(self, rig: Rig, svc: Service, load: Load, rng: random.Random) -> None:
        self.rig, self.svc, self.load, self.rng = rig, svc, load, rng
        self.kills: collections.Counter[str] = collections.Counter()

    def run(self) -> None:
        while sum(self.kills.values()) < KILLS:
            time.sleep(self.rng.uniform(0.5, 1.5) * KILL_EVERY)
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


def test_kill_storm_loses_nothing_and_leaves_no_process_behind(
    make_rig: Callable[..., Rig], standin: NtfyStandin, tmp_path: Path
) -> None:
    """Random SIGKILLs of roles, the supervisor and hooks while tasks arrive: afterwards every task is
    delivered, sent receipts and server messages match the tasks one to one (duplicates repeat the
    task's own sequence_id), SIGTERM stops the service with exit 0 and nothing is left running."""
    seed = int(os.environ.get("DONEBELL_STORM_SEED", str(random.randrange(1 << 30))))
    print(f"kill storm: seed {seed}, {TASKS} tasks, {KILLS} kills")
    rng = random.Random(seed)
    rig = make_rig(idle_probe_grace_seconds=10.0)
    rig.extra_env.pop("DONEBELL_KICK_COMMAND")  # hooks may start an on-demand worker, as in real use
    rig.extra_env.update(STORM_SUPERVISOR)
    svc = Service(rig, tmp_path / "service.log")
    try:
        svc.wait_ready()
        load = Load(rig, rng, gap=KILLS * KILL_EVERY / TASKS)
        killer = Killer(rig, svc, load, random.Random(rng.random()))
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
        _settled(rig, load.turns, timeout=size(90, 300))

        assert svc.stop() == 0, svc.output()[-3000:]
        deadline = time.monotonic() + 40  # on-demand workers leave once the queue is empty
        while processes_of(rig) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = kill_leftovers(rig)
    finally:
        svc.stop()
        kill_leftovers(rig)
    assert left == [], f"processes left behind: {left}"

    tasks = {t.sequence_id for t in load.turns}
    assert len(load.turns) == TASKS
    assert rig.counts() == {"pending": 0, "outbox": 0, "sent": TASKS, "suppressed": 0, "dead": 0}
    sent = collections.Counter(m.get("sequence_id") for m in standin.messages(rig.topic))
    assert set(sent) == tasks  # every task reached the server, nothing foreign did
    duplicates = sorted(sid for sid, n in sent.items() if n > 1)
    assert rig.partial_records() == []
    hooks_killed = sum(1 for h in load.hooks if h.rc == -signal.SIGKILL)
    print(f"kills {dict(killer.kills)}, storm {storm_seconds:.1f}s, duplicates {len(duplicates)}")
    record(
        "kill_storm",
        seed=seed,
        tasks=TASKS,
        kills=sum(killer.kills.values()),
        kills_by_target=dict(killer.kills),
        hooks_killed=hooks_killed,
        tasks_without_hook=TASKS - len(load.hooks),
        storm_seconds=round(storm_seconds, 1),
        delivered=TASKS,
        lost=0,
        duplicates=sum(sent[s] - 1 for s in duplicates),
        duplicate_sequence_ids=duplicates,
        orphans=0,
    )
