"""One tap answers one exact call, with the real Claude TUI (issue 34 items 1 and 2), both agent sets.

The model asks for two calls in one assistant message. Two Bash calls: each asks on its own, gets
its own needs-you push, the first push's Allow runs only the first command, and the second push's
Allow the second (on the previous main the second call never got its own answerable push; the
case of a transcript unchanged between the two hooks, where the second hook printed the first's
Allow, is held with the recorded payloads in tests/test_approvals_keying.py). A Read (no prompt)
and a Bash (a prompt): the Read's result lands while the Bash dialog is open, and the phone's Allow
is still accepted (it was refused ``already-answered``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from support.fake_messages import FakeMessages, ToolUse, ToolUses, bash
from support.fake_messages import Text as ClaudeText

from e2e import approval_agents as aa
from e2e.harness import ClaudeHome
from e2e.product import Product
from e2e.product_scenarios import claude_product
from e2e.test_approvals_answer_e2e import approvals, button, replies, wait_reply
from e2e.test_approvals_e2e import claude_tool_results
from e2e.test_wake import tap

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("agent_clis")]

FIRST = ("touch marker-one.txt && echo one-ran", "Create marker one")
SECOND = ("touch marker-two.txt && echo two-ran", "Create marker two")


def needs_pushes(product: Product, count: int, deadline: float = 60.0) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    def arrived() -> bool:
        found[:] = [m for m in product.messages() if (m.get("tags") or [""])[0] == "raising_hand"]
        return len(found) >= count

    product.wait_until(arrived, deadline, f"{count} needs-you push(es)")
    return found


def test_claude_two_bash_calls_of_one_message_one_tap_answers_one(tmp_path: Path) -> None:
    step = ToolUses((bash(FIRST[0], description=FIRST[1]), bash(SECOND[0], description=SECOND[1])), "Running both.")
    with (
        FakeMessages({"main": [step, ClaudeText(aa.CLAUDE_FINAL)]}, fallback=aa.CLAUDE_FALLBACK) as server,
        claude_product(tmp_path, server, config=approvals()) as (product, home),
    ):
        assert isinstance(home, ClaudeHome)
        tui = aa.start_claude_tui_asking(home, "two calls")
        try:
            [first] = needs_pushes(product, 1)
            assert FIRST[1] in first["message"], first
            tap(button(first, "Allow"))
            aa.wait_until(lambda: (home.workdir / "marker-one.txt").exists(), 30, "the first call", tui.screen_text)
            second = needs_pushes(product, 2)[1]  # the second call asks on its own: a push of its own
            assert SECOND[1] in second["message"], second
            time.sleep(5.0)  # the first tap must not answer it
            assert not (home.workdir / "marker-two.txt").exists(), tui.screen_text()[-2000:]
            assert [r["decision"] for r in replies(product) if r.get("status") == "answered"] == ["allow"]
            tap(button(second, "Allow"))
            aa.wait_until(lambda: (home.workdir / "marker-two.txt").exists(), 30, "the second call", tui.screen_text)
            told = lambda: any("two-ran" in t for t in claude_tool_results(server))  # noqa: E731
            aa.wait_until(told, 30, "the second call's outcome sent to the model", tui.screen_text)
            answered = [r for r in replies(product) if r.get("status") == "answered"]
            assert len(answered) == 2 and answered[0]["request"] != answered[1]["request"], answered
            time.sleep(8.0)  # past the permission_prompt Notifications (~6 s after each dialog)
            assert len(needs_pushes(product, 2)) == 2, product.messages()  # two dialogs, two pushes
        finally:
            aa.close_tui(tui)


def test_claude_another_calls_result_does_not_close_the_wait(tmp_path: Path) -> None:
    """A Read that runs without a prompt and a Bash that asks, in one message."""
    notes = tmp_path / "work" / "notes.txt"  # in the work folder (harness._make_tree): no prompt to read it
    notes.parent.mkdir(parents=True, exist_ok=True)
    notes.write_text("some notes\n")
    step = ToolUses((ToolUse("Read", {"file_path": str(notes)}), bash(FIRST[0], description=FIRST[1])), "Reading.")
    with (
        FakeMessages({"main": [step, ClaudeText(aa.CLAUDE_FINAL)]}, fallback=aa.CLAUDE_FALLBACK) as server,
        claude_product(tmp_path, server, config=approvals()) as (product, home),
    ):
        assert isinstance(home, ClaudeHome) and notes.parent == home.workdir
        tui = aa.start_claude_tui_asking(home, "read then run")
        try:
            [push] = needs_pushes(product, 1)
            read_done = lambda: any("some notes" in t for t in _transcript_results(home))  # noqa: E731
            aa.wait_until(read_done, 30, "the Read's result in the transcript", tui.screen_text)
            time.sleep(1.5)  # the waiting hook looks at the terminal every half second
            tap(button(push, "Allow"))
            reply = wait_reply(product, "answered")
            assert reply["decision"] == "allow", reply
            aa.wait_until(lambda: (home.workdir / "marker-one.txt").exists(), 30, "the allowed call", tui.screen_text)
            assert not [r for r in replies(product) if r.get("status") == "refused"], replies(product)
        finally:
            aa.close_tui(tui)


def _transcript_results(home: ClaudeHome) -> list[str]:
    return [p.read_text(errors="replace") for p in home.project_dir.glob("*.jsonl")]
