"""``donebell install --copilot`` / ``uninstall --copilot`` and doctor's ``copilot_hooks`` on real
files: donebell's own hook file in ``$COPILOT_HOME/hooks/``, every other file byte for byte."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from donebell.shared.config.model import APPROVAL_WAIT_MAX
from donebell.supervisor.install.command import main_install, main_uninstall
from donebell.workers.agents.copilot.doctor import check_copilot
from donebell.workers.kit.install.managed import PERMISSION_HOOK_TIMEOUT, donebell_executable
from support.install_env import RecordingRunner, isolate
from test_approvals import APPROVALS

EXE = donebell_executable()
USER_HOOKS = b'{"version": 1, "hooks": {"agentStop": [{"type": "command", "bash": "echo mine"}]}}\n'


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    paths = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    copilot = tmp_path / "copilot-home"
    monkeypatch.setenv("COPILOT_HOME", str(copilot))
    return copilot


def install(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main_install(["--service", "none", *args], runner=RecordingRunner(), out=out)
    return code, out.getvalue()


def uninstall(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main_uninstall(["--service", "none", *args], runner=RecordingRunner(), out=out, stdin=io.StringIO())
    return code, out.getvalue()


def tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))}


def test_install_adds_its_own_file_and_uninstall_takes_it_back_byte_for_byte(home: Path) -> None:
    (home / "hooks").mkdir(parents=True)
    (home / "hooks" / "mine.json").write_bytes(USER_HOOKS)
    (home / "config.json").write_bytes(b'{"trustedFolders": ["/p"]}\n')
    before = tree(home)
    code, out = install("--copilot")
    assert code == 0, out
    doc = json.loads((home / "hooks" / "donebell.json").read_text())
    assert doc["version"] == 1
    assert {e: h[0]["bash"] for e, h in doc["hooks"].items()} == {
        e: f"{EXE} hook copilot {e}" for e in ("agentStop", "sessionEnd", "notification")
    }  # no permissionRequest hook without approvals: it would start a process per tool call
    assert (home / "hooks" / "mine.json").read_bytes() == USER_HOOKS
    again = tree(home)
    assert install("--copilot")[0] == 0 and tree(home) == again, "a second install changes nothing"
    code, out = uninstall("--copilot")
    assert code == 0, out
    assert tree(home) == before


def test_a_hooks_folder_install_created_goes_with_uninstall(home: Path) -> None:
    home.mkdir()
    assert install("--copilot")[0] == 0
    assert (home / "hooks" / "donebell.json").is_file()
    assert uninstall()[0] == 0  # a full uninstall unwires Copilot too
    assert tree(home) == {}


def test_install_without_flags_wires_copilot_when_its_home_exists(home: Path) -> None:
    home.mkdir()
    code, out = install()
    assert code == 0 and (home / "hooks" / "donebell.json").is_file(), out


def test_the_installed_hook_command_runs_and_exits_0(home: Path, tmp_path: Path) -> None:
    home.mkdir()
    assert install("--copilot")[0] == 0
    command = json.loads((home / "hooks" / "donebell.json").read_text())["hooks"]["agentStop"][0]["bash"]
    done = subprocess.run(command, shell=True, input=b"not json", capture_output=True, timeout=60, check=False)
    assert done.returncode == 0 and done.stdout == b""


def with_approvals(home: Path) -> None:
    """A config with approvals on (and the reply channel they need), written before install."""
    config = Path(os.environ["DONEBELL_CONFIG"])
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(json.dumps({"server": "https://ntfy.example", "topic": "t-approvals", **APPROVALS}))
    config.chmod(0o600)


def test_with_approvals_install_wires_the_permission_hook_past_the_longest_wait(home: Path) -> None:
    with_approvals(home)
    code, out = install("--copilot")
    assert code == 0, out
    doc = json.loads((home / "hooks" / "donebell.json").read_text())
    assert doc["hooks"]["permissionRequest"][0]["bash"] == f"{EXE} hook copilot permissionRequest"
    assert doc["hooks"]["permissionRequest"][0]["timeoutSec"] == PERMISSION_HOOK_TIMEOUT > APPROVAL_WAIT_MAX + 5


def test_doctor_names_each_problem_of_the_wiring(home: Path) -> None:
    assert check_copilot(None)[0].status == "skip"  # no Copilot here
    home.mkdir()
    assert check_copilot(None)[0].status == "warn"  # not wired
    assert install("--copilot")[0] == 0
    assert check_copilot(None)[0].status == "ok"
    missing = check_copilot(120.0)[0]  # approvals turned on since: the permission hook is missing
    assert missing.status == "warn" and "permissionRequest" in missing.summary
    with_approvals(home)
    assert install("--copilot")[0] == 0
    assert check_copilot(120.0)[0].status == "ok"
    path = home / "hooks" / "donebell.json"
    doc = json.loads(path.read_text())
    doc["hooks"]["permissionRequest"][0]["timeoutSec"] = 60
    path.write_text(json.dumps(doc))
    short = check_copilot(120.0)[0]
    assert short.status == "fail" and "fail open" in short.summary
    del doc["hooks"]["sessionEnd"]
    path.write_text(json.dumps(doc))
    assert check_copilot(None)[0].status == "warn"
    path.write_text("{not json")
    assert check_copilot(None)[0].status == "fail"


def test_doctor_reports_copilot_in_its_json(home: Path) -> None:
    home.mkdir()
    assert install("--copilot")[0] == 0
    res = subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", "doctor", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    names = {c["name"]: c["status"] for c in json.loads(res.stdout)["checks"]}
    assert names["copilot_hooks"] == "ok" and "copilot_version" in names
