"""The kick: a hook starts a detached `donebell worker delivery --until-idle` when no worker is alive."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest
from donebell.shared.process.liveness import current_process_identity
from donebell.workers.hooks import worker_argv
from support.hooks_harness import HookEnv, wait_for_json


@pytest.fixture()
def hooks(tmp_path: Path) -> HookEnv:
    env = HookEnv(tmp_path)
    env.install_rollout("simple-exec")
    return env


def _recorder_prefix(hooks: HookEnv, name: str) -> str:
    return json.dumps(hooks.recorder_argv(name))


def test_kick_starts_a_detached_until_idle_worker(hooks: HookEnv) -> None:
    """With no delivery owner, the hook starts exactly `python -m donebell.supervisor.cli worker delivery --until-idle`."""
    started = time.monotonic()
    result = hooks.run(
        "codex-stop",
        stdin=hooks.stop_payload("simple"),
        DONEBELL_KICK_COMMAND=_recorder_prefix(hooks, "kick.json"),
        RECORDER_LINGER="5",
    )
    # capture_output waits for EOF on stdout: a child holding the hook's pipe would stall this for 5 s.
    assert time.monotonic() - started < 4
    assert result.returncode == 0 and result.stdout == b"{}\n"
    info = wait_for_json(hooks.root / "kick.json")
    assert info["argv"] == worker_argv()
    assert info["argv"][1:] == ["-P", "-m", "donebell.supervisor.cli", "worker", "delivery", "--until-idle"]
    assert info["cwd"] == "/"  # never the agent's folder: a module there must not be imported
    assert info["sid"] == info["pid"]  # its own session: the agent's signals do not reach it
    assert info["stdio"] == ["/dev/null"] * 3
    assert hooks.only("pending")["source"] == "codex-stop"
    kick = json.loads((hooks.state_dir / "locks" / "delivery.kick.json").read_text())
    assert kick["pid"] == info["pid"]
    assert "started an on-demand delivery worker" in hooks.log_messages()
    os.kill(info["pid"], signal.SIGTERM)  # the lingering stand-in is ours: do not leave it behind


def test_no_kick_when_a_live_delivery_owner_is_recorded(hooks: HookEnv) -> None:
    """A live recorded lock owner (pid + start time) means a worker runs: nothing is started."""
    locks = hooks.state.ensure().root / "locks"
    (locks / "delivery.owner.json").write_text(json.dumps({**current_process_identity(), "role": "delivery"}))
    hooks.run("codex-stop", stdin=hooks.stop_payload("simple"), DONEBELL_KICK_COMMAND=_recorder_prefix(hooks, "k.json"))
    time.sleep(0.5)  # proves a negative: a kick, had one started, would have recorded itself by now
    assert not (hooks.root / "k.json").exists()
    assert hooks.counts()["pending"] == 1


def test_dead_owner_record_does_not_prevent_the_kick(hooks: HookEnv) -> None:
    """An owner record whose process died (or whose pid was reused) does not count: the kick happens."""
    locks = hooks.state.ensure().root / "locks"
    me = current_process_identity()
    (locks / "delivery.owner.json").write_text(json.dumps({"pid": me["pid"], "create_time": me["create_time"] - 1000}))
    hooks.run("codex-stop", stdin=hooks.stop_payload("simple"), DONEBELL_KICK_COMMAND=_recorder_prefix(hooks, "k.json"))
    assert wait_for_json(hooks.root / "k.json")["argv"] == worker_argv()


def test_no_second_kick_while_the_first_worker_starts(hooks: HookEnv) -> None:
    """While the kicked worker is still alive (not yet the lock owner), later hooks start no other one."""
    prefix = _recorder_prefix(hooks, "first.json")
    hooks.run("codex-stop", stdin=hooks.stop_payload("simple"), DONEBELL_KICK_COMMAND=prefix, RECORDER_LINGER="5")
    first = wait_for_json(hooks.root / "first.json")
    second = _recorder_prefix(hooks, "second.json")
    hooks.run(
        "codex-notify",
        json.dumps({"type": "agent-turn-complete", "thread-id": "t", "turn-id": "u"}),
        DONEBELL_KICK_COMMAND=second,
    )
    time.sleep(0.5)  # proves a negative: a kick, had one started, would have recorded itself by now
    assert not (hooks.root / "second.json").exists()
    assert hooks.counts()["pending"] == 2
    os.kill(first["pid"], signal.SIGTERM)


def test_kick_failure_is_logged_and_the_candidate_kept(hooks: HookEnv) -> None:
    """A worker that cannot be started is logged; the candidate stays safely in pending/."""
    result = hooks.run(
        "codex-stop", stdin=hooks.stop_payload("simple"), DONEBELL_KICK_COMMAND=json.dumps(["/nonexistent/donebell"])
    )
    assert result.returncode == 0 and result.stdout == b"{}\n"
    assert hooks.counts()["pending"] == 1
    assert "could not start a delivery worker" in hooks.log_messages()


def test_suppressed_child_does_not_kick(hooks: HookEnv) -> None:
    """A receipt needs no delivery: a child notify starts no worker."""
    hooks.install_rollout("subagent-child")
    from support.hooks_harness import notify_payload

    hooks.notify(notify_payload("subagent--notify-1"), DONEBELL_KICK_COMMAND=_recorder_prefix(hooks, "k.json"))
    time.sleep(0.5)  # proves a negative: a kick, had one started, would have recorded itself by now
    assert not (hooks.root / "k.json").exists() and hooks.counts()["suppressed"] == 1


def test_kick_runs_on_this_interpreter_and_package() -> None:
    """The worker command line is this interpreter plus the package's own CLI module (no PATH lookup, no shell)."""
    argv = worker_argv()
    assert argv[0] == sys.executable and os.path.isabs(argv[0])
    assert argv[1:4] == ["-P", "-m", "donebell.supervisor.cli"]  # -P: the agent's folder is not on sys.path


def test_real_kick_delivers_without_a_service(hooks: HookEnv) -> None:
    """With no supervisor, the hook's real kick starts `worker delivery --until-idle`, which sends and exits."""
    from donebell.shared.process.liveness import owner_alive
    from support.ntfy_standin import NtfyStandin

    with NtfyStandin() as srv:
        hooks.write_config(server=srv.url, topic="hooks-kick-test", idle_detection_mode="off")
        env = {"DONEBELL_KICK_COMMAND": ""}  # the real command
        result = hooks.run("codex-stop", stdin=hooks.stop_payload("simple"), **env)
        assert result.returncode == 0 and result.stdout == b"{}\n"
        [message] = srv.wait_for_messages(1, timeout=60, topic="hooks-kick-test")
        kick = json.loads((hooks.state_dir / "locks" / "delivery.kick.json").read_text())
        deadline = time.monotonic() + 60
        while owner_alive(kick) and time.monotonic() < deadline:  # --until-idle: it exits by itself
            time.sleep(0.1)
        alive = owner_alive(kick)
        if alive:
            os.kill(kick["pid"], signal.SIGTERM)
        assert not alive, "the on-demand worker did not exit once idle"
    assert hooks.counts()["sent"] == 1 and hooks.counts()["pending"] == 0
    assert len(srv.messages("hooks-kick-test")) == 1 and message["topic"] == "hooks-kick-test"
