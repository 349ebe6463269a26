"""Allow / Deny through the real ntfy server (2.11) with access control, and the real Codex CLI.

The safe setup docs/approvals.md names: `deny-all`, donebell's own user reading and writing its
topics, and a phone user that may only write the reply topic (its token is `wake_token`, carried
by the buttons). The tap is the ntfy app's request; the server itself refuses a tap without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.fake_responses import FakeResponses
from support.ntfy_real import RealNtfy, serve_module

from e2e import approval_agents as aa
from e2e.agent_proc import start_agent
from e2e.harness import make_codex_home
from e2e.product import Product
from e2e.test_approvals_answer_e2e import button, needs_you, wait_reply
from e2e.test_approvals_e2e import codex_call_outcome
from e2e.test_wake import tap

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("agent_clis")]

REPLIES = "donebell-e2e-replies"


@pytest.fixture(scope="module")
def ntfy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RealNtfy, str, str]]:
    for server in serve_module(
        tmp_path_factory.mktemp("ntfy-approvals"),
        default_access="deny-all",
        visitor_request_limit_exempt_hosts="127.0.0.1",
    ):
        server.user_add("donebell", "pw-e2e")
        server.access("donebell", "donebell-*", "rw")
        server.user_add("phone", "pw-phone")
        server.access("phone", REPLIES, "wo")
        yield server, server.token_add("donebell"), server.token_add("phone")


def test_codex_allow_through_the_real_server(tmp_path: Path, ntfy: tuple[RealNtfy, str, str]) -> None:
    server, token, phone = ntfy
    config = {
        "wake_enabled": True,
        "wake_topic": REPLIES,
        "wake_token": phone,
        "approvals_enabled": True,
        "approval_wait_seconds": 60,
    }
    with (
        FakeResponses(aa.codex_asking_script()) as model,
        Product(tmp_path, config, topic="donebell-e2e-approvals", ntfy=server, ntfy_token=token) as product,
    ):
        home = make_codex_home(tmp_path, model, extra_env=product.agent_env())
        product.install(codex=home)
        product.start()
        agent = start_agent(aa.codex_asking_argv("needs approval"), cwd=home.workdir, env=home.env)
        message = needs_you(product)
        allow = button(message, "Allow")
        assert allow["headers"] == {"Authorization": f"Bearer {phone}"}, allow
        bare = httpx.post(allow["url"], content=allow["body"].encode(), timeout=10)
        assert bare.status_code == 403, bare.text  # the server's access control: no token, no tap
        tap(allow)
        run = agent.wait(90)
        assert not run.timed_out, run.describe()
        assert (home.workdir / aa.MARKER).exists(), f"{codex_call_outcome(model)}\n{run.describe()}"
        assert wait_reply(product, "answered")["decision"] == "allow"
        product.assert_healthy()
