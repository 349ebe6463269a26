"""The desk is never locked out (issue 34 item 5): in the Codex TUI a waiting PermissionRequest hook
hides Codex's own dialog, so an interactive session waits only ``approval_wait_interactive_seconds``
(10 s by default, at most 15, the figure the hook's label names), a `codex exec` one
``approval_wait_seconds``; and the user is told where approvals are turned on.

The real hook process with the recorded Codex PermissionRequest payload, pointed at a rollout that
says which client opened the thread: the recorded TUI rollout (`originator: codex-tui`) and a real
`codex exec` rollout (`codex_exec`). The real Codex TUI's dialog timing: tests/e2e/test_approvals_desk_e2e.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from donebell.shared.config.model import APPROVAL_WAIT_INTERACTIVE_MAX, Settings
from donebell.workers.agents.codex import managed
from support.delivery_kit import Env
from test_approvals import APPROVALS, Phone
from test_needs_you import recorded

pytestmark = pytest.mark.usefixtures("no_outside_config")

FIXTURES = Path(__file__).resolve().parent / "fixtures"
TUI_ROLLOUT = FIXTURES / "approvals" / "codex" / "tui-on-request-waiting.rollout.jsonl"
EXEC_ROLLOUT = FIXTURES / "codex" / "rollouts" / "simple-exec.jsonl"


def _codex_asks(phone: Phone, rollout: Path) -> float:
    """The real hook with the recorded Codex PermissionRequest in a thread whose rollout is
    ``rollout``: how long it says it will wait (its record's approval_until - promoted_at)."""
    payload = {**recorded("codex", "exec-approve-for-me-record")["PermissionRequest"]}
    payload["transcript_path"] = str(rollout)
    proc = subprocess.Popen(
        phone.hooks.argv("codex-permission"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=phone.hooks.env()
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(payload).encode())
    proc.stdin.close()
    request = phone.request()
    proc.kill()  # the wait itself is not under test here
    proc.wait(10)
    return float(request["approval_until"]) - float(request["promoted_at"])


@pytest.mark.parametrize(("rollout", "expected"), [(TUI_ROLLOUT, 10.0), (EXEC_ROLLOUT, 40.0)])
def test_an_interactive_codex_session_waits_only_briefly(tmp_path: Path, rollout: Path, expected: float) -> None:
    """Before, every Codex prompt waited approval_wait_seconds (120 s by default), the TUI's too."""
    phone = Phone(tmp_path, approval_wait_seconds=40)  # approval_wait_interactive_seconds: the default
    copy = tmp_path / rollout.name
    shutil.copy(rollout, copy)
    assert _codex_asks(phone, copy) == pytest.approx(expected, abs=1.0)


def test_a_rollout_that_cannot_be_read_counts_as_interactive(tmp_path: Path) -> None:
    phone = Phone(tmp_path, approval_wait_seconds=40)
    assert _codex_asks(phone, tmp_path / "gone.jsonl") == pytest.approx(10.0, abs=1.0)


def test_zero_means_an_interactive_session_never_waits(tmp_path: Path) -> None:
    phone = Phone(tmp_path, approval_wait_interactive_seconds=0)
    payload = {**recorded("codex", "exec-approve-for-me-record")["PermissionRequest"]}
    payload["transcript_path"] = str(TUI_ROLLOUT)
    run = subprocess.run(
        phone.hooks.argv("codex-permission"),
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=phone.hooks.env(),
        timeout=20,
    )
    assert run.returncode == 0 and run.stdout == b""
    assert "approval_until" not in phone.request()


def test_the_label_names_the_longest_interactive_wait() -> None:
    """The TUI shows the hook's label instead of its dialog while the hook runs: the label says what
    it waits for and how long, and no setting can make that figure untrue."""
    assert managed.APPROVAL_WAIT_INTERACTIVE_MAX == APPROVAL_WAIT_INTERACTIVE_MAX
    label = managed.CODEX_PERMISSION_LABEL
    assert f"waits up to {APPROVAL_WAIT_INTERACTIVE_MAX} s" in label and "Allow/Deny" in label
    assert Settings().approval_wait_interactive_seconds <= APPROVAL_WAIT_INTERACTIVE_MAX
    with pytest.raises(ValueError):
        Settings(approval_wait_interactive_seconds=APPROVAL_WAIT_INTERACTIVE_MAX + 1)


def test_turning_approvals_on_says_how_long_the_tui_hides_its_dialog(tmp_path: Path) -> None:
    env = Env(tmp_path, **{k: v for k, v in APPROVALS.items() if k != "approvals_enabled"})
    run = env.run_cli("config", "set", "approvals_enabled", "true")
    assert run.returncode == 0, run.stderr
    assert "the Codex TUI shows only donebell's hook label, not its own dialog, for up to 10 s" in run.stdout
    assert "Claude Code shows its dialog at once" in run.stdout and "up to 8 s (approval_wait_seconds)" in run.stdout
    run = env.run_cli("config", "set", "approval_wait_interactive_seconds", "5")
    assert "for up to 5 s" in run.stdout, run.stdout


def test_phone_waits_print_nothing_unasked(tmp_path: Path) -> None:
    """The note is for the approval keys only."""
    env = Env(tmp_path)
    run = env.run_cli("config", "set", "include_message", "true")
    assert run.returncode == 0 and "Allow / Deny" not in run.stdout, run.stdout
