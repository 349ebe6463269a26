""" "Needs you" with the real CLIs: install wires the PermissionRequest hooks, and a turn that asks
for permission gives one raising_hand notification besides its "done".

How Codex is made to ask offline (docs/approvals.md): `codex exec --approve-for-me` (hooks trusted
with `--dangerously-bypass-hook-trust`) and a call asking `sandbox_permissions: "require_escalated"`.
donebell's hook prints nothing, so Codex's automatic review decides (with the scripted model: it
declines); the command never runs.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from donebell.workers.agents.codex import rollout_asks
from support import npm_clis
from support.fake_messages import FakeMessages, bash
from support.fake_messages import Text as ClaudeText
from support.fake_responses import FakeResponses

from e2e.agent_proc import start_agent
from e2e.approval_agents import close_tui, codex_asking_argv, codex_asking_script
from e2e.harness import ClaudeHome, CodexHome
from e2e.notes import FAST_CONFIG
from e2e.product import Product
from e2e.product_scenarios import claude_product, codex_product, log_entries
from e2e.tui import ClaudeTui, CodexTui

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("agent_clis")]

COMMAND = "touch approval-marker.txt && echo approval-ran"
WHY = "Create the approval marker file"


def test_codex_permission_request_gives_one_needs_you_then_done(tmp_path: Path) -> None:
    script = codex_asking_script(COMMAND, WHY)
    with FakeResponses(script) as server, codex_product(tmp_path, server, config=FAST_CONFIG) as (product, home):
        assert isinstance(home, CodexHome)
        run = start_agent(codex_asking_argv("needs approval"), cwd=home.workdir, env=home.env).wait(90)
        assert not run.timed_out, run.describe()
        got = product.expect_matching(2, deadline=40)
        needs = [m for m in got if (m.get("tags") or [""])[0] == "raising_hand"]
        assert len(needs) == 1, got
        [note] = needs
        assert note["priority"] == 4 and note["title"] == "work", note
        assert note["message"].startswith(f"needs your permission: Bash · {WHY} · "), note
        assert COMMAND in note["message"]  # FAST_CONFIG has include_message on
        assert not (home.workdir / "approval-marker.txt").exists()  # the hook never allows
        [entry] = log_entries(product, hook="codex-permission")
        assert entry["msg"] == "needs-you recorded", product.diagnostics()
        product.assert_healthy()


def test_codex_tui_approval_dialog_without_a_hook_is_read_from_the_rollout(tmp_path: Path) -> None:
    """The Codex TUI waits on its approval dialog with no PermissionRequest hook to run (hooks.json
    gone, as for a hook never trusted): the local scanner reads the escalated call in the rollout,
    and once the rollout stayed quiet one needs-you push comes; nothing runs, nothing more comes."""
    script = codex_asking_script(COMMAND, WHY)
    with FakeResponses(script) as server, codex_product(tmp_path, server, config=FAST_CONFIG) as (product, home):
        assert isinstance(home, CodexHome)
        (home.codex_home / "hooks.json").unlink()
        tui = CodexTui.start_codex(home, "-a", "on-request", "start")
        try:
            started = time.monotonic()
            [note] = product.expect_matching(1, deadline=90)
            waited = time.monotonic() - started
            assert (note.get("tags") or [""])[0] == "raising_hand", note
            assert note["message"].startswith(f"needs your permission: Bash · {WHY} · "), note
            assert COMMAND in note["message"]  # FAST_CONFIG has include_message on
            assert waited >= rollout_asks.ASK_QUIET_SECONDS, waited  # not before the quiet window
            [entry] = log_entries(product, msg="needs-you recorded")
            assert entry["signal"] == "rollout", entry
            product.expect_matching(1, settle=3.0)
            assert not (home.workdir / "approval-marker.txt").exists()
        finally:
            tui.close()
        product.assert_healthy()


def test_codex_tui_approval_dialog_with_the_hook_is_one_push(tmp_path: Path) -> None:
    """The same dialog with donebell's PermissionRequest hook running too (trust bypassed for this
    run): the hook records it at once; the scanner, once the rollout stayed quiet, finds the hook's
    record and writes none: one push, not two."""
    script = codex_asking_script(COMMAND, WHY)
    with FakeResponses(script) as server, codex_product(tmp_path, server, config=FAST_CONFIG) as (product, home):
        assert isinstance(home, CodexHome)
        tui = CodexTui.start_codex(home, "--dangerously-bypass-hook-trust", "-a", "on-request", "start")
        try:
            [note] = product.expect_matching(1, deadline=60)
            assert (note.get("tags") or [""])[0] == "raising_hand", note
            product.expect_matching(1, settle=rollout_asks.ASK_QUIET_SECONDS + 5.0)  # past the scanner's look
            [entry] = log_entries(product, msg="needs-you recorded")
            assert entry.get("hook") == "codex-permission", entry
            [seen] = log_entries(product, msg="needs-you: the hook recorded this call already")
            assert seen["key"] == entry["key"], (seen, entry)  # the scanner looked, and found the hook's
        finally:
            tui.close()
        product.assert_healthy()


def test_claude_print_mode_permission_prompt(tmp_path: Path) -> None:
    """`claude -p --permission-mode default` and a Bash call: Claude 2.1.332 asks the PermissionRequest
    hook before auto-denying (one needs-you, then the done), 2.1.197 never calls it (the done only)."""
    script = {"main": [bash(COMMAND, description=WHY, text="Running it."), ClaudeText("FAKE-FINAL: approval done.")]}
    with FakeMessages(script) as server, claude_product(tmp_path, server, config=FAST_CONFIG) as (product, home):
        argv = [str(npm_clis.claude_binary()), "-p", "--output-format", "stream-json", "--verbose"]
        argv += ["--permission-mode", "default", "needs approval"]
        run = start_agent(argv, cwd=home.workdir, env=home.env).wait(90)
        assert not run.timed_out, run.describe()
        asks = npm_clis.claude_version() >= (2, 1, 332)
        got = product.expect_matching(2 if asks else 1, deadline=40)
        needs = [m for m in got if (m.get("tags") or [""])[0] == "raising_hand"]
        assert len(needs) == (1 if asks else 0), got
        for note in needs:
            assert note["priority"] == 4 and note["message"].startswith(f"needs your permission: Bash · {WHY}")
        assert not (home.workdir / "approval-marker.txt").exists()  # print mode auto-denies; the hook never allows
        product.assert_healthy()


def _wait_for_dialog(tui: ClaudeTui, seen: int, timeout: float = 60) -> None:
    """Until the permission dialog is on screen for the ``seen + 1``-th time."""
    deadline = time.monotonic() + timeout
    # The pty output draws words apart with cursor moves, not spaces: compare without whitespace.
    while "".join(tui.screen_text().split()).count("Doyouwanttoproceed?") <= seen:
        assert time.monotonic() < deadline, tui.screen_text()[-2000:]
        time.sleep(0.2)
    time.sleep(1.0)  # keys typed while the dialog still draws are lost


@contextlib.contextmanager
def _tui_dialog_open(tmp_path: Path, grace: float) -> Iterator[tuple[Product, ClaudeHome, ClaudeTui]]:
    """The real Claude TUI asked to run a command, its permission dialog open, desk grace ``grace``."""
    script = {"main": [bash("touch desk-one.txt", description="Create the first file", text="Running it.")]}
    fallback = {"title": ClaudeText('{"title": "Fake session"}'), "*": ClaudeText("FAKE-FALLBACK")}
    config = {**FAST_CONFIG, "desk_grace_seconds": grace}
    with (
        FakeMessages(script, fallback=fallback) as server,
        claude_product(tmp_path, server, config=config) as (product, home),
    ):
        tui = ClaudeTui.start(home, "--permission-mode", "default")
        try:
            tui.wait_quiet()
            tui.type("first task")
            _wait_for_dialog(tui, 0)
            yield product, home, tui
        finally:
            close_tui(tui)  # tui.close() alone would answer the open dialog "Yes" and run the call


def test_claude_tui_open_dialog_gives_one_push_after_the_grace(tmp_path: Path) -> None:
    """The interactive TUI runs the PermissionRequest hook and its dialog at once, then sends the
    permission_prompt Notification ~6 s later, after flushing the tool_use line into the transcript
    (which once made two pushes of one dialog). A dialog left open past the desk grace: exactly one
    needs-you push, held by the grace, and the command never runs."""
    with _tui_dialog_open(tmp_path, grace=3.0) as (product, _home, _tui):
        [needs] = product.expect_matching(1, deadline=30, settle=10)  # the Notification adds nothing
        assert needs["tags"][0] == "raising_hand" and needs["priority"] == 4, needs
        assert needs["message"].startswith("needs your permission: Bash · Create the first file"), needs


def test_claude_tui_answered_at_the_desk_within_the_grace_sends_nothing(tmp_path: Path) -> None:
    """A dialog answered at the terminal ("No": Escape, the refusal is written at once) within the
    desk grace: no push at all, the needs-you record ends as answered-at-desk."""
    grace = 8.0
    with _tui_dialog_open(tmp_path, grace) as (product, home, tui):
        os.write(tui.master, b"\x1b")  # "No" at the desk, well within the grace
        product.expect_none(grace + 6)
        dropped = [r for r in product.records("suppressed") if r.get("notice") == "needs-you"]
        assert [r["reason"] for r in dropped] == ["answered-at-desk"], product.diagnostics()
        assert not (home.workdir / "desk-one.txt").exists()


def approve_at_the_desk(tui: CodexTui, marker: Path) -> None:
    """Press "y" a second after the dialog is drawn: a key that arrives while the TUI still draws it
    can be lost (seen once under a loaded CI: the call never ran, the turn never ended). If the
    approved command's own file has not appeared 15 s later, the key was lost: press it again
    (``CodexTui.close`` kills the TUI, so a "y" left in the composer is never submitted)."""
    for _ in range(2):
        time.sleep(1.0)  # not wait_quiet: the TUI's status line may keep ticking under the dialog
        os.write(tui.master, b"y")
        ran_by = time.monotonic() + 15
        while time.monotonic() < ran_by:
            if marker.exists():
                return
            time.sleep(0.2)
    raise AssertionError(f"the approved command never ran:\n{tui.screen_text()[-2000:]}")


def test_codex_tui_approval_then_done_leaves_no_stray_candidate(tmp_path: Path) -> None:
    """Approved at the terminal ("y"), the call runs and the turn ends: one needs-you, one done.
    The TUI also names the new thread by a turn of a helper thread of its own (no rollout, no
    thread row) and reports it through `notify`; before issue 37 that made a candidate that
    waited `classification-unknown` and was then suppressed `unverifiable`. Now: no candidate,
    one log line saying what it was."""
    script = codex_asking_script(COMMAND, WHY)
    with FakeResponses(script) as server, codex_product(tmp_path, server, config=FAST_CONFIG) as (product, home):
        assert isinstance(home, CodexHome)
        tui = CodexTui.start_codex(home, "--dangerously-bypass-hook-trust", "-a", "on-request", "start")
        try:
            deadline = time.monotonic() + 90
            while "Yes,proceed(y)" not in "".join(tui.screen_text().split()):
                assert time.monotonic() < deadline, tui.screen_text()[-2000:]
                time.sleep(0.2)
            approve_at_the_desk(tui, home.workdir / "approval-marker.txt")
            got = product.expect_matching(2, deadline=60, settle=3.0)
            assert sorted((m.get("tags") or [""])[0] for m in got) == ["raising_hand", "white_check_mark"], got
            assert (home.workdir / "approval-marker.txt").exists()
            [title] = log_entries(product, msg_prefix="codex notify: the TUI's thread-title turn")
            [root] = [p.name for p in home.root_rollouts()]
            assert title["thread_id"] not in root  # another thread: the TUI's helper
            assert product.records("pending") == [], product.diagnostics()
            assert [r.get("reason") for r in product.records("suppressed")] == [], product.diagnostics()
        finally:
            tui.close()
        product.assert_healthy()
