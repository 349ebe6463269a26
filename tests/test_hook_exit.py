"""A hook process skips what costs the agent's turn time and buys it nothing (supervisor/cli.py):
the garbage collector while it runs, and the interpreter's finalization once its output is out.

Both only in a real hook process (``main()`` reading ``sys.argv``): a caller that passes ``argv``
gets the exit code back with the collector untouched. A hook that waits for the phone's answer
turns the collector back on, since that wait may last minutes.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest
from donebell.supervisor import cli
from donebell.workers import hooks
from donebell.workers.kit.hook_context import HookContext
from support.hooks_harness import HookEnv

#: The console script's body, plus witnesses: an ``atexit`` handler (runs only if the interpreter
#: finalizes) and ``os._exit`` wrapped to record the collector's state and the code.
PROBE = (
    "import atexit, gc, os, sys\n"
    "out = sys.argv.pop(1)\n"
    "atexit.register(lambda: open(out + '.finalized', 'w').close())\n"
    "exit_now = os._exit\n"
    "def probe(code):\n"
    "    open(out, 'w').write(str([code, gc.isenabled()]))\n"
    "    exit_now(code)\n"
    "os._exit = probe\n"
    "from donebell.supervisor.cli import main\n"
    "sys.exit(main())\n"
)


@pytest.fixture()
def hook_env(tmp_path: Path) -> HookEnv:
    env = HookEnv(tmp_path)
    env.install_rollout("simple-exec", upto="task_complete")
    return env


def test_a_hook_process_ends_without_finalization_and_without_the_collector(hook_env: HookEnv) -> None:
    out = hook_env.root / "exit.txt"
    payload = json.dumps(hook_env.stop_payload("simple")).encode()
    cmd = [sys.executable, "-c", PROBE, str(out), "hook", "codex-stop"]
    result = subprocess.run(cmd, input=payload, capture_output=True, env=hook_env.env(), timeout=60)
    assert (result.returncode, result.stdout) == (0, b"{}\n"), result  # the documented output, flushed
    assert hook_env.counts()["pending"] == 1  # the record was durable before the exit
    assert out.read_text() == "[0, False]"  # os._exit(0), the collector off throughout
    assert not (hook_env.root / "exit.txt.finalized").exists()


def test_other_commands_finalize_as_usual(hook_env: HookEnv) -> None:
    out = hook_env.root / "exit.txt"
    cmd = [sys.executable, "-c", PROBE, str(out), "--version"]
    result = subprocess.run(cmd, capture_output=True, env=hook_env.env(), timeout=60)
    assert result.returncode == 0 and result.stdout.startswith(b"donebell ")
    assert not out.exists()
    assert (hook_env.root / "exit.txt.finalized").exists()


def test_a_caller_passing_argv_gets_the_code_and_keeps_its_collector(capsys: pytest.CaptureFixture[str]) -> None:
    assert gc.isenabled()
    assert cli.main(["hook", "--help"]) == 0
    assert "codex-stop" in capsys.readouterr().out
    assert gc.isenabled()


def test_a_hook_waiting_for_the_phone_collects_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DONEBELL_STATE_DIR", str(tmp_path / "state"))
    ctx = HookContext("claude")
    ctx.after = lambda: str(gc.isenabled())
    gc.disable()
    try:
        assert hooks._after(ctx) == "True"
    finally:
        gc.enable()
