"""The real Copilot CLI's failures, interrupts and refused calls in print mode, through the whole product.

Copilot retries 429/529/500 five times and 401 twice (one `errorOccurred` hook per attempt, every
one `recoverable: true`), never 400; the failure itself is `sessionEnd` `reason: "error"` with no
`agentStop`: one "failed" push, none per attempt. SIGINT ends the session with `sessionEnd`
`complete` and no `agentStop` (only the log's `abort` record tells): one "stopped", never "done".
`-p` without `--allow-all-tools` fires a `permission_prompt` notification for a call it has
already denied (nobody is asked): no "needs you" for it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from donebell.shared.text.short_id import short_id
from support.fake_copilot import FakeCopilot, Stall, Text, retried_error, shell

from e2e.copilot_harness import run_copilot, run_copilot_interrupted
from e2e.copilot_product import copilot_product, kinds, only_session
from e2e.notes import ORIGIN, done, stopped
from e2e.product import Product
from e2e.product_scenarios import sent_receipts
from e2e.recorder import Recorder

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("copilot_cli")]

TITLE = "work"
RECORDED = ("agentStop", "notification", "errorOccurred", "sessionEnd")


def expect_one_failure(product: Product, session: str) -> str:
    """Exactly one push, a "failed" one for this session; its message."""
    [note] = product.expect_matching(1, deadline=40)
    assert kinds([note]) == ["failed"] and note["title"] == TITLE, note
    assert note["message"].startswith("failed: "), note
    assert note["message"].endswith(f" · {ORIGIN} · #{short_id(session)}"), note
    [receipt] = sent_receipts(product)
    assert receipt["outcome"] == "failed" and receipt["session_id"] == session, receipt
    return str(note["message"])


@pytest.mark.parametrize("status", [529, 429])
def test_copilot_api_error_after_retries(tmp_path: Path, recorder: Recorder, status: int) -> None:
    """Six attempts, six recoverable errorOccurred, one sessionEnd(error): one "failed"."""
    with (
        FakeCopilot({"main": [retried_error(status)] * 6}) as server,
        copilot_product(tmp_path, server, hooks=recorder.hooks(*RECORDED)) as (product, home),
    ):
        run = run_copilot(home, "overload me")
        assert run.returncode == 1, run.describe()
        assert len(server.served()) == 6 and not server.unscripted
        recorder.settle()
        assert recorder.labels() == ["errorOccurred"] * 6 + ["sessionEnd"]
        assert all(p["recoverable"] for p in recorder.payloads("errorOccurred"))
        assert recorder.payloads("sessionEnd")[0]["reason"] == "error"
        expect_one_failure(product, only_session(home))
        product.assert_healthy()


@pytest.mark.parametrize(("status", "attempts"), [(400, 1), (401, 3)])
def test_copilot_api_error_not_retried_to_the_end(
    tmp_path: Path, recorder: Recorder, status: int, attempts: int
) -> None:
    """400 is not retried, 401 twice: one "failed" either way."""
    with (
        FakeCopilot({"main": [retried_error(status)] * attempts}) as server,
        copilot_product(tmp_path, server, hooks=recorder.hooks(*RECORDED)) as (product, home),
    ):
        run = run_copilot(home, "bad request")
        assert run.returncode == 1, run.describe()
        assert len(server.served()) == attempts and not server.unscripted
        recorder.settle()
        assert recorder.labels() == ["errorOccurred"] * attempts + ["sessionEnd"]
        expect_one_failure(product, only_session(home))
        product.assert_healthy()


def test_copilot_sigint(tmp_path: Path, recorder: Recorder) -> None:
    """Ctrl-C while the model streams: sessionEnd(complete), no agentStop; one "stopped"."""
    with (
        FakeCopilot({"main": [Stall()]}) as server,
        copilot_product(tmp_path, server, hooks=recorder.hooks(*RECORDED)) as (product, home),
    ):
        run = run_copilot_interrupted(home, server, "hang", timeout=30)
        assert not run.timed_out and run.returncode == 0, run.describe()
        recorder.settle()
        assert recorder.labels() == ["sessionEnd"]
        assert recorder.payloads("sessionEnd")[0]["reason"] == "complete"
        session = only_session(home)
        product.expect([stopped(TITLE, session)], deadline=40)
        assert "abort" in home.event_types(session)
        product.assert_healthy()


def test_copilot_print_without_allow_all_tools(tmp_path: Path, recorder: Recorder) -> None:
    """`-p` without `--allow-all-tools`: the call is denied unasked although a `permission_prompt`
    notification fires; no "needs you", one "done" for the final answer."""
    script = {"main": [shell("touch approval-marker.txt", text="Making the marker."), Text("FINAL after the refusal")]}
    with (
        FakeCopilot(script) as server,
        copilot_product(tmp_path, server, hooks=recorder.hooks(*RECORDED)) as (product, home),
    ):
        run = run_copilot(home, "make the marker", allow_all_tools=False)
        assert run.returncode == 0, run.describe()
        assert not (home.workdir / "approval-marker.txt").exists()
        assert len(server.served()) == 2
        recorder.settle()
        assert [p["notification_type"] for p in recorder.payloads("notification")] == ["permission_prompt"]
        product.expect([done(TITLE, "FINAL after the refusal", only_session(home))])
        product.assert_healthy()
