"""`config set` validates a value as `config check` would, says when a change needs a restart (and
`status` then says "restart to apply"), says `changed` for a rotated secret, accepts the keys kept
for compatibility; `config show` without a config says to run `config init`. Real `donebell`
processes on a real config file (issue 24, item 7)."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from donebell.shared.statedir import StateDir
from donebell.shared.states import ROLE_NAMES
from donebell.supervisor.commands.config_restart import RESTART_KEYS, fingerprints

REPO = Path(__file__).resolve().parents[1]


def _cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "donebell.supervisor.cli", *args]
    return subprocess.run(cmd, capture_output=True, text=True, input=stdin, timeout=60)


@pytest.fixture()
def cfg(isolated_env: dict[str, Path]) -> Path:
    path = isolated_env["config"]
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"topic": "donebell-mine", "server": "http://127.0.0.1:9"}))
    os.chmod(path, 0o600)
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("config", "set", "topic", ""), "topic: no topic set: notifications cannot be delivered"),
        (("config", "unset", "topic"), "topic: no topic set"),
        (("config", "set", "wake_enabled", "true"), "wake_enabled: no wake_topic configured"),
        (("config", "set", "topic", "has spaces"), "topic: must match [-_A-Za-z0-9]{1,64}"),
        (("config", "set", "quiet_hours", "25:00-07:00"), "quiet_hours: must be 'HH:MM-HH:MM'"),
        (  # issue 34 item 9: the JSON escape puts a NUL into the prompt the agent is started with
            ("config", "set", "wake_actions", '[{"label": "Go", "prompt": "go\\u0000on"}]'),
            'wake_actions: a "prompt" must not contain a NUL byte',
        ),
    ],
)
def test_set_refuses_what_config_check_would_fail(cfg: Path, args: tuple[str, ...], message: str) -> None:
    before = cfg.read_bytes()
    res = _cli(*args)
    assert res.returncode == 2 and message in res.stderr, res.stderr
    assert "Value error" not in res.stderr  # pydantic's wording never reaches the user
    assert cfg.read_bytes() == before
    assert _cli("config", "check").returncode == 0


def test_a_problem_already_in_the_file_does_not_block_other_keys(cfg: Path) -> None:
    cfg.write_text(json.dumps({"topic": ""}))
    res = _cli("config", "set", "priority", "4")
    assert res.returncode == 0, res.stderr
    assert _cli("config", "set", "topic", "donebell-fixed").returncode == 0
    assert _cli("config", "check").returncode == 0


def test_rotating_a_secret_says_changed(cfg: Path) -> None:
    assert _cli("config", "set", "token", "-", stdin="tk_firstfirstfirst1\n").returncode == 0
    same = _cli("config", "set", "token", "-", stdin="tk_firstfirstfirst1\n")
    assert "token: ********** (unchanged)" in same.stdout, same.stdout
    rotated = _cli("config", "set", "token", "-", stdin="tk_secondsecondsec2\n")
    assert rotated.returncode == 0, rotated.stderr
    assert "(unchanged)" not in rotated.stdout and "token: ********** (changed)" in rotated.stdout
    assert "tk_second" not in rotated.stdout + rotated.stderr


def test_a_key_read_only_at_start_says_so(cfg: Path) -> None:
    res = _cli("config", "set", "watch_roots", "/srv/other/.codex")
    assert res.returncode == 0, res.stderr
    assert "watch_roots takes effect after a restart" in res.stdout
    res = _cli("config", "set", "priority", "4")  # delivery re-reads the file before every pass
    assert res.returncode == 0 and "restart" not in res.stdout
    res = _cli("config", "set", "timeout_seconds", "20")  # read at start by the wake role only, which is off
    assert res.returncode == 0 and "restart" not in res.stdout
    res = _cli("config", "set", "wake_ticket_ttl_seconds", "600")  # likewise
    assert res.returncode == 0 and "restart" not in res.stdout


def test_status_says_restart_to_apply_instead_of_contradicting_the_file(cfg: Path) -> None:
    """The supervisor started with wake off; the file now enables it: status says why wake is still off."""
    started_with = json.loads(cfg.read_text())
    state = StateDir(Path(os.environ["DONEBELL_STATE_DIR"])).ensure()
    from donebell.shared.process.liveness import current_process_identity
    from donebell.shared.statedir import now

    roles = {name: {"state": "ready", "enabled": True, "pid": None} for name in ROLE_NAMES}
    roles["wake"] = {"state": "disabled", "enabled": False, "reason": "wake_enabled is false"}
    state.write_health(
        "supervisor",
        {
            "role": "supervisor",
            **current_process_identity(),  # this test process stands in for a live supervisor
            "state": "running",
            "started_at": now(),
            "heartbeat_at": now(),
            "heartbeat_seconds": 30,
            "roles": roles,
            "config_at_start": fingerprints(started_with),
        },
    )
    quiet = json.loads(_cli("status", "--json").stdout)
    assert quiet["restart_to_apply"] == []
    cfg.write_text(json.dumps({**started_with, "wake_enabled": True, "wake_allow_unauthenticated": True}))
    doc = json.loads(_cli("status", "--json").stdout)
    assert doc["restart_to_apply"] == ["wake_allow_unauthenticated", "wake_enabled"]
    assert "restart to apply" in doc["roles"]["wake"]["detail"]
    table = _cli("status").stdout
    assert "! restart to apply: wake_allow_unauthenticated, wake_enabled changed in the config file" in table
    assert "systemctl --user restart donebell" in table


def test_show_without_a_config_says_to_run_init(isolated_env: dict[str, Path]) -> None:
    res = _cli("config", "show")
    assert res.returncode == 1 and "run `donebell config init`" in res.stderr
    assert "subscribe_url" not in res.stdout
    assert not isolated_env["config"].exists()


def test_a_key_kept_for_compatibility_is_accepted(cfg: Path) -> None:
    res = _cli("config", "set", "suppress_subagents", "true")
    assert res.returncode == 0, res.stderr
    assert "accepted for compatibility" in res.stdout
    assert json.loads(cfg.read_text())["suppress_subagents"] is True
    assert _cli("config", "check").returncode == 0
    assert _cli("config", "unset", "suppress_subagents").returncode == 0
    assert "suppress_subagents" not in json.loads(cfg.read_text())


def _settings_read_in(folder: Path) -> set[str]:
    names = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute):
                if node.value.attr == "settings":
                    names.add(node.attr)
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.value.id == "settings":
                    names.add(node.attr)
    return names


def test_the_restart_table_names_every_key_read_only_at_start() -> None:
    """The scanners and the wake role read their settings once: every key they read is in the table."""
    from donebell.shared.config import model

    read = _settings_read_in(REPO / "workers" / "scanners") | _settings_read_in(REPO / "workers" / "wake")
    read &= set(model.KNOWN_KEYS)
    assert len(read) > 10  # the walk found the reads
    assert read - set(RESTART_KEYS) == set()
    preflight = (REPO / "supervisor" / "doctor" / "preflight.py").read_text(encoding="utf-8")
    decided = set(re.findall(r"settings\.(\w+)", preflight)) & set(model.KNOWN_KEYS)
    assert {"watch_roots", "wake_enabled"} <= decided <= set(RESTART_KEYS)  # the roles the supervisor starts


def test_a_real_supervisor_publishes_its_start_and_status_says_restart_to_apply(
    isolated_env: dict[str, Path], tmp_path: Path
) -> None:
    """The real `donebell run` (no watch roots: remote-scanner disabled); `config set watch_roots`
    then says it needs a restart, and status says "restart to apply" instead of "no watch_roots"."""
    from support.supervisor_proc import harness
    from support.waiting import wait_for

    with harness(isolated_env, tmp_path, {"watch_roots": []}) as h:
        h.start(DONEBELL_SUPERVISOR_ROLES="maintenance")
        wait_for(lambda: h.supervisor_json().get("config_at_start"), what="config_at_start published")
        assert json.loads(_cli("status", "--json").stdout)["restart_to_apply"] == []
        remote = tmp_path / "remote-codex"
        res = _cli("config", "set", "watch_roots", str(remote))
        assert res.returncode == 0 and "watch_roots takes effect after a restart" in res.stdout, res.stdout
        doc = json.loads(_cli("status", "--json").stdout)
        assert doc["restart_to_apply"] == ["watch_roots"]
        assert "restart to apply" in doc["roles"]["remote-scanner"]["detail"], doc["roles"]["remote-scanner"]


def test_a_bad_file_value_is_refused_in_our_words_everywhere(cfg: Path) -> None:
    """`config check`, `config show` and doctor name the key and the rule, never pydantic's "Value error, "."""
    cfg.write_text(json.dumps({"topic": "has spaces", "quiet_hours": "25:00-07:00"}))
    for args in (("config", "check"), ("config", "show"), ("doctor",)):
        res = _cli(*args)
        assert res.returncode == 1, (args, res.stdout, res.stderr)
        said = res.stdout + res.stderr
        assert "topic: must match [-_A-Za-z0-9]{1,64}" in said and "Value error" not in said, (args, said)


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        ("go\u0000on", 'a "prompt" must not contain a NUL byte'),
        ("p" * (128 << 10), 'a "prompt" must be at most 131071 bytes'),
    ],
    ids=["nul", "over-128-KiB"],
)
def test_config_check_refuses_a_prompt_no_agent_can_be_started_with(cfg: Path, prompt: str, message: str) -> None:
    """Such a prompt passed `config check`, then the wake role failed on it every 5 s (issue 34 item 9)."""
    cfg.write_text(json.dumps({"topic": "donebell-mine", "wake_actions": [{"label": "Go", "prompt": prompt}]}))
    res = _cli("config", "check")
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert f"wake_actions: {message}" in res.stdout + res.stderr
