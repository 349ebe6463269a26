"""An unusable state directory is said in one line by every command (issue 26 item 6b).

``DONEBELL_STATE_DIR`` naming a regular file, a path under a file, or a path where nothing can be
created: ``status`` and ``test`` ended in tracebacks (NotADirectoryError, UnsafeStateDir,
FileNotFoundError) and ``doctor`` said ``ok``, while ``run`` (exit 73) and ``hook`` said it in
one line. Real ``donebell`` processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("no_outside_config")

COMMANDS = [
    ["status"],
    ["status", "--json"],
    ["test"],
    ["explain", "019a22be-06d2-7621-bea7-5b13dfa14a99"],
    ["log"],
    ["worker", "delivery", "--once"],
    ["worker", "local-scanner", "--once"],
    ["run"],
    ["config", "rotate-wake-key"],
]
KINDS = ["a-file", "under-a-file", "uncreatable"]


def _state_dir(tmp_path: Path, kind: str) -> str:
    plain = tmp_path / "plain-file"
    plain.write_text("not a folder\n")
    if kind == "a-file":
        return str(plain)
    if kind == "under-a-file":
        return str(plain / "state")
    return "/proc/donebell-cannot-exist/state"  # nothing can be created under /proc, not even by root


def _run(tmp_path: Path, state_dir: str, args: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "config.json"
    if not cfg.exists():
        cfg.write_text(json.dumps({"server": "http://127.0.0.1:9", "topic": "donebell-unusable"}))
        os.chmod(cfg, 0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DONEBELL_")}
    env.update(DONEBELL_STATE_DIR=state_dir, DONEBELL_CONFIG=str(cfg), CODEX_HOME=str(tmp_path / "codex"))
    return subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )


@pytest.mark.parametrize("kind", KINDS)
def test_every_command_says_an_unusable_state_dir_in_one_line(tmp_path: Path, kind: str) -> None:
    state_dir = _state_dir(tmp_path, kind)
    for args in COMMANDS:
        result = _run(tmp_path, state_dir, args)
        assert "Traceback" not in result.stderr, (args, result.stderr)
        assert result.returncode == 73, (args, result)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and "cannot use the state directory" in lines[0] and state_dir in lines[0], args
    assert Path(tmp_path / "plain-file").read_text() == "not a folder\n"


@pytest.mark.parametrize("kind", KINDS)
def test_doctor_fails_its_state_dir_check(tmp_path: Path, kind: str) -> None:
    state_dir = _state_dir(tmp_path, kind)
    result = _run(tmp_path, state_dir, ["doctor", "--json"])
    assert "Traceback" not in result.stderr, result.stderr
    doc = json.loads(result.stdout)
    [check] = [c for c in doc["checks"] if c["name"] == "state_dir"]
    assert check["status"] == "fail" and state_dir in check["summary"], check
    assert result.returncode != 0
    text = _run(tmp_path, state_dir, ["doctor"])
    assert "Traceback" not in text.stderr and "FAIL    state_dir" in text.stdout, text.stdout


@pytest.mark.parametrize("kind", KINDS)
def test_a_hook_still_exits_0_with_its_documented_output(tmp_path: Path, kind: str) -> None:
    payload = json.dumps({"hook_event_name": "Stop", "session_id": "019a22be-06d2-7621-bea7-5b13dfa14a99"})
    result = _run(tmp_path, _state_dir(tmp_path, kind), ["hook", "codex-stop"], stdin=payload)
    assert result.returncode == 0 and result.stdout.strip() == "{}", result
    assert "Traceback" not in result.stderr
