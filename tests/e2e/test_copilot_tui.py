"""The interactive Copilot CLI (in tmux) through the whole product: a turn, a permission dialog
answered at the terminal, and Allow / Deny from the phone.

In the TUI a permission dialog opens after the `permissionRequest` hooks found no answer, and
`notification` `permission_prompt` fires ~20 ms later; it stays open, firing nothing more, until
answered. With approvals on, donebell's `permissionRequest` hook waits for a tap and prints the
answer Copilot obeys (`{"behavior": "allow"}` / `{"behavior": "deny", "message": ...}`): the
dialog never opens. `sessionEnd` comes only at `/exit` (`user_exit`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fake_copilot import FakeCopilot, Text, shell

from e2e.copilot_harness import CopilotHome
from e2e.copilot_product import copilot_product, kinds, only_session
from e2e.copilot_tui import CopilotTui, tmux_missing
from e2e.notes import done
from e2e.recorder import Recorder
from e2e.test_approvals_answer_e2e import approvals, button, needs_you, wait_reply
from e2e.test_approvals_e2e import claude_tool_results
from e2e.test_wake import tap

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.usefixtures("copilot_cli"),
    pytest.mark.skipif(tmux_missing() is not None, reason=str(tmux_missing())),
]

TITLE = "work"
COMMAND = "touch approval-marker.txt && echo approval-ran"
WHY = "Create the approval marker file"
DIALOG = "Do you want to run this command?"
READY = "? help"  # the footer, drawn once the prompt takes input
RECORDED = ("permissionRequest", "notification", "agentStop", "sessionEnd")


def asking_script() -> dict[str, list[Any]]:
    return {"main": [shell(COMMAND, WHY, text="Creating the marker file."), Text("FINAL after the call")]}


@contextlib.contextmanager
def tui_session(home: CopilotHome, prompt: str) -> Iterator[CopilotTui]:
    """The TUI in the home's work folder with ``prompt`` typed; closed (dialog refused first) after."""
    tui = CopilotTui.start(home)
    try:
        tui.wait_for(READY)
        tui.type(prompt)
        yield tui
    finally:
        with contextlib.suppress(AssertionError):
            if DIALOG in tui.screen():
                tui.keys("Escape")  # "No": /exit's Enter must not answer the dialog at teardown
                time.sleep(0.5)
        tui.close()


def test_copilot_tui_simple(tmp_path: Path, recorder: Recorder) -> None:
    """One TUI turn: one "done" at its agentStop (no sessionEnd until /exit), nothing at /exit."""
    with (
        FakeCopilot({"main": [Text("FAKE-FINAL: tui hello")]}) as server,
        copilot_product(tmp_path, server, hooks=recorder.hooks(*RECORDED)) as (product, home),
    ):
        with tui_session(home, "say hello") as tui:
            tui.wait_for("FAKE-FINAL: tui hello")
            recorder.wait_for("agentStop", timeout=30)
            product.expect([done(TITLE, "FAKE-FINAL: tui hello", only_session(home))], settle=2.0)
        recorder.wait_for("sessionEnd", timeout=15)
        assert recorder.payloads("sessionEnd")[0]["reason"] == "user_exit"
        product.expect([done(TITLE, "FAKE-FINAL: tui hello", only_session(home))], settle=2.0)
        assert [r.route for r in server.served()] == ["main"]
        product.assert_healthy()


def test_copilot_tui_dialog_answered_at_the_terminal(tmp_path: Path, recorder: Recorder) -> None:
    """A dialog left open gives one "needs you" (none more while it stays open); answered at the
    terminal, the call runs and the turn gives one "done"."""
    with (
        FakeCopilot(asking_script()) as server,
        copilot_product(tmp_path, server, hooks=recorder.hooks(*RECORDED)) as (product, home),
    ):
        with tui_session(home, "make the marker") as tui:
            tui.wait_for(DIALOG)
            [ask] = product.expect_matching(1, deadline=30, settle=4.0)  # the dialog stays open
            assert kinds([ask]) == ["needs-you"] and ask["title"] == TITLE, ask
            assert not (home.workdir / "approval-marker.txt").exists()
            answered = time.time()
            tui.keys("Enter")  # "1. Yes"
            tui.wait_for("FINAL after the call")
            got = product.expect_matching(2, deadline=30)
        assert (home.workdir / "approval-marker.txt").exists()
        assert kinds(got) == ["needs-you", "done"], got
        assert got[1]["message"] == done(TITLE, "FINAL after the call", only_session(home)).message
        assert [p["notification_type"] for p in recorder.payloads("notification")] == ["permission_prompt"]
        assert [r.arrived_wall >= answered for r in product.requests()] == [False, True]
        product.assert_healthy()


@pytest.mark.parametrize("answer", ["Allow", "Deny"])
def test_copilot_tui_answered_from_the_phone(tmp_path: Path, recorder: Recorder, answer: str) -> None:
    """Approvals on: the "needs you" push carries Allow / Deny; the tap answers the waiting hook,
    Copilot obeys it (no dialog ever opens), and the turn then gives one "done"."""
    with (
        FakeCopilot(asking_script()) as server,
        copilot_product(tmp_path, server, config=approvals(), hooks=recorder.hooks(*RECORDED)) as (product, home),
    ):
        with tui_session(home, "make the marker") as tui:
            message = needs_you(product)
            assert [a["label"] for a in message["actions"]] == ["Allow", "Deny"], message
            tap(button(message, answer))
            tui.wait_for("FINAL after the call")
            assert DIALOG not in tui.screen()
            assert wait_reply(product, "answered")["decision"] == answer.lower()
            got = product.expect_matching(2, deadline=30)
        assert kinds(got) == ["needs-you", "done"], got
        told = claude_tool_results(server)  # the same Messages API: what the model heard of its call
        if answer == "Allow":
            assert (home.workdir / "approval-marker.txt").exists() and "approval-ran" in str(told), told
        else:
            assert not (home.workdir / "approval-marker.txt").exists(), told
            assert "Permission denied by a PermissionRequest hook" in str(told), told
        assert "permission_prompt" not in [p["notification_type"] for p in recorder.payloads("notification")]
        product.assert_healthy()
