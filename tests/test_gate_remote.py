"""The gate never reads a remote watch root from the delivery process: a hung share delays nothing local.

Remote candidates (source ``remote-scanner``, or paths under a ``watch_roots`` entry) are evaluated
by one probe worker process per root. The hangs here are real: a FUSE mount that answers INIT and
then nothing (``HungMount`` from the remote-scanner tests; "read" mode leaves the prober in an
unkillable kernel wait, like a dead hard NFS mount) and, without root, a FIFO named like a rollout
(``open()`` blocks until a writer comes).

Here: which candidates count as remote, the offline verdict, a healthy root and off mode. The hangs
are in test_gate_remote_hangs.py, a hung share under a real delivery role in
test_gate_remote_delivery.py.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from donebell.shared.config.model import Settings, WatchRoot
from donebell.shared.statedir import StateDir
from donebell.workers.gate import run_gate_pass
from donebell.workers.gate.remote import configured_roots, offline_verdict, remote_root
from fixtures.gate.kit import (
    PARENT_THREAD,
    PARENT_TURN,
    SIMPLE_THREAD,
    SIMPLE_TURN,
    CodexWorld,
    fast_settings,
    lines_of,
)
from support.remote_gate_kit import (
    last_record,
    probe_workers,
    remote_rollout,
    submit_remote_candidate,
)

#: Each test starts without probe workers; its own are killed afterwards (after any mount abort).
pytestmark = pytest.mark.usefixtures("probe_pools")


# --- identification and the offline verdict (no file access) ---------------------------------


def test_remote_candidates_are_recognized_by_source_or_by_a_path_under_a_watch_root() -> None:
    """Source remote-scanner, or a transcript/codex/sqlite path under a root or its sqlite folder, is
    remote (lexically: a sibling folder sharing the prefix is not); everything else is local."""
    settings = Settings.model_validate(
        {
            "topic": "t",
            "watch_roots": ["/mnt/wsl", WatchRoot(path="/srv/share/codex", sqlite_path="/srv/db/state_5.sqlite")],
        }
    )
    roots = configured_roots(settings)
    assert remote_root({"transcript_path": "/mnt/wsl/sessions/r.jsonl"}, roots) == "/mnt/wsl"
    assert remote_root({"sqlite_home": "/srv/db"}, roots) == "/srv/share/codex"
    assert remote_root({"codex_home": "/mnt/wsl2/.codex", "transcript_path": "/mnt/wslx/r.jsonl"}, roots) is None
    assert remote_root({"source": "codex-stop", "codex_home": "/home/u/.codex"}, roots) is None
    # A root removed from the config: its remote-scanner records stay remote, keyed by their home.
    gone = {"source": "remote-scanner", "sources": ["remote-scanner"], "codex_home": "/mnt/old"}
    assert remote_root(gone, roots) == "/mnt/old"


@pytest.mark.parametrize(
    ("mode", "at", "expected"),
    [("strict", 1.0, ("wait", "remote-unresponsive")), ("strict", 10.0, ("suppress", "unverifiable")),
     ("balanced", 10.0, ("promote", "balanced"))],
)  # fmt: skip
def test_unanswered_remote_evidence_follows_the_probe_grace(mode: str, at: float, expected: tuple[str, str]) -> None:
    """A root that does not answer is unknown evidence: it waits within idle_probe_grace_seconds, then
    strict suppresses it as unverifiable and balanced assumes it, as for an unreadable local rollout."""
    settings = fast_settings(idle_detection_mode=mode, idle_probe_grace_seconds=5.0)
    record = {"key": "k", "provider": "codex", "created_at": 1000.0, "thread_id": "t", "probe": {}}
    verdict = offline_verdict(record, settings, 1000.0 + at, "remote-unresponsive", "no answer", root="/mnt/x")
    assert (verdict.action, verdict.reason) == expected
    if verdict.action == "wait":
        assert verdict.wait_kind == "unknown" and verdict.detail is not None
        assert verdict.detail["grace_deadline"] == 1005.0 and verdict.detail["root"] == "/mnt/x"
    subagent = {**record, "classification": "subagent"}
    assert offline_verdict(subagent, settings, 1001.0, "remote-unresponsive", "x").reason == "subagent"


def test_probe_worker_runs_without_pydantic(tmp_path: Path) -> None:
    """The probe worker imports the gate without pydantic or httpx (a small process, quick to start)."""
    import subprocess
    import sys

    code = (
        "import sys, donebell.workers.gate.remote_worker, donebell.workers.agents.codex.title;"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_settings', 'httpx')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True)
    assert out.stdout.strip() == "[]"


# --- a healthy remote root ----------------------------------------------------------------------


def test_healthy_remote_candidate_is_promoted_by_its_probe_worker_with_the_title(
    isolated_env: dict[str, Path], state: StateDir, tmp_path: Path
) -> None:
    """A readable root's candidate is judged in the root's worker within the pass, promoted with its
    root and thread title stored, and none of its paths is handed to the delivery's wake-up watch."""
    root = tmp_path / "share"
    world = CodexWorld(root, state)
    world.write_rollout(SIMPLE_THREAD, lines_of("simple-exec.jsonl"))
    world.add_thread(SIMPLE_THREAD)
    world.sql("state_5", "UPDATE threads SET title = 'Fix the parser' WHERE id = ?", (SIMPLE_THREAD,))
    key = submit_remote_candidate(state, root, SIMPLE_THREAD, SIMPLE_TURN, world.rollout_path(SIMPLE_THREAD))
    settings = fast_settings(watch_roots=[str(root)], include_thread_title=True)
    result = run_gate_pass(state, settings, time.time())
    deadline = time.monotonic() + 10
    while state.locate(key) == "pending":  # a loaded machine may start the worker after the window
        assert time.monotonic() < deadline
        time.sleep(0.05)
        result = run_gate_pass(state, settings, time.time())
    out = last_record(state, key)
    assert out["folder"] == "outbox" and out["record"]["verdict"] == "idle"
    assert out["record"]["remote_root"] == str(root) and out["record"]["thread_title"] == "Fix the parser"
    assert out["record"]["stats"] == {"duration_ms": 1444, "total_tokens": 110}
    [health] = result.remote
    assert (health["root"], health["answered"], health["workers_started"]) == (str(root), 1, 1)
    assert not [p for p in result.watch_paths if str(p).startswith(str(root))]


def test_off_mode_promotes_a_remote_candidate_without_probing_its_root(
    isolated_env: dict[str, Path], state: StateDir, tmp_path: Path
) -> None:
    """idle_detection_mode off reads no evidence: a remote candidate on a blocking path is promoted at
    once, marked with its root, and no probe worker is started."""
    root = tmp_path / "fifo-root"
    rollout = remote_rollout(root, PARENT_THREAD)
    rollout.parent.mkdir(parents=True)
    os.mkfifo(rollout)
    key = submit_remote_candidate(state, root, PARENT_THREAD, PARENT_TURN, rollout)
    result = run_gate_pass(state, fast_settings(watch_roots=[str(root)], idle_detection_mode="off"), time.time())
    out = last_record(state, key)
    assert out["folder"] == "outbox" and out["record"]["verdict"] == "off"
    assert out["record"]["remote_root"] == str(root) and result.remote == [] and not probe_workers(root)


def test_settings_sent_to_a_probe_worker_carry_no_secret() -> None:
    """The settings piped to a probe worker omit the token and password (and never appear in argv)."""
    from donebell.workers.gate.remote import settings_wire

    token, password = "tk_" + "a1" * 15, "hunter2-pw"
    wire = settings_wire(Settings.model_validate({"topic": "t", "token": token, "username": "u", "password": password}))
    text = json.dumps(wire)
    assert token not in text and password not in text and "token" not in wire and "password" not in wire
    assert wire["username"] == "u" and wire["idle_detection_mode"] == "strict"
