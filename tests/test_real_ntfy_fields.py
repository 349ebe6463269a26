"""What the real ntfy servers (2.11 and 2.27) store of donebell's payload, field by field (read back with ``?poll=1``).

The payload docs (docs/delivery.md, "Payload") promise title, message, tags, priority, markdown,
click and the "Open task" view action; these tests send real records through the delivery role and
compare what ntfy keeps with what donebell rendered. ntfy 2.11 predates sequence IDs (2.16): it
ignores the field, so a retry or an update shows as a second notification there; 2.27 keeps it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.statedir import now
from donebell.workers.delivery.payload import render
from support.delivery_kit import Env
from support.ntfy_real import SERVER_IDS, SERVER_SUITES, RealNtfy, serve_module

pytestmark = pytest.mark.usefixtures("no_outside_config")

THREAD = "019a22be-06d2-7621-bea7-5b13dfa14a99"
MARKDOWN = "## Summary\n\n- fixed **the parser**\n- added `tests/test_x.py`\n\nSee [the PR](https://example.com/pr/1)."


@pytest.fixture(scope="module", params=SERVER_SUITES, ids=SERVER_IDS)
def ntfy(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[RealNtfy]:
    yield from serve_module(tmp_path_factory.mktemp("ntfy-fields"), default_access=None, suite=request.param)


def _send_one(env: Env, **record: Any) -> dict[str, Any]:
    """Deliver one record through the real role; the payload donebell rendered for it."""
    rec = env.queue(**record)
    expected = render(rec, env.settings())
    role = env.role()
    role.pass_at(now())
    role.teardown()
    assert env.state.count("sent") == 1, env.all_state_text()[-2000:]
    return expected


def test_markdown_tags_priority_click_and_actions_as_stored(ntfy: RealNtfy, tmp_path: Path) -> None:
    """Every promised field arrives as sent: markdown becomes content_type text/markdown, the tags
    list stays a list in order, priority 4, click and the one view action with its URL."""
    topic = "donebell-fields-all"
    env = Env(
        tmp_path,
        server=ntfy.url,
        topic=topic,
        include_message=True,
        markdown=True,
        tags="warning,skull",
        priority=4,
        include_task_link=True,
        include_task_link_action=True,
        host_tag=True,
        origin="lab-box-2",
    )
    sent = _send_one(env, thread_id=THREAD, last_message=MARKDOWN)
    [stored] = ntfy.poll(topic)
    assert stored["title"] == sent["title"] == "donebell"
    assert stored["message"] == sent["message"] and stored["message"].startswith("## Summary\n\n- fixed **the parser**")
    assert stored["tags"] == sent["tags"] == ["warning", "skull", "lab-box-2"]
    assert stored["priority"] == sent["priority"] == 4
    assert stored["content_type"] == "text/markdown" and sent["markdown"] is True
    assert stored["click"] == sent["click"] == f"https://chatgpt.com/codex/tasks/{THREAD}"
    [action] = stored["actions"]
    assert {k: action[k] for k in ("action", "label", "url")} == sent["actions"][0]
    assert action["clear"] is False and len(action["id"]) == 10  # ntfy adds an id and the clear flag
    if ntfy.version == "2.11":
        assert "sequence_id" not in stored  # 2.11 ignores it (sequence IDs arrived in 2.16)
    else:
        assert stored["sequence_id"] == sent["sequence_id"]  # what a retry's update replaces
    assert stored["event"] == "message" and stored["topic"] == topic


def test_plain_defaults_as_stored(ntfy: RealNtfy, tmp_path: Path) -> None:
    """Defaults: no priority field (3 is omitted, ntfy omits it too), no content_type, no click or
    actions, the default tag; a failed task carries the `x` tag and its error in the message."""
    topic = "donebell-fields-plain"
    env = Env(tmp_path, server=ntfy.url, topic=topic)
    sent = _send_one(env, outcome="failed", error="tests failed: 3 of 120")
    [stored] = ntfy.poll(topic)
    assert stored["message"] == sent["message"] and stored["message"].startswith("failed: tests failed: 3 of 120")
    assert stored["tags"] == sent["tags"] == ["x"]
    for absent in ("priority", "content_type", "click", "actions"):
        assert absent not in stored and absent not in sent
    assert stored["title"] == sent["title"]
