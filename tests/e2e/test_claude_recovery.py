"""Claude transcript recovery alone: the real `claude -p` with donebell's hooks removed.

Users report Stop hooks that never fire (the VS Code extension), and Claude 2.1.332 kills the
print-mode StopFailure hook. Here donebell is installed, then its hooks are taken out of
settings.json again, so the local scanner's transcript tailer is the only signal path: it must
deliver exactly one notification, within the quiet window plus 1 s of the transcript's last write.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.fake_messages import FakeMessages, Text, api_error

from e2e.harness import ClaudeHome, run_claude
from e2e.notes import FAST_CONFIG, done, failed
from e2e.product import Product
from e2e.product_scenarios import claude_product, sent_receipts

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("agent_clis")]

TITLE = "work"


def remove_donebell_hooks(home: ClaudeHome) -> None:
    settings = home.config_dir / "settings.json"
    doc = json.loads(settings.read_text())
    assert "hooks" in doc and doc["hooks"].get("Stop"), doc  # install did wire them
    doc.pop("hooks")
    settings.write_text(json.dumps(doc))


def latency(product: Product, transcript: Path) -> float:
    [request] = [r for r in product.standin.requests if r.method == "POST"]
    return float(request.arrived_wall - transcript.stat().st_mtime)


def test_claude_recovery_without_hooks_notifies_once(tmp_path: Path) -> None:
    with (
        FakeMessages({"main": [Text("FAKE-FINAL: recovered")]}) as server,
        claude_product(tmp_path, server) as (product, home),
    ):
        remove_donebell_hooks(home)
        run = run_claude(home, "say hello")
        assert run.returncode == 0, run.describe()
        [transcript] = home.transcripts()
        product.expect([done(TITLE, "FAKE-FINAL: recovered", transcript.stem)])
        [receipt] = sent_receipts(product)
        assert receipt["sources"] == ["claude-transcript"], receipt
        assert latency(product, transcript) <= FAST_CONFIG["idle_grace_seconds"] + 1.0, product.diagnostics()
        product.assert_healthy()


def test_claude_recovery_without_hooks_reports_an_api_error(tmp_path: Path) -> None:
    with (
        FakeMessages({"main": [api_error(529)]}) as server,
        claude_product(tmp_path, server) as (product, home),
    ):
        remove_donebell_hooks(home)
        run = run_claude(home, "overload me")
        assert run.returncode == 1, run.describe()
        [transcript] = home.transcripts()
        [note] = product.expect_matching(1)
        expected = failed(TITLE, "server_error", transcript.stem)
        assert note["message"].startswith("failed: server_error · API Error: 529"), note
        assert tuple(note["tags"]) == expected.tags
        [receipt] = sent_receipts(product)
        assert receipt["sources"] == ["claude-transcript"] and receipt["outcome"] == "failed", receipt
        product.assert_healthy()
