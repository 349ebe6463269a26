"""Approvals with the real CLIs (issue 28 items 2 and 4), on both agent sets.

What every scenario here stands on, checked on the real programs first: a real permission prompt
of each CLI reaches donebell's installed PermissionRequest hook, and a decision printed by a hook
(in the exact shape donebell prints, docs/approvals.md) is obeyed: allow runs the call, deny does
not, and for Codex 0.171 one field too many makes it fail closed (the call does not run).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from support import npm_clis
from support.fake_messages import FakeMessages
from support.fake_responses import FakeResponses

from e2e import approval_agents as aa
from e2e.agent_proc import start_agent
from e2e.harness import ClaudeHome, CodexHome
from e2e.product import Product
from e2e.product_scenarios import claude_product, codex_product, log_entries
from e2e.recorder import Recorder

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("agent_clis")]


def _tags(messages: list[dict[str, Any]]) -> list[str]:
    return sorted((m.get("tags") or [""])[0] for m in messages)


def _one_needs_you_and_done(product: Product) -> list[dict[str, Any]]:
    got = product.expect_matching(2, deadline=40)
    assert _tags(got) == ["raising_hand", "white_check_mark"], got
    return got


# ---- Codex: exec --approve-for-me, an escalated call ---------------------------------------

#: What Codex 0.171 does with each printed shape (measured): "runs" = allowed; "hook-deny" =
#: ``Rejected(<message>)`` without any review; "review" = the hook's output is not taken (invalid,
#: or a reserved field present: "fail closed") and Codex's own approval path decides, which with
#: the scripted model declines. None of the refused shapes turns into an allow.
CODEX_SHAPES: dict[str, tuple[Any, str]] = {
    "allow": (aa.ALLOW, "runs"),
    "allow+message": (aa.decision("allow", message="from the phone"), "runs"),
    "allow+interrupt-false": (aa.decision("allow", interrupt=False), "runs"),
    "allow+top-level-systemMessage": ({**aa.ALLOW, "systemMessage": "from the phone"}, "runs"),
    "deny+message": (aa.DENY, "hook-deny"),
    "deny": (aa.decision("deny"), "hook-deny"),
    "allow+interrupt-true": (aa.decision("allow", interrupt=True), "review"),
    "allow+updatedInput": (aa.decision("allow", updatedInput={"command": aa.COMMAND}), "review"),
    "allow+updatedPermissions": (aa.decision("allow", updatedPermissions=[]), "review"),
    "allow+unknown-field": (aa.decision("allow", foo="bar"), "review"),
    "allow-without-hookEventName": ({"hookSpecificOutput": {"decision": {"behavior": "allow"}}}, "review"),
    "silence": (b"", "review"),
    "not-json": (b"allow", "review"),
}


def codex_call_outcome(server: FakeResponses) -> str:
    """What the model was told about its call: the ``function_call_output`` Codex sent back."""
    outputs = [
        str(item.get("output"))
        for req in server.requests
        for item in (req.body or {}).get("input", [])
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    return outputs[0] if outputs else ""


@pytest.mark.parametrize("shape", list(CODEX_SHAPES))
def test_codex_calls_donebell_and_obeys_a_printed_decision(tmp_path: Path, shape: str) -> None:
    answer, outcome = CODEX_SHAPES[shape]
    records = Recorder(tmp_path / "records")
    with (
        FakeResponses(aa.codex_asking_script()) as server,
        codex_product(tmp_path, server) as (product, home),
    ):
        assert isinstance(home, CodexHome)
        aa.add_codex_hook(home, "PermissionRequest", aa.answer_command(records.dir, "answer", answer))
        run = start_agent(aa.codex_asking_argv("needs approval"), cwd=home.workdir, env=home.env).wait(90)
        assert not run.timed_out, run.describe()
        [payload] = records.payloads("answer")
        assert payload["hook_event_name"] == "PermissionRequest" and payload["tool_name"] == "Bash", payload
        assert payload["tool_input"]["command"] == aa.COMMAND, payload
        [entry] = log_entries(product, hook="codex-permission")  # donebell's own hook ran on the same prompt
        assert entry["msg"] == "needs-you recorded", product.diagnostics()
        told = codex_call_outcome(server)
        assert (home.workdir / aa.MARKER).exists() is (outcome == "runs"), f"{shape}: {told}\n{run.describe()}"
        if outcome == "hook-deny":
            expected = answer["hookSpecificOutput"]["decision"].get("message", "PermissionRequest hook denied approval")
            assert f'Rejected(\\"{expected}\\")' in told, told
        elif outcome == "review":
            assert "Automatic approval review failed" in told, told
        else:
            assert "approval-ran" in told, told
        _one_needs_you_and_done(product)
        product.assert_healthy()


# ---- Claude: the interactive TUI (both versions) --------------------------------------------

#: What Claude Code does with each printed shape (measured on 2.1.197 and 2.1.332, TUI and -p):
#: "runs"; "hook-deny" = the model is told the message (or "Permission denied by hook"); "no-opinion"
#: = the output is not taken: the TUI's dialog stays open, -p auto-denies. Unlike Codex 0.171,
#: extra decision fields do not void an allow, but a missing or wrong hookEventName does.
CLAUDE_SHAPES: dict[str, tuple[Any, str]] = {
    "allow": (aa.ALLOW, "runs"),
    "allow+message": (aa.decision("allow", message="from the phone"), "runs"),
    "allow+unknown-field": (aa.decision("allow", foo="bar"), "runs"),
    "deny+message": (aa.DENY, "hook-deny"),
    "deny": (aa.decision("deny"), "hook-deny"),
    "allow-without-hookEventName": ({"hookSpecificOutput": {"decision": {"behavior": "allow"}}}, "no-opinion"),
    "allow-wrong-hookEventName": (
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "decision": {"behavior": "allow"}}},
        "no-opinion",
    ),
    "not-json": (b"allow", "no-opinion"),
}


def claude_tool_results(server: FakeMessages) -> list[str]:
    """What the model was told about its calls (the ``tool_result`` blocks sent back), in order."""
    seen: list[str] = []
    for req in server.requests:
        for message in (req.body or {}).get("messages", []):
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result" and str(block) not in seen:
                    seen.append(str(block))
    return seen


def _check_claude_told(server: FakeMessages, answer: Any, outcome: str) -> None:
    told = claude_tool_results(server)
    if outcome == "runs":
        assert len(told) == 1 and "approval-ran" in told[0], told
    elif outcome == "hook-deny":
        expected = answer["hookSpecificOutput"]["decision"].get("message", "Permission denied by hook")
        assert len(told) == 1 and expected in told[0], told


@pytest.mark.parametrize("shape", list(CLAUDE_SHAPES))
def test_claude_tui_calls_donebell_and_obeys_a_printed_decision(tmp_path: Path, shape: str) -> None:
    """The TUI runs the hooks and its dialog at once. A shape Claude does not take leaves the dialog
    open (no done; Escape = "No" at the desk ends it without running the call)."""
    answer, outcome = CLAUDE_SHAPES[shape]
    records = Recorder(tmp_path / "records")
    hooks = {"PermissionRequest": [aa.answer_command(records.dir, "answer", answer)]}
    with (
        FakeMessages(aa.claude_asking_script(), fallback=aa.CLAUDE_FALLBACK) as server,
        claude_product(tmp_path, server, hooks=hooks) as (product, home),
    ):
        assert isinstance(home, ClaudeHome)
        tui = aa.start_claude_tui_asking(home)
        try:
            if outcome == "no-opinion":
                [needs] = product.expect_matching(1, deadline=30, settle=5)
                assert needs["tags"][0] == "raising_hand", needs
                assert aa.dialog_count(tui) >= 1, tui.screen_text()[-2000:]
            else:
                got = _one_needs_you_and_done(product)
                [done] = [m for m in got if m["tags"][0] == "white_check_mark"]
                assert done["message"].startswith(aa.CLAUDE_FINAL), done
            [payload] = records.payloads("answer")
            assert payload["tool_input"]["command"] == aa.COMMAND, payload
            assert log_entries(product, hook="claude", msg="needs-you recorded"), product.diagnostics()
            assert (home.workdir / aa.MARKER).exists() is (outcome == "runs"), tui.screen_text()[-2000:]
            _check_claude_told(server, answer, outcome)
        finally:
            aa.close_tui(tui)
        assert (home.workdir / aa.MARKER).exists() is (outcome == "runs"), "closing the TUI answered the dialog"


# ---- Claude: -p (2.1.332 asks the hook; 2.1.197 never does) ---------------------------------


@pytest.mark.parametrize("shape", list(CLAUDE_SHAPES))
def test_claude_print_calls_donebell_and_obeys_a_printed_decision(tmp_path: Path, shape: str) -> None:
    reason = aa.claude_print_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    answer, outcome = CLAUDE_SHAPES[shape]
    records = Recorder(tmp_path / "records")
    hooks = {"PermissionRequest": [aa.answer_command(records.dir, "answer", answer)]}
    with (
        FakeMessages(aa.claude_asking_script()) as server,
        claude_product(tmp_path, server, hooks=hooks) as (product, home),
    ):
        run = start_agent(aa.claude_print_argv("needs approval"), cwd=home.workdir, env=home.env).wait(90)
        assert not run.timed_out and run.returncode == 0, run.describe()
        [payload] = records.payloads("answer")
        assert payload["tool_input"]["command"] == aa.COMMAND, payload
        assert log_entries(product, hook="claude", msg="needs-you recorded"), product.diagnostics()
        assert (home.workdir / aa.MARKER).exists() is (outcome == "runs"), run.describe()
        denials = [e for e in run.stdout_json() if e.get("type") == "result"][-1].get("permission_denials") or []
        assert len(denials) == (0 if outcome == "runs" else 1), run.describe()
        _check_claude_told(server, answer, outcome)
        if outcome == "no-opinion":
            [told] = claude_tool_results(server)
            assert "needs approval" in told, told  # print mode's own auto-deny
        _one_needs_you_and_done(product)
        product.assert_healthy()


def test_claude_print_without_a_hook_answer_is_auto_denied(tmp_path: Path) -> None:
    """The baseline both print-mode versions share: no hook answer, the call is denied (2.1.197
    without ever asking the hook), so nothing donebell adds can turn silence into an allow."""
    with (
        FakeMessages(aa.claude_asking_script()) as server,
        claude_product(tmp_path, server) as (_product, home),
    ):
        run = start_agent(aa.claude_print_argv("needs approval"), cwd=home.workdir, env=home.env).wait(90)
        assert not run.timed_out and run.returncode == 0, run.describe()
        assert not (home.workdir / aa.MARKER).exists()
        [result] = [e for e in run.stdout_json() if e.get("type") == "result"]
        assert len(result.get("permission_denials") or []) == 1, (npm_clis.claude_version(), run.describe())


# ---- a hook that answers only after its timeout: nothing is allowed ------------------------
# What donebell's waiting hook relies on when it is killed before the phone answers (the most
# reported failure): the agent goes on as if the hook had been silent, and a late allow counts for
# nothing. The fixed-answer hook ignores SIGTERM, so its allow is still printed after the timeout.

LATE = {"timeout": 3, "delay": 8.0}


def test_codex_hook_past_its_timeout_allows_nothing(tmp_path: Path) -> None:
    records = Recorder(tmp_path / "records")
    with (
        FakeResponses(aa.codex_asking_script()) as server,
        codex_product(tmp_path, server) as (product, home),
    ):
        assert isinstance(home, CodexHome)
        late = aa.answer_command(records.dir, "answer", aa.ALLOW, delay=LATE["delay"])
        aa.add_codex_hook(home, "PermissionRequest", late, timeout=int(LATE["timeout"]))
        run = start_agent(aa.codex_asking_argv("needs approval"), cwd=home.workdir, env=home.env).wait(90)
        assert not run.timed_out, run.describe()
        assert records.payloads("answer"), "the hook never ran"
        told = codex_call_outcome(server)
        assert "Automatic approval review failed" in told, told  # Codex's own path decided
        assert run.duration_s >= LATE["timeout"], run.describe()  # it did wait for the hook
        assert not (home.workdir / aa.MARKER).exists(), run.describe()
        _one_needs_you_and_done(product)


def test_claude_print_hook_past_its_timeout_allows_nothing(tmp_path: Path) -> None:
    reason = aa.claude_print_skip_reason()
    if reason is not None:
        pytest.skip(reason)
    records = Recorder(tmp_path / "records")
    with (
        FakeMessages(aa.claude_asking_script()) as server,
        claude_product(tmp_path, server) as (product, home),
    ):
        late = aa.answer_command(records.dir, "answer", aa.ALLOW, delay=LATE["delay"])
        aa.add_claude_hook(home, "PermissionRequest", late, timeout=int(LATE["timeout"]))
        run = start_agent(aa.claude_print_argv("needs approval"), cwd=home.workdir, env=home.env).wait(90)
        assert not run.timed_out and run.returncode == 0, run.describe()
        assert records.payloads("answer"), "the hook never ran"
        assert not (home.workdir / aa.MARKER).exists(), run.describe()
        [told] = claude_tool_results(server)
        assert "needs approval" in told, told  # print mode's own auto-deny
        _one_needs_you_and_done(product)


def test_claude_tui_hook_past_its_timeout_leaves_the_dialog(tmp_path: Path) -> None:
    """The TUI keeps its dialog open when the hook times out, and the late allow does not answer it."""
    records = Recorder(tmp_path / "records")
    with (
        FakeMessages(aa.claude_asking_script(), fallback=aa.CLAUDE_FALLBACK) as server,
        claude_product(tmp_path, server) as (product, home),
    ):
        assert isinstance(home, ClaudeHome)
        late = aa.answer_command(records.dir, "answer", aa.ALLOW, delay=LATE["delay"])
        aa.add_claude_hook(home, "PermissionRequest", late, timeout=int(LATE["timeout"]))
        tui = aa.start_claude_tui_asking(home)
        try:
            records.wait_for("answer", timeout=30)
            time.sleep(LATE["delay"] + 3)  # past the timeout and past the late allow
            assert aa.dialog_count(tui) >= 1, tui.screen_text()[-2000:]
            assert not (home.workdir / aa.MARKER).exists(), tui.screen_text()[-2000:]
            assert claude_tool_results(server) == [], server.requests
            [needs] = product.expect_matching(1, deadline=5, settle=1)
            assert needs["tags"][0] == "raising_hand", needs
        finally:
            aa.close_tui(tui)
        assert not (home.workdir / aa.MARKER).exists()


def test_claude_tui_desk_no_first_then_a_late_hook_allow_runs_nothing(tmp_path: Path) -> None:
    """The desk wins the race: the dialog refused at the terminal (Escape = "No") while the hook
    still waits; the hook's allow, printed afterwards within its timeout, runs nothing."""
    records = Recorder(tmp_path / "records")
    with (
        FakeMessages(aa.claude_asking_script(), fallback=aa.CLAUDE_FALLBACK) as server,
        claude_product(tmp_path, server) as (_product, home),
    ):
        assert isinstance(home, ClaudeHome)
        late = aa.answer_command(records.dir, "answer", aa.ALLOW, delay=8.0)
        aa.add_claude_hook(home, "PermissionRequest", late, timeout=30)
        tui = aa.start_claude_tui_asking(home)
        try:
            records.wait_for("answer", timeout=30)
            aa.wait_until(lambda: aa.dialog_count(tui) >= 1, 30, "the dialog", lambda: tui.screen_text()[-2000:])
            time.sleep(1.0)  # keys typed while the dialog still draws are lost
            os.write(tui.master, b"\x1b")  # "No" at the desk, while the hook still waits
            time.sleep(8.0 + 3)  # past the hook's late allow
            assert not (home.workdir / aa.MARKER).exists(), tui.screen_text()[-2000:]
            told = claude_tool_results(server)
            assert all("approval-ran" not in t for t in told), told
        finally:
            aa.close_tui(tui)
        assert not (home.workdir / aa.MARKER).exists()
