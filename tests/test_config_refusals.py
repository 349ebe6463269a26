"""Bad configuration is refused with its reason before anything runs (issue 15, item 9).

Through the real commands: ``config check``, ``donebell test``, a delivery worker, ``doctor
--json`` and a hook, each in its own process with a real config file and state directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.delivery_kit import TOPIC, Env
from support.ntfy_standin import NtfyStandin

pytestmark = pytest.mark.usefixtures("no_outside_config")

STOP_PAYLOAD = json.dumps(
    {"hook_event_name": "Stop", "session_id": "019a22be-06d2-7621-bea7-5b13dfa14a99", "turn_id": "t-1"}
)


@pytest.mark.parametrize(
    ("server", "reason"),
    [
        ("http://[::1", "Invalid IPv6 URL"),
        ("http://127.0.0.1:99999", "Port out of range"),
        ("https://ntfy.example\n", "trailing newline"),
    ],
    ids=["unclosed-ipv6", "port-99999", "trailing-newline"],
)
def test_a_broken_server_url_is_refused_by_every_command(tmp_path: Path, server: str, reason: str) -> None:
    """`config check` says why (it said ok), `donebell test` exits 78 without a traceback (it printed
    one), a delivery worker refuses to start (its passes died every 5 s) and doctor fails the config."""
    env = Env(tmp_path, server=server)
    env.queue()
    check = env.run_cli("config", "check")
    assert check.returncode == 1 and "server" in check.stderr and reason in check.stderr, check
    test = env.run_cli("test")
    assert test.returncode == 78 and reason in test.stderr, test
    assert "Traceback" not in test.stderr + test.stdout
    worker = env.run_cli("worker", "delivery", "--once")
    assert worker.returncode == 78 and reason in worker.stderr, worker
    assert "Traceback" not in worker.stderr
    doctor = json.loads(env.run_cli("doctor", "--json").stdout)
    [config_check] = [c for c in doctor["checks"] if c["name"] == "config"]
    assert config_check["status"] == "fail" and reason in config_check["summary"]
    assert env.state.count("outbox") == 1  # the queued record waits, untouched, for a fixed config


def _donebell(
    args: list[str], environ: dict[str, str], cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The real CLI in ``cwd`` (the agent's project folder) with ``environ``."""
    return subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=environ,
        cwd=cwd,
        timeout=30,
    )


def test_a_relative_state_dir_is_refused_and_creates_nothing_in_the_cwd(tmp_path: Path) -> None:
    """A relative DONEBELL_STATE_DIR made hooks create state in the agent's working directory.
    Now the hook still answers `{}` and exits 0 (reason on stderr), and the commands exit 78."""
    env = Env(tmp_path / "home")
    project = tmp_path / "project"
    project.mkdir()
    environ = {**env.environ(), "DONEBELL_STATE_DIR": "state"}
    hook = _donebell(["hook", "codex-stop"], environ, project, stdin=STOP_PAYLOAD)
    assert hook.returncode == 0 and hook.stdout == "{}\n"
    assert "DONEBELL_STATE_DIR must be an absolute path" in hook.stderr
    for args in (["worker", "delivery", "--once"], ["status"], ["test"], ["doctor"]):
        run = _donebell(args, environ, project)
        assert run.returncode == 78, (args, run)
        assert "DONEBELL_STATE_DIR must be an absolute path" in run.stderr and "Traceback" not in run.stderr
    assert list(project.iterdir()) == []


def test_a_relative_config_path_is_refused_and_hooks_carry_on(tmp_path: Path) -> None:
    """A relative DONEBELL_CONFIG would read whatever config.json the agent's project holds."""
    env = Env(tmp_path / "home")
    project = tmp_path / "project"
    project.mkdir()
    (project / "config.json").write_text(json.dumps({"topic": "planted", "server": "http://127.0.0.1:9"}))
    environ = {**env.environ(), "DONEBELL_CONFIG": "config.json"}
    check = _donebell(["config", "check"], environ, project)
    assert check.returncode == 1 and "DONEBELL_CONFIG must be an absolute path" in check.stderr
    hook = _donebell(["hook", "codex-stop"], environ, project, stdin=STOP_PAYLOAD)
    assert hook.returncode == 0 and hook.stdout == "{}\n"
    assert env.state.count("pending") == 1  # the evidence is kept; the worker reports the config loudly


def test_a_token_from_the_environment_with_a_public_config_file_is_fine(tmp_path: Path) -> None:
    """DONEBELL_TOKEN with a 0644 config that holds no secret was refused ("readable by others");
    the file holds nothing secret, so `config check` is ok and `donebell test` delivers with the token."""
    token = "tk_envtokenabcdefghijklmnopqrs01"
    with NtfyStandin(
        tokens={token: "phil"},
        users={"phil": "pw-unused-1"},
        default_access="deny-all",
        access={"phil": {TOPIC: "read-write"}},
    ) as srv:
        env = Env(tmp_path, server=srv.url)
        os.chmod(env.config_path, 0o644)
        environ = {**env.environ(), "DONEBELL_TOKEN": token}
        check = subprocess.run(
            [sys.executable, "-m", "donebell.supervisor.cli", "config", "check"],
            capture_output=True,
            text=True,
            env=environ,
            timeout=30,
        )
        assert check.returncode == 0, check.stderr
        test = subprocess.run(
            [sys.executable, "-m", "donebell.supervisor.cli", "test", "--json"],
            capture_output=True,
            text=True,
            env=environ,
            timeout=30,
        )
        assert test.returncode == 0, test.stdout + test.stderr
        assert json.loads(test.stdout)["http_status"] == 200 and len(srv.messages()) == 1
        # the same file holding the token itself is still refused
        env.update_config(token=token)
        os.chmod(env.config_path, 0o644)
        refused = env.run_cli("config", "check")
        assert refused.returncode == 1 and "chmod 600" in refused.stderr and token not in refused.stderr


def test_hooks_carry_on_and_the_kicked_worker_reports_a_broken_config(tmp_path: Path) -> None:
    """Hooks read only their own keys: a broken server or token does not touch them (exit 0, `{}`, the
    evidence kept); the on-demand worker they start refuses once, in notify.log and its health, and
    `donebell run` refuses to start with the same reason."""
    env = Env(tmp_path, server="http://127.0.0.1:99999", token="tk_x\n")
    hook = subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", "hook", "codex-stop"],
        input=STOP_PAYLOAD,
        capture_output=True,
        text=True,
        env=env.environ(),
        timeout=30,
    )
    assert hook.returncode == 0 and hook.stdout == "{}\n" and hook.stderr == ""
    assert env.state.count("pending") == 1
    deadline = time.monotonic() + 20
    while (env.state.read_health("delivery") or {}).get("state") != "error":
        assert time.monotonic() < deadline, env.state.read_health("delivery")
        time.sleep(0.1)
    assert "Port out of range" in str(env.state.read_health("delivery"))
    log = (env.state.root / "notify.log").read_text()
    assert log.count('"config error"') == 1 and "Traceback" not in log and "tk_x" not in log
    run = env.run_cli("run")
    assert run.returncode == 78 and "Port out of range" in run.stderr
