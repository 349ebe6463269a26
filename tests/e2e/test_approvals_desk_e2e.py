"""The desk is never locked out (issue 34 item 5), measured on the real Codex TUI.

While donebell's PermissionRequest hook waits for the phone, the Codex TUI shows only the hook's
label, not its approval dialog. With approvals on and every wait at its default, the wake role
subscribed (so the hook does wait), the time from the prompt (the hook's label on screen) to
Codex's own dialog on screen is measured; before, the default wait (120 s) hid it for two minutes.
The figure is written in docs/approvals.md ("The desk is never locked out").
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from donebell.shared.config.model import Settings
from support.fake_responses import FakeResponses

from e2e import approval_agents as aa
from e2e.agent_proc import start_agent
from e2e.harness import CodexHome
from e2e.product_scenarios import codex_product
from e2e.tui import CodexTui

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("agent_clis")]

#: The approval keys only: every wait stays at its default.
APPROVALS_DEFAULT_WAITS = {
    "wake_enabled": True,
    "wake_topic": "donebell-e2e-desk",
    "wake_allow_unauthenticated": True,  # the stand-in runs without auth here
    "approvals_enabled": True,
}
#: The hook's label as it starts to show (the pty redraw drops letters of the rest now and then;
#: the path on screen has no "donebell" in it).
LABEL = "donebell"
DIALOG = "Wouldyouliketorunthefollowingcommand?"


def _screen(tui: CodexTui) -> str:
    return "".join(ch for ch in tui.screen_text() if not ch.isspace() and ch not in ":;")


def _until(tui: CodexTui, text: str, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while text not in _screen(tui):
        assert time.monotonic() < deadline, f"{text!r} not on screen:\n{tui.screen_text()[-2500:]}"
        time.sleep(0.1)
    return time.monotonic()


def test_codex_tui_shows_its_own_dialog_after_the_short_interactive_wait(tmp_path: Path) -> None:
    interactive = Settings().approval_wait_interactive_seconds
    with (
        FakeResponses(aa.codex_asking_script()) as server,
        codex_product(tmp_path, server, config=APPROVALS_DEFAULT_WAITS) as (product, home),
    ):
        assert isinstance(home, CodexHome)
        product.wait_until(lambda: product.health("wake").get("subscription") == "subscribed", 30, "subscribed")
        tui = CodexTui.start_codex(home, "--dangerously-bypass-hook-trust", "-a", "on-request", "start")
        try:
            asked = _until(tui, LABEL, 60)
            shown = _until(tui, DIALOG, 60)  # before: only after approval_wait_seconds, 120 s
        finally:
            tui.close()
        [request] = [r for r in product.records("sent") + product.records("outbox") if r.get("notice") == "needs-you"]
        assert request["approval_until"] - request["promoted_at"] == pytest.approx(interactive, abs=1.0)
        hidden = shown - asked
        assert hidden <= interactive + 5.0, hidden
        print(f"prompt -> Codex's own dialog on screen: {hidden:.1f} s")  # the docs' figure (pytest -s)
        assert not product.records("dead")  # (the TUI is closed mid-turn: its candidate stays pending)


def test_codex_exec_nobody_at_its_terminal_waits_the_full_wait(tmp_path: Path) -> None:
    """`codex exec` draws no dialog: its hook waits approval_wait_seconds, not the interactive wait
    (its rollout names `codex_exec` by the time the hook runs)."""
    with (
        FakeResponses(aa.codex_asking_script()) as server,
        codex_product(tmp_path, server, config={**APPROVALS_DEFAULT_WAITS, "approval_wait_seconds": 30}) as (
            product,
            home,
        ),
    ):
        assert isinstance(home, CodexHome)
        product.wait_until(lambda: product.health("wake").get("subscription") == "subscribed", 30, "subscribed")
        agent = start_agent(aa.codex_asking_argv("needs approval"), cwd=home.workdir, env=home.env)
        found: list[dict[str, object]] = []

        def asked() -> bool:
            found[:] = [
                r for r in product.records("outbox") + product.records("sent") if r.get("notice") == "needs-you"
            ]
            return bool(found)

        product.wait_until(asked, 60, "the needs-you record")
        [request] = found
        assert float(str(request["approval_until"])) - float(str(request["promoted_at"])) == pytest.approx(30, abs=1)
        agent.wait(90)
