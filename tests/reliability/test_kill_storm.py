"""Kill storm: ``donebell run`` with its real roles under SIGKILL while root tasks keep arriving.

The machinery is in ``storm.py``: tasks arrive (20 % without a hook), a killer SIGKILLs random
roles, the supervisor (restarted at once) and hooks in flight. After the storm: every task
delivered, the counts match, duplicates only ever repeat a task's own ``sequence_id``, SIGTERM
stops the service (exit 0) and no process of the installation is left.

Sizes: ``DONEBELL_FULL_STORMS=1`` runs 500 tasks and 200 kills; the default is 60 and 25.
``DONEBELL_STORM_SEED`` replays a run (the seed is printed).
"""

from __future__ import annotations

import collections
import signal
from collections.abc import Callable
from pathlib import Path

from support.figures import record
from support.ntfy_standin import NtfyStandin
from support.rig import Rig
from support.runner import size
from support.storm import run_storm, storm_seed

TASKS = size(60, 500)
KILLS = size(25, 200)
#: Seconds between two kills; tasks arrive over the same span.
KILL_EVERY = size(0.3, 0.4)


def test_kill_storm_loses_nothing_and_leaves_no_process_behind(
    make_rig: Callable[..., Rig], standin: NtfyStandin, tmp_path: Path
) -> None:
    """Random SIGKILLs of roles, the supervisor and hooks while tasks arrive: afterwards every task is
    delivered, sent receipts and server messages match the tasks one to one (duplicates repeat the
    task's own sequence_id), SIGTERM stops the service with exit 0 and nothing is left running."""
    seed = storm_seed()
    print(f"kill storm: seed {seed}, {TASKS} tasks, {KILLS} kills")
    rig = make_rig(idle_probe_grace_seconds=10.0)

    out = run_storm(
        rig,
        tmp_path / "service.log",
        tasks=TASKS,
        kills=KILLS,
        every=KILL_EVERY,
        seed=seed,
        settle_timeout=size(90, 300),
    )

    assert out.stop_rc == 0, out.service_output[-3000:]
    assert out.leftovers == [], f"processes left behind: {out.leftovers}"
    assert len(out.turns) == TASKS
    assert rig.counts() == {"pending": 0, "outbox": 0, "sent": TASKS, "suppressed": 0, "dead": 0}
    sent = collections.Counter(str(m.get("sequence_id")) for m in standin.messages(rig.topic))
    assert set(sent) == {t.sequence_id for t in out.turns}  # every task reached the server, nothing foreign
    duplicates = sorted(sid for sid, n in sent.items() if n > 1)
    assert rig.partial_records() == []
    print(f"kills {dict(out.kills)}, storm {out.storm_seconds:.1f}s, duplicates {len(duplicates)}")
    record(
        "kill_storm",
        seed=seed,
        tasks=TASKS,
        kills=sum(out.kills.values()),
        kills_by_target=dict(out.kills),
        hooks_killed=sum(1 for h in out.hooks if h.rc == -signal.SIGKILL),
        tasks_without_hook=TASKS - len(out.hooks),
        storm_seconds=round(out.storm_seconds, 1),
        settle_seconds=round(out.settle_seconds, 1),
        delivered=TASKS,
        lost=0,
        duplicates=sum(sent[s] - 1 for s in duplicates),
        duplicate_sequence_ids=duplicates,
        orphans=0,
    )
