"""A health file is input like any other: valid JSON of another shape never crashes a reader (issue 26 item 6).

``status`` and ``status --json`` ended in AttributeError or RecursionError on a health file that
was an array, a string, a 200,000-deep nesting or a ``roles`` entry that is not an object, and
``donebell run`` exited with a traceback on such a ``supervisor.json`` (the turn never delivered)
or crashed after spawning on such a ``delivery.json`` (roles left without a supervisor). Real
processes, real files, the ntfy stand-in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from donebell.shared.health import alive
from donebell.shared.statedir import StateDir
from support.delivery_kit import Env, outbox_record
from support.ntfy_standin import NtfyStandin
from support.supervisor_proc import Harness, harness
from support.waiting import wait_for

#: Valid JSON that is not a health record; "deep" exhausts json's recursion (RecursionError).
BAD = {
    "array": "[1, 2]",
    "string": '"ready"',
    "deep": "[" * 200_000 + "]" * 200_000,
    "entry": json.dumps({"role": "supervisor", "pid": 0, "roles": {"delivery": "ready", "wake": [1]}}),
}


def _plant(state: StateDir, role: str, text: str) -> None:
    state.ensure()
    (state.root / "health" / f"{role}.json").write_text(text, encoding="utf-8")


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("role", ["supervisor", "delivery"])
@pytest.mark.parametrize("kind", sorted(BAD))
def test_status_reports_a_bad_health_file_instead_of_crashing(
    isolated_env: dict[str, Path], kind: str, role: str
) -> None:
    state = StateDir(isolated_env["state"])
    _plant(state, role, BAD[kind])
    env = dict(os.environ)
    text = _cli(env, "status")
    assert text.returncode == 3 and "Traceback" not in text.stderr, text  # 3: not running
    assert "bad health file" in text.stdout, text.stdout
    machine = _cli(env, "status", "--json")
    assert machine.returncode == 3 and "Traceback" not in machine.stderr, machine
    doc = json.loads(machine.stdout)
    if role == "supervisor":
        assert any("bad health file" in r for r in doc["reasons"]), doc["reasons"]
    else:
        assert "bad health file" in doc["roles"]["delivery"]["detail"], doc["roles"]["delivery"]
    assert (state.root / "health" / f"{role}.json").read_text(encoding="utf-8") == BAD[kind]  # status only reads


@pytest.fixture()
def h(isolated_env: dict[str, Path], tmp_path: Path, srv: NtfyStandin) -> Iterator[Harness]:
    with harness(isolated_env, tmp_path, {"server": srv.url, "watch_roots": []}) as h:
        yield h


def test_run_rewrites_bad_health_files_keeps_its_roles_and_delivers(h: Harness, srv: NtfyStandin) -> None:
    _plant(h.state, "supervisor", BAD["deep"])
    _plant(h.state, "delivery", BAD["array"])
    _plant(h.state, "local-scanner", BAD["entry"])
    _plant(h.state, "wake", BAD["string"])  # a disabled role never rewrites its own file
    sup = h.start()
    wait_for(lambda: h.working_pid("delivery") and h.working_pid("local-scanner"), 30, "roles working")
    assert sup.poll() is None, h.output()
    record = outbox_record()
    assert h.state.create("outbox", record)
    wait_for(lambda: h.state.read("sent", record["key"]) is not None, 30, "the record delivered")
    assert len(srv.messages()) == 1
    for role in ("supervisor", "delivery", "local-scanner"):
        checked = h.state.read_health_checked(role)
        assert checked[0] is not None and checked[1] is None and alive(checked[0]), (role, checked)
    assert not (h.state.root / "health" / "wake.json").exists()
    code, doc = h.status()
    assert code == 0 and not any("bad health file" in r for r in doc["reasons"]), doc["reasons"]
    assert "Traceback" not in h.output()
    assert "health/wake.json: bad health file" in h.output()


def test_a_too_deep_server_backoff_file_does_not_stop_delivery(tmp_path: Path, srv: NtfyStandin) -> None:
    """``health/server-backoff.json`` is read by every delivery pass: a nesting too deep for json
    made every pass fail (RecursionError), so nothing was ever sent."""
    env = Env(tmp_path, server=srv.url)
    (env.state.root / "health" / "server-backoff.json").write_text("[" * 30_000 + "]" * 30_000, encoding="utf-8")
    record = env.queue()
    result = env.run_cli("worker", "delivery", "--once")
    assert result.returncode == 0 and "RecursionError" not in result.stderr, result.stderr
    assert env.state.read("sent", record["key"]) is not None and len(srv.messages()) == 1


@pytest.mark.parametrize("kind", ["array", "string", "deep"])
def test_a_bad_lock_owner_file_is_no_owner(isolated_env: dict[str, Path], kind: str) -> None:
    state = StateDir(isolated_env["state"]).ensure()
    (state.root / "locks").mkdir(exist_ok=True)
    for role in ("supervisor", "delivery"):
        (state.root / "locks" / f"{role}.owner.json").write_text(BAD[kind], encoding="utf-8")
        assert state.lock_owner(role) is None
    result = _cli(dict(os.environ), "status", "--json")
    assert result.returncode == 3 and "Traceback" not in result.stderr, result.stderr
