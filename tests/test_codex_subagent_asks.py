"""A Codex subagent's permission request: the hook and the rollout reader key it alike (issue 34
item 10): one request, one push.

Recorded on Codex 0.171 (tests/fixtures/approvals/codex/exec-approve-for-me-subagent/): the
PermissionRequest payload names the root thread as ``session_id``, the child as ``agent_id``, and
the child's turn and rollout; the local scanner reads the child's rollout as the child thread's.
The hook keyed the request by the root thread, the scanner by the child: two records of one
call. Here the recorded payload goes through the real hook process, the recorded child rollout
(its reviewer made the user, as in the TUI) through the real scan engine, the child thread held
open by a real process.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.scanner_kit import engine, today_folder
from test_codex_rollout_asks import HOLD, Codex, opened

pytestmark = pytest.mark.usefixtures("no_outside_config")

RECORDED = Path(__file__).parent / "fixtures" / "approvals" / "codex" / "exec-approve-for-me-subagent"
PAYLOAD = json.loads((RECORDED / "hooks.jsonl").read_text().splitlines()[0])["payload"]
CHILD_LINES = (RECORDED / "child.rollout.jsonl").read_bytes().splitlines(keepends=True)
CHILD, ROOT = PAYLOAD["agent_id"], PAYLOAD["session_id"]
#: The child's rollout when the hook ran: up to the call's token_usage_record (42612 bytes).
ASKING = [
    line.replace(b'"approvals_reviewer":"auto_review"', b'"approvals_reviewer":"user"') for line in CHILD_LINES[:11]
]


class ChildCodex(Codex):
    """The Codex home of tests/test_codex_rollout_asks.py, with the child's rollout and lock."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.rollout = today_folder(self.home) / f"rollout-2026-12-06T20-45-38-{CHILD}.jsonl"
        self.lock = self.home / "thread-writer-locks" / f"{CHILD}.lock"
        self.lock.touch()


@pytest.fixture()
def codex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Codex]:
    yield from opened(ChildCodex(tmp_path), monkeypatch)


def test_the_payload_is_as_recorded() -> None:
    assert ROOT != CHILD and PAYLOAD["turn_id"] in CHILD_LINES[5].decode()
    assert sum(len(line) for line in CHILD_LINES[:11]) == 42612 and b'"approvals_reviewer":"user"' in b"".join(ASKING)
    assert HOLD  # the lock holder the parent world starts


def test_a_subagents_request_is_one_record_whoever_sees_it_first(codex: Codex) -> None:
    codex.open_thread()
    codex.write(ASKING)
    result = codex.hooks.run("codex-permission", stdin={**PAYLOAD, "transcript_path": str(codex.rollout)})
    assert (result.returncode, result.stdout) == (0, b""), result
    codex.scan()
    codex.engine = engine(codex.state, codex.home)  # a restarted scanner too
    codex.scan()
    [record] = codex.needs()
    assert record["source"] == "codex-permissionrequest"
    assert (record["thread_id"], record["root_thread_id"], record["turn_id"]) == (CHILD, ROOT, PAYLOAD["turn_id"])


def test_the_scanner_first_then_the_hook_is_one_record_too(codex: Codex) -> None:
    """The scanner saw the child's waiting call before the hook ran (its record keyed at the
    rollout's size then); the hook's signal at that same size is the same request."""
    codex.open_thread()
    codex.write(ASKING)
    codex.scan()
    [scanned] = codex.needs()
    assert scanned["thread_id"] == CHILD
    result = codex.hooks.run("codex-permission", stdin={**PAYLOAD, "transcript_path": str(codex.rollout)})
    assert result.returncode == 0
    assert [r["key"] for r in codex.needs()] == [scanned["key"]]
