"""A burst digest carries no Continue buttons, and docs/wake.md says so (issue 26 item 15).

Decision: a button continues one thread, ntfy allows three per notification and a digest stands
for any number of tasks, so a digest has none (buttons for the first three would be an arbitrary
choice the phone cannot show). A task sent alone keeps its buttons. Through the real gate and
delivery role against the ntfy stand-in."""

from __future__ import annotations

import re
from pathlib import Path

from donebell.shared.statedir import now
from support.ntfy_standin import NtfyStandin
from support.policy_kit import pending, policy_env, wire_bodies

DOCS = Path(__file__).resolve().parents[1] / "docs" / "wake.md"
WAKE = {
    "wake_enabled": True,
    "wake_topic": "replies-topic",
    "wake_allow_unauthenticated": True,
    "wake_actions": [{"label": "Continue", "prompt": "continue"}],
}


def test_a_burst_digest_has_no_buttons_and_a_single_task_keeps_them(srv: NtfyStandin, tmp_path: Path) -> None:
    env = policy_env(tmp_path, srv.url, burst_digest_threshold=3, **WAKE)
    for i in range(4):
        pending(env, cwd=f"/w/p{i}")
    role = env.role()
    try:
        role.pass_at(now())
        role.pass_at(now())
        [digest] = wire_bodies(srv)
        assert digest["title"] == "4 tasks finished" and "actions" not in digest
        pending(env, cwd="/w/alone")
        role.pass_at(now())
        alone = wire_bodies(srv)[-1]
        # Buttons are on: their absence from the digest is the rule, not a setting.
        assert [a["label"] for a in alone["actions"]] == ["Continue"]
    finally:
        role.teardown()


def test_docs_wake_says_a_digest_has_no_buttons() -> None:
    text = " ".join(DOCS.read_text("utf-8").split())
    assert re.search(r"burst digest[^.]*no buttons", text), "docs/wake.md must say a burst digest has no buttons"
