"""kill -9 of real `donebell worker delivery` processes at random points while a queue drains.

Every record must end in sent/ (or dead/), none lost, and every duplicate the server received
must carry the record's own sequence_id. DONEBELL_KILL_RECORDS sets the queue size (100 by
default), DONEBELL_KILL_SEED the random seed (printed, so a failure can be replayed).
"""

from __future__ import annotations

import collections
import os
import random
import signal
import time
from pathlib import Path

import pytest
from support.delivery_kit import Env
from support.ntfy_standin import NtfyStandin

pytestmark = pytest.mark.usefixtures("no_outside_config")

RECORDS = int(os.environ.get("DONEBELL_KILL_RECORDS", "100"))
MAX_KILLS = 40
#: Each answer is held this long (the message is stored on arrival), so kills land mid-request too.
SERVER_DELAY = 0.04


def test_kill_9_at_random_points_loses_nothing(tmp_path: Path) -> None:
    """Across repeated SIGKILLs every record is delivered; duplicates only ever repeat a sequence_id."""
    seed = int(os.environ.get("DONEBELL_KILL_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    print(f"kill storm seed {seed}, {RECORDS} records")
    with NtfyStandin() as srv:
        env = Env(tmp_path, server=srv.url)
        records = [env.queue() for _ in range(RECORDS)]
        srv.faults.delay(SERVER_DELAY, count=RECORDS * 3)
        kills = mid_drain = 0
        while env.state.count("outbox") and kills < MAX_KILLS:
            before = len(srv.requests)
            proc = env.popen_cli("worker", "delivery")
            time.sleep(rng.uniform(0.35, 0.9))  # start-up is ~0.3 s; then anywhere in the drain
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            kills += 1
            if before < len(srv.requests) and env.state.count("outbox"):
                mid_drain += 1
        run = env.run_cli("worker", "delivery", "--once")  # the survivor finishes what is left
        assert run.returncode == 0, run.stderr

        where = collections.Counter(env.state.locate(r["key"]) for r in records)
        assert where == {"sent": RECORDS}, where  # none lost, none stuck, none dead-lettered
        assert env.state.count("outbox") == 0
        assert mid_drain >= 1, "no kill landed while the queue was draining"

        ours = {r["sequence_id"] for r in records}
        seen = collections.Counter(m.get("sequence_id") for m in srv.messages())
        assert set(seen) == ours  # every record reached the server; nothing foreign did
        duplicates = sum(n - 1 for n in seen.values())
        print(
            f"{kills} kills ({mid_drain} mid-drain), {len(srv.requests)} requests, "
            f"{duplicates} duplicates, all with their record's sequence_id"
        )
        # A duplicate needs a kill between the server storing a message and the receipt.
        assert duplicates <= kills
