"""`donebell explain`: where each candidate is, every probe decision, and what it waits for."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from donebell.shared import keys
from donebell.shared.statedir import StateDir
from donebell.supervisor.commands.explain import main
from fixtures.gate.claude_kit import ClaudeWorld
from fixtures.gate.kit import (
    CHILD_THREAD,
    PARENT_THREAD,
    PARENT_TURN,
    SIMPLE_THREAD,
    SIMPLE_TURN,
    CodexWorld,
    fast_settings,
    gate,
    lines_of,
    turn_records,
)


@pytest.fixture()
def world(isolated_env: dict[str, Path], state: StateDir) -> CodexWorld:
    return CodexWorld(isolated_env["codex_home"], state)


def test_waiting_root_says_which_child_and_when_it_times_out(
    world: CodexWorld, state: StateDir, capsys: pytest.CaptureFixture[str]
) -> None:
    """A root held by a running child explains the child, how long it has run and the orphan timeout."""
    world.write_rollout(PARENT_THREAD, lines_of("subagent-parent.jsonl"))
    world.write_rollout(CHILD_THREAD, lines_of("subagent-child.jsonl")[:9])
    world.add_thread(PARENT_THREAD)
    world.add_edge(PARENT_THREAD, CHILD_THREAD)
    world.submit(PARENT_THREAD, PARENT_TURN)
    gate(state, fast_settings())
    gate(state, fast_settings())
    assert main([PARENT_THREAD]) == 0
    out = capsys.readouterr().out
    assert "[pending]" in out and "child-running" in out
    assert f"waiting: child {CHILD_THREAD[:8]}… still running (since" in out
    assert "orphan timeout in 30 m" in out and "(×2" in out


def test_thread_history_lists_superseded_and_sent_turns(
    world: CodexWorld, state: StateDir, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every candidate of a thread appears with its folder and receipt reason, oldest first; --json carries the same."""
    world.write_rollout(SIMPLE_THREAD, [*lines_of("simple-exec.jsonl"), *turn_records("t-second")])
    world.submit(SIMPLE_THREAD, SIMPLE_TURN)
    second = world.submit(SIMPLE_THREAD, "t-second")
    gate(state, fast_settings())
    assert main([SIMPLE_THREAD]) == 0
    out = capsys.readouterr().out
    assert "[suppressed] reason superseded" in out and "[outbox] verdict idle" in out
    assert main([SIMPLE_THREAD, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["folder"] for r in data["records"]] == ["suppressed", "outbox"]
    assert data["records"][0]["history"][-1]["reason"] == "superseded"
    assert main([second, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["records"][0]["key"] == second


def test_claude_session_and_unknown_ids(
    isolated_env: dict[str, Path], state: StateDir, capsys: pytest.CaptureFixture[str]
) -> None:
    """A session id shows its prompt epoch and candidates; an unknown id says so and exits 1."""
    claude = ClaudeWorld(isolated_env["claude_dir"] / "projects" / "-w", state)
    claude.session_record("sess-1", 3, "prompt-3")
    claude.submit("sess-1", "prompt-3", epoch=3)
    assert main(["sess-1"]) == 0
    out = capsys.readouterr().out
    assert "prompt epoch 3" in out and "not evaluated yet" in out
    assert main(["no-such-thread"]) == 1
    assert "no record" in capsys.readouterr().out
    assert main([keys.event_key("codex", "x", "y")]) == 1


def test_cli_routes_explain(isolated_env: dict[str, Path], state: StateDir) -> None:
    """`donebell explain ID --json` runs through the real command dispatcher."""
    env = {**os.environ, "DONEBELL_STATE_DIR": str(isolated_env["state"])}
    proc = subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", "explain", "nothing-here", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and json.loads(proc.stdout)["records"] == []
