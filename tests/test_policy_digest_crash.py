"""Crash walk of a burst digest: the delivery worker dies at every counted filesystem operation
(``DONEBELL_CRASH_AT=N``) while it forms, sends and receipts one digest; a clean run follows.

Whatever N: every task ends with a ``sent/`` receipt naming the digest, the server only ever saw
the digest (the same ``sequence_id`` each time: a repeat is one updated notification in ntfy),
never a task on its own, and nothing is left in ``outbox/``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from donebell.workers.delivery.policies.digest import digest_key
from support.ntfy_standin import NtfyStandin
from support.policy_kit import pending, policy_env, wire_bodies

CRASH_EXIT = 86
MAX_POINTS = 200


def _worker(env_vars: dict[str, str]) -> int:
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", "worker", "delivery", "--once"]
    return subprocess.run(cmd, env=env_vars, capture_output=True, timeout=60).returncode


def test_digest_crash_at_every_point_repeats_the_same_digest(srv: NtfyStandin, tmp_path: Path) -> None:
    reached_end = False
    repeats = 0
    for point in range(1, MAX_POINTS):
        srv.reset()
        env = policy_env(tmp_path / f"p{point}", srv.url, burst_digest_threshold=3)
        keys = [pending(env, cwd=f"/w/p{i}")["key"] for i in range(3)]
        crashed = _worker({**env.environ(), "DONEBELL_CRASH_AT": str(point)})
        if crashed == 0:
            reached_end = True
        else:
            assert crashed == CRASH_EXIT
            assert _worker(env.environ()) == 0
        digest = digest_key(keys)
        bodies = wire_bodies(srv)
        assert bodies, f"crash at {point}: nothing sent"
        assert {b["sequence_id"] for b in bodies} == {f"digest-{digest[:32]}"}, f"crash at {point}"
        repeats += len(bodies) - 1
        for key in keys:
            receipt = env.state.read("sent", key)
            assert receipt is not None and receipt["digest"] == digest, f"crash at {point}: {key[:8]}"
        assert env.state.count("outbox") == 0 and env.state.count("pending") == 0
        if reached_end:
            break
    assert reached_end, "the worker never finished without reaching the crash point"
    assert repeats >= 1  # the window between the POST and the first member receipt was walked
