"""One scenario per agent delivered through the real ntfy server (2.11) instead of the stand-in.

The real `codex` and `claude` CLIs (either agent set, `DONEBELL_E2E_AGENTS`), the real supervisor,
and a real `ntfy serve` with `deny-all` and donebell's own token: the notification is read back
from the server's cache, exactly one, with the wording the stand-in scenarios expect.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.fake_messages import FakeMessages
from support.fake_messages import Text as ClaudeText
from support.fake_responses import FakeResponses, Text
from support.ntfy_real import RealNtfy, serve_module

from e2e.harness import make_claude_home, make_codex_home, run_claude, run_codex
from e2e.notes import done
from e2e.product import Product
from e2e.product_scenarios import sent_receipts

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("agent_clis")]

TITLE = "work"


@pytest.fixture(scope="module")
def ntfy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RealNtfy, str]]:
    """deny-all, `donebell` with rw on donebell-*; loopback exempt from the request limit (the
    product's read-back polls every 50 ms; the limits have their own tests)."""
    for server in serve_module(
        tmp_path_factory.mktemp("ntfy-e2e"), default_access="deny-all", visitor_request_limit_exempt_hosts="127.0.0.1"
    ):
        server.user_add("donebell", "pw-e2e")
        server.access("donebell", "donebell-*", "rw")
        yield server, server.token_add("donebell")


def test_codex_done_reaches_the_real_server(tmp_path: Path, ntfy: tuple[RealNtfy, str]) -> None:
    server, token = ntfy
    with (
        FakeResponses({"root": [Text("FAKE-FINAL: hello real ntfy")]}) as model,
        Product(tmp_path, topic="donebell-e2e-codex", ntfy=server, ntfy_token=token) as product,
    ):
        home = make_codex_home(tmp_path, model, extra_env=product.agent_env())
        product.install(codex=home)
        product.start()
        run = run_codex(home, "say hello")
        assert run.returncode == 0, run.describe()
        thread = str(home.session_meta(home.root_rollout())["id"])
        [stored] = product.expect([done(TITLE, "FAKE-FINAL: hello real ntfy", thread)])
        [receipt] = sent_receipts(product)
        assert receipt["message_id"] == stored["id"] and receipt["server"] == server.url
        product.assert_healthy()


def test_claude_done_reaches_the_real_server(tmp_path: Path, ntfy: tuple[RealNtfy, str]) -> None:
    server, token = ntfy
    with (
        FakeMessages({"main": [ClaudeText("FAKE-FINAL: hello real ntfy")]}) as model,
        Product(tmp_path, topic="donebell-e2e-claude", ntfy=server, ntfy_token=token) as product,
    ):
        home = make_claude_home(tmp_path, model, extra_env=product.agent_env())
        product.install(claude=home)
        product.start()
        run = run_claude(home, "say hello")
        assert run.returncode == 0, run.describe()
        [transcript] = home.transcripts()
        [stored] = product.expect([done(TITLE, "FAKE-FINAL: hello real ntfy", transcript.stem)])
        [receipt] = sent_receipts(product)
        assert receipt["message_id"] == stored["id"] and receipt["server"] == server.url
        product.assert_healthy()
