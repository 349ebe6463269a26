"""chain_notify: the user's previous Codex notify program runs first, detached, failures only logged."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from donebell.workers.agents.codex.chain_notify import chain_argv
from support.hooks_harness import HookEnv, notify_payload, wait_for_json


@pytest.fixture()
def hooks(tmp_path: Path) -> HookEnv:
    return HookEnv(tmp_path)


def _chain(hooks: HookEnv, name: str, *extra: str) -> list[str]:
    return [*hooks.recorder_argv(name), *extra]


def _wait_for_log(hooks: HookEnv, text: str, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if text in hooks.log_messages():
            return
        time.sleep(0.05)
    raise AssertionError(f"log never said {text!r}: {hooks.log_messages()}")


def test_chained_notifier_gets_its_argv_plus_the_payload(hooks: HookEnv) -> None:
    """The configured program runs with its own arguments plus the exact payload element Codex passed."""
    hooks.install_rollout("simple-exec")
    hooks.write_config(chain_notify=_chain(hooks, "chain.json", "--user-flag"))
    arg = json.dumps(notify_payload("simple--notify-1"))
    hooks.notify(arg)
    info = wait_for_json(hooks.root / "chain.json")
    assert info["argv"] == ["--user-flag", arg]
    assert info["chained"] == "1" and info["sid"] == info["pid"]
    assert hooks.only("pending")["source"] == "codex-notify"


def test_chained_notifier_failure_is_logged_not_fatal(hooks: HookEnv) -> None:
    """A chained program exiting non-zero is logged by the watcher; donebell's own ingestion is unaffected."""
    hooks.install_rollout("simple-exec")
    hooks.write_config(chain_notify=_chain(hooks, "chain.json"))
    hooks.notify(notify_payload("simple--notify-1"), RECORDER_EXIT="3")
    _wait_for_log(hooks, "chain_notify failed")
    failed = [r for r in hooks.log() if r["msg"] == "chain_notify failed"]
    assert failed[0]["exit_code"] == 3 and failed[0]["program"] == Path(sys.executable).name
    assert hooks.counts()["pending"] == 1


def test_missing_chained_program_is_logged(hooks: HookEnv) -> None:
    """A chained program that does not exist is logged; the notify is still ingested."""
    hooks.install_rollout("simple-exec")
    hooks.write_config(chain_notify=["/nonexistent/old-notifier", "x"])
    hooks.notify(notify_payload("simple--notify-1"))
    _wait_for_log(hooks, "chain_notify could not start")
    assert hooks.counts()["pending"] == 1


def test_chain_runs_even_when_the_payload_is_refused(hooks: HookEnv) -> None:
    """The user's notifier gets the payload even if donebell cannot parse it (it may understand it)."""
    hooks.write_config(chain_notify=_chain(hooks, "chain.json"))
    hooks.notify("not json at all")
    assert wait_for_json(hooks.root / "chain.json")["argv"] == ["not json at all"]
    assert "payload refused" in hooks.log_messages()


def test_chain_that_points_at_donebell_itself_is_refused(hooks: HookEnv) -> None:
    """A chain_notify naming donebell's own notify hook would recurse forever: it is refused and logged."""
    hooks.write_config(chain_notify=["donebell", "hook", "codex-notify"])
    hooks.notify(notify_payload("simple--notify-1"))
    assert "refusing to loop" in hooks.log_messages()


@pytest.mark.parametrize("value", ["notify-send", [1, 2]])
def test_a_chain_notify_the_loaders_refuse_is_not_run_and_logged(hooks: HookEnv, value: object) -> None:
    """A chain_notify that is not a list of strings reads as unset, and the hook logs why it ran nothing."""
    hooks.write_config(chain_notify=value)
    hooks.notify(notify_payload("simple--notify-1"))
    assert "chain_notify not run" in hooks.log_messages()
    assert [r for r in hooks.log() if r["msg"] == "chain_notify not run"][0]["reason"].startswith("chain_notify")
    assert hooks.only("pending")["source"] == "codex-notify"  # donebell's own ingest went on


def test_chain_argv_validation() -> None:
    """chain_argv: unset -> None; a list of strings -> argv + payload; anything else -> ValueError."""
    assert chain_argv(None, "{}") is None and chain_argv([], "{}") is None
    assert chain_argv(["notify-send", "-u"], "{}") == ["notify-send", "-u", "{}"]
    for bad in ("notify-send", [1, 2], ["ok", ""], {"a": 1}):
        with pytest.raises(ValueError):
            chain_argv(bad, "{}")


def test_chain_runs_even_when_the_state_dir_is_unusable(hooks: HookEnv) -> None:
    """A broken donebell state dir never costs the user their own notifier."""
    blocker = hooks.root / "blocked"
    blocker.write_text("a file where the state dir should be")
    hooks.write_config(chain_notify=_chain(hooks, "chain.json"))
    arg = json.dumps(notify_payload("simple--notify-1"))
    result = hooks.run("codex-notify", arg, DONEBELL_STATE_DIR=str(blocker))
    assert result.returncode == 0
    assert wait_for_json(hooks.root / "chain.json")["argv"] == [arg]
