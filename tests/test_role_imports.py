"""No role process imports pydantic (footprint target: <= 35 MiB RSS a process), nor what the
service's memory budget has no room for: ``zoneinfo`` (~0.7 MiB; only with quiet hours set); and no
role imports a module the supervisor did not preload before forking it (:func:`not_preloaded`).

Each role runs for real (``donebell worker <role> --once``, as the supervisor starts it) on a temp
state directory and config, doing its work: delivery sends a queued record over Bearer auth to a
stand-in ntfy and gates a pending candidate, the local scanner submits a finished turn, the remote
scanner runs its root's child, maintenance cleans up. The probe records every module the process
imported (``-X importtime`` plus ``sys.modules`` at exit), and the test fails if pydantic, its
core or pydantic-settings, or the pydantic ``donebell.shared.config.model`` is among them.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.keys import event_key
from donebell.shared.records import new_candidate
from donebell.shared.statedir import StateDir
from donebell.workers.role import ROLES as ROLE_MODULES
from support.codex_home import make_codex_home
from support.delivery_kit import outbox_record
from support.import_probe import PROBE, imported_modules
from support.ntfy_standin import NtfyStandin

TOKEN = "tk_roleimportsroleimportsroleimp"
TOPIC = "role-imports"
#: Top-level packages (and donebell modules) a role process must not load.
FORBIDDEN = (
    "pydantic",
    "pydantic_core",
    "pydantic_settings",
    "donebell.shared.config.model",
    "zoneinfo",
)
ROLES = ("delivery", "local-scanner", "remote-scanner", "maintenance")


@functools.cache
def preloaded() -> frozenset[str]:
    """What the supervisor imports before it forks every role (supervisor/role_fork.py)."""
    code = "import sys; from donebell.supervisor import role_fork, run; role_fork.preload(%r); print(*sys.modules)"
    done = subprocess.run([sys.executable, "-c", code % list(ROLE_MODULES)], capture_output=True, text=True, check=True)
    return frozenset(done.stdout.split())


def not_preloaded(role: str, loaded: set[str]) -> list[str]:
    """Modules a role's pass loaded that a forked role would import itself: each role then holds
    its own copy (ctypes, for one, was ~1.7 MiB in every role). The agents' gates are the exception
    by design: the delivery role imports one on the first candidate of its agent, which keeps an
    idle service smaller (docs/benchmarks.md)."""
    gates = role == "delivery"
    return sorted(
        m
        for m in loaded - preloaded()
        if not (gates and m.startswith("donebell.workers.agents.") and m != "donebell.workers.agents")
    )


def forbidden(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))


def run_probed(args: list[str], env: dict[str, str], tmp: Path) -> tuple[subprocess.CompletedProcess[bytes], set[str]]:
    """Run ``donebell <args>`` under the probe; every module it imported."""
    out = tmp / f"modules-{'-'.join(args[:2])}.txt"
    cmd = [sys.executable, "-X", "importtime", "-c", PROBE, str(out), *args]
    done = subprocess.run(cmd, capture_output=True, env=env, timeout=120)
    modules = imported_modules(done.stderr) | (set(out.read_text().split()) if out.exists() else set())
    return done, modules


@pytest.fixture()
def rig(tmp_path: Path) -> dict[str, Any]:
    """A state dir, a Codex home with a finished turn, a remote root, and a config using them all."""
    codex = make_codex_home(tmp_path / "codex", 3)
    remote = make_codex_home(tmp_path / "remote", 3)
    state = StateDir(tmp_path / "state").ensure()
    config = tmp_path / "config.json"
    env = {k: v for k, v in os.environ.items() if not k.lower().startswith("donebell_")}
    env.update(DONEBELL_STATE_DIR=str(state.root), DONEBELL_CONFIG=str(config), CODEX_HOME=str(codex))
    env.update(CLAUDE_CONFIG_DIR=str(tmp_path / "claude"), DONEBELL_MAINTENANCE_DELAY_SECONDS="0")
    env.pop("CODEX_SQLITE_HOME", None)
    return {"tmp": tmp_path, "state": state, "config": config, "env": env, "remote": remote}


def write_config(rig: dict[str, Any], server: str) -> None:
    data = {
        "server": server,
        "topic": TOPIC,
        "token": TOKEN,
        "watch_roots": [{"path": str(rig["remote"]), "origin": "lab"}],
        "idle_detection_mode": "balanced",
        "goal_poll_seconds": 5,  # a legacy key: accepted, unused
    }
    fd = os.open(rig["config"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f)


def health(state: StateDir, role: str) -> dict[str, Any]:
    return dict(json.loads((state.root / "health" / f"{role}.json").read_text("utf-8")))


@pytest.mark.parametrize("role", ROLES)
def test_role_process_imports_no_pydantic(rig: dict[str, Any], role: str) -> None:
    """`donebell worker <role> --once` does a real pass and never imports pydantic or pydantic-settings."""
    state: StateDir = rig["state"]
    with NtfyStandin(
        tokens={TOKEN: "phil"}, users={"phil": "pw"}, default_access="deny-all", access={"phil": {TOPIC: "read-write"}}
    ) as srv:
        write_config(rig, srv.url)
        if role == "delivery":
            sent = outbox_record()
            assert state.create("outbox", sent)
            pending = new_candidate(
                key=event_key("codex", "thread-x", "turn-x"),
                provider="codex",
                source="codex-stop",
                thread_id="thread-x",
                turn_id="turn-x",
                cwd="/tmp",
                outcome="done",
            )
            assert state.create("pending", pending)
        done, modules = run_probed(["worker", role, "--once"], rig["env"], rig["tmp"])
        assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
        assert ROLE_MODULES[role].split(":")[0] in modules  # the probe saw the role's own module
        assert forbidden(modules) == [], f"{role} imported {forbidden(modules)}"
        loaded = set((rig["tmp"] / f"modules-worker-{role}.txt").read_text().split())
        assert not_preloaded(role, loaded) == [], "add them to supervisor/role_fork.py's LAZY_IN_PASSES"
        report = health(state, role)
        assert report["passes"] >= 1 and report["last_error"] is None, report
        if role == "delivery":  # the whole send path ran: rendering, auth, HTTP, receipt
            assert len(srv.wait_for_messages(1, topic=TOPIC)) == 1
            assert state.read("sent", sent["key"]) is not None
        if role == "remote-scanner":
            assert report["roots"][0]["origin"] == "lab" and report["counters"].get("runs") == 1


def test_a_config_error_is_reported_without_pydantic(rig: dict[str, Any]) -> None:
    """A bad value stops a role with exit 78 and the one-line message, still without pydantic."""
    rig["config"].write_text(json.dumps({"topic": "t", "idle_detection_mode": "eager"}))
    done, modules = run_probed(["worker", "maintenance", "--once"], rig["env"], rig["tmp"])
    assert done.returncode == 78
    assert f"config error in {rig['config']}: idle_detection_mode: Input should be" in done.stderr.decode()
    assert forbidden(modules) == []
    assert health(rig["state"], "maintenance")["state"] == "error"


def test_the_probe_sees_pydantic_where_it_is_imported(rig: dict[str, Any]) -> None:
    """`donebell config check` (pydantic by design) is caught by the same probe: the check can fail."""
    write_config(rig, "http://127.0.0.1:9")
    done, modules = run_probed(["config", "check"], rig["env"], rig["tmp"])
    assert done.returncode == 0, done.stderr
    assert {"pydantic", "pydantic_settings", "donebell.shared.config.model"} <= set(forbidden(modules))
