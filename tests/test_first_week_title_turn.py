"""Issue 37, item 8: the stray candidate after the Codex TUI's first approval was the TUI's own
thread-title turn: a helper thread with no rollout and no thread row whose one input is Codex's
title prompt, which Codex reports through the legacy ``notify`` like any turn (its payload,
captured from Codex 0.171 in tests/e2e/test_needs_you_e2e.py, is the fixture). donebell made a
candidate of it that waited ``classification-unknown`` and was then suppressed ``unverifiable``;
the installed ``donebell hook codex-notify`` now records no candidate and logs what it was. A
turn whose input is anything else, even without a rollout, is still a candidate for the gate.
"""

from __future__ import annotations

import json
from pathlib import Path

from support.hooks_harness import notify_payload
from support.new_user import NewUser


def _notify(user: NewUser, payload: dict[str, object]) -> list[dict[str, object]]:
    done = user.cli("hook", "codex-notify", json.dumps(payload))
    assert done.returncode == 0, done.stderr
    return [json.loads(p.read_text()) for p in (user.state.root / "pending").glob("*.json")]


def test_the_tui_thread_title_turn_makes_no_candidate(tmp_path: Path) -> None:
    user = NewUser(tmp_path)
    user.codex.mkdir()
    assert user.cli("config", "init").returncode == 0
    title = notify_payload("tui-thread-title")
    assert _notify(user, title) == []
    log = [json.loads(line) for line in (user.state.root / "notify.log").read_text().splitlines()]
    [line] = [e for e in log if "thread-title" in str(e.get("msg"))]
    assert line["thread_id"] == title["thread-id"]
    assert not [e for e in user.json_lines("log", "--last", "0") if e["kind"] in ("waiting", "suppressed")]

    other = {**title, "thread-id": "01a24d23-0000-7000-8000-000000000001", "input-messages": ["start"]}
    [candidate] = _notify(user, other)
    assert candidate["thread_id"] == other["thread-id"]  # no rollout either: the gate still decides
