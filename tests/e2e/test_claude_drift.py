"""Claude Code releases drift: the scenarios 2.1.332 changed, on both agent sets.

Run with ``DONEBELL_E2E_AGENTS=pinned`` (2.1.197, the default) and ``newest`` (2.1.332). What
2.1.332 changed and these scenarios pin down:

* print mode SIGTERMs the StopFailure hook 22–29 ms after starting it (SIGKILL ~1.5 s later):
  every API-error kind must still give exactly one "failed" notification;
* background shells are no longer killed 5 s after a ``-p`` turn: a shell outliving the turn
  gets its own task-notification turn, and only the final state notifies;
* Agent calls are asynchronous by default: the first Stop lists the subagent as running, a
  ``<task-notification>`` prompt follows, and only that final turn notifies.

The interactive API-error case types its prompt into the real TUI through a pseudo-terminal
(``tui.py``); neither release signals the interactive StopFailure hook.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.text.short_id import short_id
from support import npm_clis
from support.fake_messages import FakeMessages, MaxTokens, MidStreamError, Stall, Text, ToolUse, api_error, bash
from support.scripted_server import Step

from e2e.claude_background import background_shell_scenario
from e2e.harness import ClaudeHome, read_jsonl, run_claude, start_claude
from e2e.notes import FAILED_TAGS, ORIGIN, done
from e2e.product_scenarios import claude_product, sent_receipts
from e2e.recorder import Recorder
from e2e.tui import ClaudeTui

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("agent_clis")]

TITLE = "work"
NEWEST_BEHAVIOUR = npm_clis.claude_version() >= (2, 1, 332)
KILLED_TURN_END = "turn end; the background shell still runs"
#: How each API failure reaches StopFailure.error, per release (measured on both binaries).
API_ERRORS: dict[str, tuple[Step, str]] = {
    "400": (api_error(400), "unknown"),
    "401": (api_error(401), "authentication_failed"),
    "429": (api_error(429), "rate_limit"),
    "500": (api_error(500), "server_error"),
    "529": (api_error(529), "server_error"),
    "max-output-tokens": (MaxTokens(), "max_output_tokens"),
    "mid-stream": (MidStreamError(), "server_error" if NEWEST_BEHAVIOUR else "unknown"),
}

#: How the push names an error StopFailure reports as `unknown`: the last message's `API Error:`
#: line (both releases write `API Error: 400 Invalid Request Error`; 2.1.197's mid-stream error is
#: `unknown` with `API Error: Overloaded`, the fake server's error message).
SHOWN_AS = {"400": "400 Invalid Request Error", "mid-stream": "server_error" if NEWEST_BEHAVIOUR else "Overloaded"}


def session_of(home: ClaudeHome) -> str:
    [transcript] = home.transcripts()
    return transcript.stem


@pytest.mark.parametrize("kind", list(API_ERRORS))
def test_claude_print_api_error(tmp_path: Path, kind: str) -> None:
    """Every API-error kind in `claude -p` (every attempt fails the same way) gives exactly one
    "failed" notification naming the error, from the StopFailure hook, though 2.1.332 SIGTERMs it."""
    step, error = API_ERRORS[kind]
    fallback: dict[str, Any] = {"main": step, "*": Text("FAKE-FALLBACK")}
    with (
        FakeMessages({}, fallback=fallback) as server,
        claude_product(tmp_path, server) as (product, home),
    ):
        run = run_claude(home, f"fail with {kind}", timeout=120)
        assert not run.timed_out and run.returncode == 1, run.describe()
        records = read_jsonl(home.transcripts()[0])
        assert [r.get("error") for r in records if r.get("isApiErrorMessage")][-1:] == [error], records[-3:]
        session = session_of(home)
        [note] = product.expect_matching(1)
        assert (note["title"], note["tags"]) == (TITLE, FAILED_TAGS), note
        shown = SHOWN_AS.get(kind, error)  # what StopFailure calls unknown, named (issue 37 item 7)
        assert note["message"].startswith(f"failed: {shown}"), note["message"]
        assert note["message"].endswith(f" · {ORIGIN} · #{short_id(session)}"), note["message"]
        [receipt] = sent_receipts(product)
        assert receipt["outcome"] == "failed" and "claude-stopfailure" in receipt["sources"], receipt
        product.assert_healthy()


def test_claude_background_shell_outlives_the_print_turn(tmp_path: Path, recorder: Recorder) -> None:
    """A background shell still running 6 s after the `-p` turn ended. 2.1.332 lets it finish and
    runs its task-notification turn: nothing while it runs, then exactly one notification, after
    it finished. 2.1.197 kills it 5 s after the turn and sends no further Stop or SessionEnd: the
    scanner's Claude transcript recovery gives exactly one notification saying so."""
    if NEWEST_BEHAVIOUR:
        background_shell_scenario(tmp_path, recorder, hold=6.0, final="FINAL after the long background shell")
        return
    command = "sleep 30; echo BG-DONE"
    script = {"main": [bash(command, "Wait in background", run_in_background=True), Text(KILLED_TURN_END)]}
    with (
        FakeMessages(script) as server,
        claude_product(tmp_path, server, hooks=recorder.hooks("Stop")) as (product, home),
    ):
        run = run_claude(home, "start a long background job")
        assert run.returncode == 0, run.describe()
        [stop] = recorder.payloads("Stop")
        assert [t["status"] for t in stop["background_tasks"]] == ["running"]
        product.expect(
            [done(TITLE, f"background work was stopped when Claude exited · {KILLED_TURN_END}", session_of(home))]
        )
        product.assert_healthy()


def test_claude_asynchronous_subagent(tmp_path: Path, recorder: Recorder) -> None:
    """An Agent call without `run_in_background` (asynchronous by default on 2.1.332): nothing
    while the subagent works, then exactly one notification, for the session's final turn."""
    call = ToolUse("Agent", {"description": "Fake sub task", "prompt": "SUB: work", "subagent_type": "general-purpose"})
    script: dict[str, list[Any]] = {
        "main": [call, Text("turn end; the subagent may still work"), Text("FINAL after the async subagent")],
        "sub": [Stall(then=Text("SUB RESULT"))],
    }
    with (
        FakeMessages(script) as server,
        claude_product(tmp_path, server, hooks=recorder.hooks("Stop", "UserPromptSubmit")) as (product, home),
    ):
        cli = start_claude(home, "delegate asynchronously")
        try:
            server.wait_for_stall(timeout=60)
            if NEWEST_BEHAVIOUR:
                [first_stop] = recorder.wait_for("Stop", timeout=30)
                assert [(t["type"], t["status"]) for t in first_stop["stdin"]["background_tasks"]] == [
                    ("subagent", "running")
                ], first_stop
            product.expect_none(2.0)  # the subagent still works
        finally:
            released = time.time()
            server.release_stalls()
        run = cli.wait(60)
        assert run.returncode == 0, run.describe()
        stops = recorder.payloads("Stop")
        assert stops[-1]["background_tasks"] == [], stops
        if NEWEST_BEHAVIOUR:
            prompts = [p["prompt"] for p in recorder.payloads("UserPromptSubmit")]
            assert len(prompts) == 2 and prompts[1].startswith("<task-notification>"), prompts
            final = "FINAL after the async subagent"
        else:
            final = "turn end; the subagent may still work"  # a foreground agent on 2.1.197
        product.expect([done(TITLE, final, session_of(home))], after=released)
        product.assert_healthy()


def test_claude_interactive_api_error(tmp_path: Path) -> None:
    """A 529 in an interactive session (the TUI on a pty): exactly one "failed" notification while
    the session stays open, and nothing more when the user leaves with /exit."""
    fallback: dict[str, Any] = {
        "main": api_error(529),
        "title": Text('{"title": "Fake session"}'),
        "*": Text("FAKE-FALLBACK"),
    }
    with (
        FakeMessages({}, fallback=fallback) as server,
        claude_product(tmp_path, server) as (product, home),
    ):
        tui = ClaudeTui.start(home)
        try:
            tui.wait_quiet()
            tui.type("overload me interactively")
            [note] = product.expect_matching(1, deadline=60)
            session = session_of(home)
            assert (note["title"], note["tags"]) == (TITLE, FAILED_TAGS), note
            assert note["message"].startswith("failed: server_error"), note["message"]
            assert note["message"].endswith(f" · {ORIGIN} · #{short_id(session)}"), note["message"]
            assert tui.proc.poll() is None, "the interactive session ended by itself"
        finally:
            tui.close()
        time.sleep(2.0)  # /exit (SessionEnd) must not add a second notification
        assert len(product.messages()) == 1, product.messages()
        [receipt] = sent_receipts(product)
        assert receipt["outcome"] == "failed" and "claude-stopfailure" in receipt["sources"], receipt
        product.assert_healthy()
