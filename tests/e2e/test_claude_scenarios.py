"""The whole product around the real Claude Code CLI: install, `donebell run`, hooks, gate, ntfy.

Each scenario wires a throwaway CLAUDE_CONFIG_DIR with `donebell install --service none --claude`
(the exec-form hooks for Stop, StopFailure, UserPromptSubmit, Notification and SessionEnd), runs the real
supervisor, drives `claude -p` against the scripted Messages server and asserts the exact set of
notifications the ntfy stand-in received, that nothing more arrives for a settle period, and that
`donebell status` is healthy afterwards. A recorder hook beside donebell's shows when each Stop
fired, so a scenario can check that nothing was sent while work was still going on.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from support.fake_messages import FakeMessages, GoalVerdict, Stall, Text, agent, api_error, bash

from e2e.claude_background import background_shell_scenario
from e2e.harness import ClaudeHome, read_jsonl, run_claude, start_claude
from e2e.notes import ORIGIN, done, failed
from e2e.product_scenarios import claude_product, sent_receipts
from e2e.recorder import Recorder

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("agent_clis")]

TITLE = "work"  # the harness's work dir; the notification title is the project folder name


def session_of(home: ClaudeHome) -> str:
    [transcript] = home.transcripts()
    return transcript.stem


def test_claude_simple(tmp_path: Path) -> None:
    """A text-only `claude -p` turn gives exactly one "done" notification with its final message."""
    with (
        FakeMessages({"main": [Text("FAKE-FINAL: hello")]}) as server,
        claude_product(tmp_path, server) as (product, home),
    ):
        run = run_claude(home, "say hello")
        assert run.returncode == 0, run.describe()
        session = session_of(home)
        product.expect([done(TITLE, "FAKE-FINAL: hello", session)])
        [receipt] = sent_receipts(product)
        assert (receipt["session_id"], receipt["sources"]) == (session, ["claude-stop"]), receipt
        product.assert_healthy()


def test_claude_tool(tmp_path: Path) -> None:
    """A turn that runs a Bash command notifies once, after the final answer."""
    script = {"main": [bash("echo tool-ran > tool_output.txt", text="Running it."), Text("done after the tool")]}
    with FakeMessages(script) as server, claude_product(tmp_path, server) as (product, home):
        run = run_claude(home, "run the tool")
        assert run.returncode == 0, run.describe()
        assert (home.workdir / "tool_output.txt").read_text() == "tool-ran\n"
        product.expect([done(TITLE, "done after the tool", session_of(home))])
        product.assert_healthy()


def test_claude_subagent(tmp_path: Path, recorder: Recorder) -> None:
    """A foreground subagent and a background one: nothing while the background agent works after
    the main turn ended, then one notification for the session's final turn."""
    script: dict[str, list[Any]] = {
        "main": [
            agent("SUB-1: quick work"),
            agent("SUB-2: slow work", run_in_background=True),
            Text("turn end; the background agent still works"),
            Text("FINAL after the agents"),
        ],
        "sub": [Text("SUB-1 RESULT"), Stall(then=Text("SUB-2 RESULT"))],
    }
    with (
        FakeMessages(script) as server,
        claude_product(tmp_path, server, hooks=recorder.hooks("Stop", "SubagentStop")) as (product, home),
    ):
        cli = start_claude(home, "delegate")
        try:
            server.wait_for_stall(timeout=60)
            [first_stop] = recorder.wait_for("Stop", timeout=30)
            assert [t["type"] for t in first_stop["stdin"]["background_tasks"]] == ["subagent"]
            product.expect_none(2.0)  # the background agent still works
        finally:
            released = time.time()
            server.release_stalls()
        run = cli.wait(60)
        assert run.returncode == 0, run.describe()
        stops = recorder.payloads("Stop")
        assert [s["background_tasks"] for s in stops][-1] == [], stops
        product.expect([done(TITLE, "FINAL after the agents", session_of(home))], after=released)
        assert len(recorder.payloads("SubagentStop")) == 2
        product.assert_healthy()


def test_claude_background_shell(tmp_path: Path, recorder: Recorder) -> None:
    """A background shell that outlives the turn holds the notification; its completion turn (within
    print mode's 5 s wind-down on 2.1.197) gives exactly one, for the final state."""
    product = background_shell_scenario(tmp_path, recorder, hold=2.0, final="FINAL after the background shell")
    first, second = recorder.payloads("Stop")
    assert second["background_tasks"] == [] and second["prompt_id"] != first["prompt_id"]
    reasons = [r["reason"] for r in product.records("suppressed")]
    assert reasons in ([], ["superseded"]), reasons


def test_claude_api_error_529(tmp_path: Path) -> None:
    """A 529 on every attempt ends the turn with StopFailure: exactly one "failed" notification, whose
    outcome reads `failed: server_error — <the CLI's API-error line>`."""
    with (
        FakeMessages({"main": [api_error(529)]}) as server,
        claude_product(tmp_path, server) as (product, home),
    ):
        run = run_claude(home, "overload me")
        assert not run.timed_out and run.returncode == 1, run.describe()
        errors = [r for r in read_jsonl(home.transcripts()[0]) if r.get("isApiErrorMessage")]
        assert [e["apiErrorStatus"] for e in errors] == [529]
        expected = failed(TITLE, "server_error", session_of(home))
        head, tail = expected.message.split(f" · {ORIGIN} · ")
        [note] = product.expect_matching(1)
        assert (note["title"], tuple(note["tags"])) == (expected.title, expected.tags), note
        assert note["message"].startswith(f"{head} — API Error: 529"), note["message"]
        assert note["message"].endswith(f" · {ORIGIN} · {tail}"), note["message"]
        [receipt] = sent_receipts(product)
        # StopFailure and SessionEnd race in -p: either may write the one record first.
        assert set(receipt["sources"]) in ({"claude-stopfailure"}, {"claude-sessionend", "claude-stopfailure"}), receipt
        assert receipt["outcome"] == "failed", receipt
        product.assert_healthy()


def test_claude_goal_met(tmp_path: Path) -> None:
    """`/goal`: a not-met verdict continues the turn (no notification), the met one ends it: one
    notification, for the final answer."""
    script: dict[str, list[Any]] = {
        "main": [Text("working on it"), Text("now done")],
        "goal": [GoalVerdict(False, "not yet"), GoalVerdict(True, "met")],
    }
    with FakeMessages(script) as server, claude_product(tmp_path, server) as (product, home):
        run = run_claude(home, "/goal the work is done")
        assert run.returncode == 0, run.describe()
        assert [r.route for r in server.requests if r.method == "POST"] == ["main", "goal", "main", "goal"]
        product.expect([done(TITLE, "now done", session_of(home))])
        product.assert_healthy()
