"""The Claude background-shell scenario, shared by the baseline suite and the release-drift one.

`claude -p` starts a shell in the background and ends its turn; the shell runs until the test
touches a release file ``hold`` seconds after the first Stop. Nothing may be sent meanwhile; then
exactly one notification, for the final turn, after the release.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.fake_messages import FakeMessages, Text, bash

from e2e.harness import start_claude
from e2e.notes import done
from e2e.product import Product
from e2e.product_scenarios import claude_product
from e2e.recorder import Recorder

TITLE = "work"  # the harness's work dir; the notification title is the project folder name


def background_shell_scenario(tmp_path: Path, recorder: Recorder, *, hold: float, final: str) -> Product:
    """Run the scenario and check it; returns the product (stopped) for further checks."""
    release = tmp_path / "release-bg"
    command = f"while [ ! -e {release} ]; do sleep 0.05; done; echo BG-DONE"
    script: dict[str, list[Any]] = {
        "main": [
            bash(command, "Wait in background", run_in_background=True),
            Text("turn end; the background shell still runs"),
            Text(final),
        ]
    }
    with (
        FakeMessages(script) as server,
        claude_product(tmp_path, server, hooks=recorder.hooks("Stop")) as (product, home),
    ):
        cli = start_claude(home, "start a background job")
        try:
            [first_stop] = recorder.wait_for("Stop", timeout=30)
            assert [t["status"] for t in first_stop["stdin"]["background_tasks"]] == ["running"]
            product.expect_none(hold)  # the shell still runs: nothing may be sent
        finally:
            release.touch()
        released = release.stat().st_mtime
        run = cli.wait(60)
        assert run.returncode == 0, run.describe()
        [transcript] = home.transcripts()
        product.expect([done(TITLE, final, transcript.stem)], after=released)
        product.assert_healthy()
    return product
