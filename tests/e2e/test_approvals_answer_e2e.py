"""Allow / Deny from the phone with the real CLIs (issue 28 items 2 and 4), on both agent sets.

The real supervisor runs the wake role subscribed to the ntfy stand-in's reply topic; the agent's
real permission prompt reaches donebell's installed PermissionRequest hook, which waits; the test
taps a button of the needs-you push exactly as the ntfy app does (the `http` action's method, URL,
headers and body), and the agent obeys what the hook then prints. Nothing but a verified tap of
this very request allows anything: a timeout, a tampered or forged ticket, a replay, and a tap
after the desk answered all leave the agent's own path to decide.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.wake_ticket import TicketKey, issue_answer
from support.fake_messages import FakeMessages
from support.fake_responses import FakeResponses, Text, exec_command

from e2e import approval_agents as aa
from e2e.agent_proc import start_agent
from e2e.harness import ClaudeHome, CodexHome
from e2e.product import Product
from e2e.product_scenarios import claude_product, codex_product, log_entries
from e2e.test_approvals_e2e import claude_tool_results, codex_call_outcome
from e2e.test_wake import tap
from e2e.tui import ClaudeTui

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("agent_clis")]

REPLY_TOPIC = "donebell-e2e-answers"


def approvals(wait: float = 60.0) -> dict[str, Any]:
    return {
        "wake_enabled": True,
        "wake_topic": REPLY_TOPIC,
        "wake_allow_unauthenticated": True,  # the stand-in runs without auth here
        "approvals_enabled": True,
        "approval_wait_seconds": wait,
    }


def needs_you(product: Product, deadline: float = 40.0) -> dict[str, Any]:
    """The needs-you push, once it arrived."""
    found: list[dict[str, Any]] = []

    def arrived() -> bool:
        found[:] = [m for m in product.messages() if (m.get("tags") or [""])[0] == "raising_hand"]
        return bool(found)

    product.wait_until(arrived, deadline, "the needs-you push")
    return found[0]


def button(message: dict[str, Any], label: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [a for a in message.get("actions") or [] if a.get("label") == label]
    assert len(found) == 1, message
    return found[0]


def replies(product: Product) -> list[dict[str, Any]]:
    return product.records("wake/replies")


def wait_reply(product: Product, status: str, timeout: float = 20.0) -> dict[str, Any]:
    found: list[dict[str, Any]] = []

    def done() -> bool:
        found[:] = [r for r in replies(product) if r.get("status") == status]
        return bool(found)

    product.wait_until(done, timeout, f"a wake reply {status}")
    return found[-1]


def tampered(action: dict[str, Any]) -> dict[str, Any]:
    head, claims, mac = action["body"].split(".")
    flipped = claims[:-1] + ("A" if claims[-1] != "A" else "B")
    return {**action, "body": f"{head}.{flipped}.{mac}"}


def forged(action: dict[str, Any]) -> dict[str, Any]:
    """The same claims, signed with a key that is not this host's."""
    import base64
    import json

    claims = json.loads(base64.urlsafe_b64decode(action["body"].split(".")[1] + "=="))
    body, _ = issue_answer(
        TicketKey(claims["h"], os.urandom(32)),
        provider=claims["p"],
        conversation_id=claims["c"],
        turn_id=claims["u"],
        request=claims["r"],
        digest=claims["d"],
        decision="allow",
        expires_at=claims["e"],
    )
    return {**action, "body": body}


# ---- Codex: exec --approve-for-me, an escalated call ---------------------------------------


@pytest.mark.parametrize("answer", ["Allow", "Deny"])
def test_codex_tap_answers_the_prompt(tmp_path: Path, answer: str) -> None:
    with (
        FakeResponses(aa.codex_asking_script()) as server,
        codex_product(tmp_path, server, config=approvals()) as (product, home),
    ):
        assert isinstance(home, CodexHome)
        agent = start_agent(aa.codex_asking_argv("needs approval"), cwd=home.workdir, env=home.env)
        message = needs_you(product)
        assert [a["label"] for a in message["actions"]] == ["Allow", "Deny"], message
        tapped_at = time.monotonic()
        tap(button(message, answer))
        run = agent.wait(90)
        assert not run.timed_out, run.describe()
        told = codex_call_outcome(server)
        if answer == "Allow":
            assert (home.workdir / aa.MARKER).exists(), f"{told}\n{run.describe()}"
            assert "approval-ran" in told, told
        else:
            assert not (home.workdir / aa.MARKER).exists(), run.describe()
            assert "Denied from the phone (donebell)." in told, told
        assert time.monotonic() - tapped_at < 30
        assert wait_reply(product, "answered")["decision"] == answer.lower()
        tap(button(message, answer))  # the same button again: a replay answers nothing
        refused = wait_reply(product, "refused")
        assert refused["reason"] in ("replay", "already-answered"), refused
        [done] = [m for m in product.expect_matching(2, deadline=40) if m["tags"][0] == "white_check_mark"]
        assert done["message"].startswith(aa.CODEX_FINAL) or done, done
        product.assert_healthy()


def test_codex_timeout_forged_and_tampered_taps_allow_nothing(tmp_path: Path) -> None:
    """A tampered and a forged Allow are refused; the wait runs out and Codex's own review
    decides; the real Allow tapped after that is refused as already answered."""
    with (
        FakeResponses(aa.codex_asking_script()) as server,
        codex_product(tmp_path, server, config=approvals(wait=8)) as (product, home),
    ):
        assert isinstance(home, CodexHome)
        agent = start_agent(aa.codex_asking_argv("needs approval"), cwd=home.workdir, env=home.env)
        message = needs_you(product)
        allow = button(message, "Allow")
        tap(tampered(allow))
        tap(forged(allow))
        run = agent.wait(90)
        assert not run.timed_out, run.describe()
        assert not (home.workdir / aa.MARKER).exists(), run.describe()
        assert "Automatic approval review failed" in codex_call_outcome(server)
        [entry] = log_entries(
            product, hook="codex-permission", msg="approval: stopped waiting; the agent's own dialog decides"
        )
        assert entry["reason"] == "timeout", entry
        tap(allow)
        late = wait_reply(product, "refused")
        assert late["reason"] in ("expired", "already-answered"), late  # its ticket ended with the wait
        assert not (home.workdir / aa.MARKER).exists()
        assert [r for r in replies(product) if r.get("status") == "answered"] == []


def test_codex_another_requests_allow_answers_nothing(tmp_path: Path) -> None:
    """Two escalated calls in one turn: the first is denied from the phone; while the second one
    waits, the first push's Allow (validly signed, never used) is tapped: it is refused, the second
    command does not run, and the second wait ends on its own (Codex's own review decides)."""
    first, second = "touch marker-a.txt && echo a-ran", "touch marker-b.txt && echo b-ran"
    script = {
        "root": [
            exec_command(first, sandbox_permissions="require_escalated", justification="Make marker A"),
            exec_command(second, sandbox_permissions="require_escalated", justification="Make marker B"),
            Text(aa.CODEX_FINAL),
        ]
    }
    with (
        FakeResponses(script) as server,
        codex_product(tmp_path, server, config=approvals(wait=8)) as (product, home),
    ):
        assert isinstance(home, CodexHome)
        agent = start_agent(aa.codex_asking_argv("needs approval twice"), cwd=home.workdir, env=home.env)
        push_a = needs_you(product)
        tap(button(push_a, "Deny"))
        assert wait_reply(product, "answered")["decision"] == "deny"

        def second_push() -> bool:
            return len([m for m in product.messages() if (m.get("tags") or [""])[0] == "raising_hand"]) >= 2

        product.wait_until(second_push, 40, "the second request's needs-you push")
        tap(button(push_a, "Allow"))  # request A's ticket, while request B waits
        refused = wait_reply(product, "refused")
        assert refused["reason"] in ("already-answered", "unknown-request"), refused
        [answered] = [r for r in replies(product) if r.get("status") == "answered"]
        assert refused["request"] == answered["request"], (refused, answered)  # A's ticket, refused
        run = agent.wait(90)
        assert not run.timed_out, run.describe()
        assert not (home.workdir / "marker-a.txt").exists() and not (home.workdir / "marker-b.txt").exists()
        waits = log_entries(
            product, hook="codex-permission", msg="approval: stopped waiting; the agent's own dialog decides"
        )
        assert [e["reason"] for e in waits] == ["timeout"], waits  # B ended on its own, not on A's ticket
        assert [r["decision"] for r in replies(product) if r.get("status") == "answered"] == ["deny"]


# ---- Claude: the interactive TUI (both versions) --------------------------------------------


@contextlib.contextmanager
def claude_tui_asking(tmp_path: Path) -> Iterator[tuple[FakeMessages, Product, ClaudeHome, ClaudeTui]]:
    """The TUI asked for the scripted call under a product with approvals on; closed after."""
    with (
        FakeMessages(aa.claude_asking_script(), fallback=aa.CLAUDE_FALLBACK) as server,
        claude_product(tmp_path, server, config=approvals()) as (product, home),
    ):
        assert isinstance(home, ClaudeHome)
        tui = aa.start_claude_tui_asking(home)
        try:
            yield server, product, home, tui
        finally:
            aa.close_tui(tui)


@pytest.mark.parametrize("answer", ["Allow", "Deny"])
def test_claude_tui_tap_answers_the_prompt(tmp_path: Path, answer: str) -> None:
    with claude_tui_asking(tmp_path) as (server, product, home, tui):
        message = needs_you(product)
        tap(button(message, answer))
        expected = "approval-ran" if answer == "Allow" else "Denied from the phone (donebell)."
        told = lambda: any(expected in t for t in claude_tool_results(server))  # noqa: E731
        aa.wait_until(told, 30, "the call's outcome sent to the model", tui.screen_text)
        assert (home.workdir / aa.MARKER).exists() is (answer == "Allow"), tui.screen_text()[-2000:]
        assert wait_reply(product, "answered")["decision"] == answer.lower()
    assert (home.workdir / aa.MARKER).exists() is (answer == "Allow")


def test_claude_tui_desk_first_refuses_the_phones_late_allow(tmp_path: Path) -> None:
    """The dialog refused at the terminal while the hook waits: the phone's Allow, tapped
    afterwards, is refused as already answered, runs nothing, and the card is cleared."""
    with claude_tui_asking(tmp_path) as (server, product, home, tui):
        message = needs_you(product)
        aa.wait_until(lambda: aa.dialog_count(tui) >= 1, 30, "the dialog", lambda: tui.screen_text()[-2000:])
        time.sleep(1.0)  # keys typed while the dialog still draws are lost
        os.write(tui.master, b"\x1b")  # "No" at the desk
        # Claude stops the waiting hook (SIGKILL: it cannot close the request) and writes the
        # refusal's tool_result: the wake role reads that as the desk's answer.
        aa.wait_until(lambda: _refused_at_desk(home), 20, "the desk's refusal in the transcript", tui.screen_text)
        tap(button(message, "Allow"))
        late = wait_reply(product, "refused")
        assert (late["reason"], late.get("card")) == ("already-answered", "cleared"), late
        cleared = [e for e in product.standin.events(product.topic) if e.get("event") == "message_clear"]
        assert [e["sequence_id"] for e in cleared] == [message["sequence_id"]], cleared
        time.sleep(2.0)
        assert not (home.workdir / aa.MARKER).exists(), tui.screen_text()[-2000:]
        assert all("approval-ran" not in t for t in claude_tool_results(server))
    assert not (home.workdir / aa.MARKER).exists()


def _refused_at_desk(home: ClaudeHome) -> bool:
    return any(b'"tool_result"' in path.read_bytes() for path in home.project_dir.glob("*.jsonl"))
