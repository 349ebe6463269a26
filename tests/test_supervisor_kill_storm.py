"""A SIGKILL storm on a working role never makes it fatal (issue 26 item 14).

Five fast exits within 300 s put a role into ``fatal`` for 300 s, so one kill-storm run delivered
a task more than 90 s late. A role killed while it was making progress (its health file counted a
pass) is not flapping. Here: ``donebell run`` with the supervisor's default intervals, the real
delivery role and the ntfy stand-in; the delivery role is SIGKILLed 20 times within a minute,
each time once it has done work, while tasks keep arriving: every task is delivered within 10 s
of the last kill, and the role is never fatal.
"""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from donebell.supervisor.policy import Intervals
from support.delivery_kit import outbox_record
from support.ntfy_standin import NtfyStandin
from support.supervisor_proc import FAST, Harness, harness
from support.waiting import wait_for

KILLS = 20
#: The supervisor's own defaults (the harness's fast test intervals would hide the bug).
DEFAULTS = {
    f"DONEBELL_SUPERVISOR_{f.name.upper()}": str(getattr(Intervals(), f.name)) for f in dataclasses.fields(Intervals)
}


@pytest.fixture()
def h(isolated_env: dict[str, Path], tmp_path: Path, srv: NtfyStandin) -> Iterator[Harness]:
    with harness(isolated_env, tmp_path, {"server": srv.url, "watch_roots": []}) as h:
        yield h


def test_twenty_sigkills_of_the_working_delivery_role_delay_no_task_past_ten_seconds(
    h: Harness, srv: NtfyStandin
) -> None:
    assert set(FAST) <= set(DEFAULTS)
    # supervisor.json rewritten every 0.5 s (not 10) so that the test reads the current entry;
    # the heartbeat plays no part in restart decisions.
    h.start(**{**DEFAULTS, "DONEBELL_SUPERVISOR_HEARTBEAT": "0.5"}, DONEBELL_SUPERVISOR_ROLES="delivery")
    rng = random.Random(26014)
    keys: list[str] = []
    killed: list[int] = []
    started = time.monotonic()
    for _ in range(KILLS):
        pid = wait_for(lambda: (p := h.working_pid("delivery")) and p not in killed and p, 15, "a working delivery")
        for _ in range(2):  # tasks keep arriving during the storm
            record = outbox_record()
            assert h.state.create("outbox", record)
            keys.append(record["key"])
        time.sleep(rng.uniform(0.0, 0.8))  # somewhere in its work: between passes or in one
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)
        entry = h.role_entry("delivery")
        assert not entry.get("fatal"), entry
    last_kill = time.monotonic()
    for _ in range(2):  # tasks that arrive while the role is dead: its restart must send them
        record = outbox_record()
        assert h.state.create("outbox", record)
        keys.append(record["key"])
    assert last_kill - started < 60.0, f"{KILLS} kills took {last_kill - started:.1f}s"
    wait_for(lambda: all(h.state.exists("sent", k) for k in keys), 10, "every task delivered after the storm")
    drained = time.monotonic() - last_kill
    assert drained <= 10.0
    print(f"{KILLS} kills in {last_kill - started:.1f}s; {len(keys)} tasks drained {drained:.2f}s after the last kill")
    entry = wait_for(lambda: (e := h.role_entry("delivery")).get("restarts", 0) >= KILLS and e, 5, "restarts")
    assert not entry.get("fatal") and entry["restarts"] == KILLS, entry
    assert {m["sequence_id"] for m in srv.messages()} >= {h.state.read("sent", k)["sequence_id"] for k in keys}  # type: ignore[index]
