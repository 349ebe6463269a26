"""Reply to continue into the session that is still open (issue 28 item 3), with the real CLIs.

An interactive Claude Code session finishes a turn and stays open; its done push's Continue is
tapped as the ntfy app does; the wake role delivers the configured prompt into that very session
(its cross-session messaging inbox) instead of starting `claude -p --resume` beside it: the same
TUI process runs exactly one more turn, and exactly one later notification comes. A Codex thread
open in the interactive TUI (held by the app-server daemon the TUI runs on) gets the reply as a
queued message, `codex queue --thread … --message … --resume`: the same. Where the session is
gone, the reply resumes as before and says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support import npm_clis
from support.fake_messages import FakeMessages
from support.fake_messages import Text as ClaudeText
from support.fake_responses import FakeResponses, Text

from e2e import approval_agents as aa
from e2e.harness import ClaudeHome, CodexHome, run_claude
from e2e.product import Product
from e2e.test_wake import PROMPT, codex_turns, continue_button, tap, wake_product, wake_records
from e2e.tui import ClaudeTui, CodexTui

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("agent_clis")]

#: Cross-session messaging (the session inbox) is on by default since Claude Code 2.1.224.
INBOX_SINCE = (2, 1, 224)


def _inbox_skip() -> None:
    version = npm_clis.claude_version()
    if version < INBOX_SINCE:
        pytest.skip(
            f"Claude Code {'.'.join(map(str, version))} has no session inbox (cross-session messaging "
            "came in 2.1.224): a reply resumes the session instead (test_claude_continue_resumes_the_session)"
        )


def continue_into_the_open_session(product: Product, deadline: float) -> None:
    """Tap the first push's Continue; the second push comes, and the reply's record says it went
    into the open session (``via: inbox``) and was ``delivered``."""
    [first] = product.expect_matching(1, deadline=deadline)
    tap(continue_button(first))
    product.wait_until(lambda: len(product.messages()) >= 2, deadline, "the second notification")
    product.wait_until(lambda: wake_records(product)[0]["status"] != "requested", 30, "the confirmation")
    [record] = wake_records(product)
    assert (record["status"], record.get("via"), record.get("delivery")) == ("confirmed", "inbox", "delivered")


def test_claude_reply_goes_into_the_open_session(tmp_path: Path) -> None:
    _inbox_skip()
    script = {"main": [ClaudeText("FIRST-ANSWER"), ClaudeText("SECOND-ANSWER")]}
    with (
        FakeMessages(script, fallback=aa.CLAUDE_FALLBACK) as server,
        wake_product(tmp_path, server, "claude") as (product, home),
    ):
        assert isinstance(home, ClaudeHome)
        tui = ClaudeTui.start(home)
        try:
            tui.wait_quiet()
            tui.type("start")
            continue_into_the_open_session(product, deadline=60)
            aa.wait_until(lambda: "SECOND-ANSWER" in tui.screen_text(), 20, "the turn in the TUI", tui.screen_text)
            assert tui.proc.poll() is None  # the same session process ran it
            main_requests = [r for r in server.requests if "FIRST-ANSWER" in str(r.body) or "start" in str(r.body)]
            assert main_requests, "the second turn carries the first one's history"
            product.expect_matching(2, settle=3.0)  # one turn, one notification
        finally:
            tui.close()


def test_claude_reply_resumes_when_the_session_is_closed(tmp_path: Path) -> None:
    """The session ended (print mode: its process is gone): the reply resumes it, reported as such."""
    script = {"main": [ClaudeText("FIRST-ANSWER"), ClaudeText("SECOND-ANSWER")]}
    with FakeMessages(script) as server, wake_product(tmp_path, server, "claude") as (product, home):
        assert run_claude(home, "start").returncode == 0
        [first] = product.expect_matching(1, deadline=60)
        tap(continue_button(first))
        product.wait_until(lambda: len(product.messages()) >= 2, 90, "the second notification")
        [record] = wake_records(product)
        assert (record["status"], record.get("via"), record.get("delivery")) == ("confirmed", "exec", "resumed")


def test_codex_reply_is_queued_into_the_thread_open_in_the_tui(tmp_path: Path) -> None:
    """The Codex TUI stays open on its thread; the Continue tap is queued into that thread
    (`codex queue … --resume`) and runs there: one more turn in the same rollout, shown in the same
    TUI, and one later notification."""
    script = {"root": [Text("FAKE-FINAL: first")]}
    with (
        FakeResponses(script, fallback=Text("FAKE-FINAL: the queued turn")) as server,
        wake_product(tmp_path, server, "codex") as (product, home),
    ):
        assert isinstance(home, CodexHome)
        tui = CodexTui.start_codex(
            home, "--dangerously-bypass-approvals-and-sandbox", "--dangerously-bypass-hook-trust", "start"
        )
        try:
            continue_into_the_open_session(product, deadline=90)
            assert "FAKE-FINAL: the queued turn" in product.messages()[1]["message"]
            assert [t["last_agent_message"] for t in codex_turns(home)] == [
                "FAKE-FINAL: first",
                "FAKE-FINAL: the queued turn",
            ]
            assert len(home.root_rollouts()) == 1, "the same thread, not a new one"
            aa.wait_until(lambda: PROMPT in tui.screen_text(), 20, "the reply in the TUI", tui.screen_text)
            assert tui.proc.poll() is None  # the TUI's own session ran it
            product.expect_matching(2, settle=3.0)  # one turn, one notification
        finally:
            tui.close()
