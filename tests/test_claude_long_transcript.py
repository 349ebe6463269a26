"""Long Claude transcripts: a goal marker or a prompt start far from the end stays correct and bounded.

The hook's baseline lookup reads only the last 1 MiB and the gate's reverse scan at most 16 MiB;
beyond that the local scanner's cursor of the transcript (``watch/claude/``) is the index: it
has folded every line and knows the newest goal marker and where the newest prompt began.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from donebell.shared import ingest, records
from donebell.shared.keys import claude_session_key, event_key
from donebell.shared.statedir import StateDir
from donebell.workers.agents.claude.tail import ClaudeTail
from fixtures.gate.kit import fast_settings, gate, last_decision, where
from support.hooks_harness import HookEnv

SESSION = "5e55a0b1-0000-4000-8000-000000000001"


def rec(kind: str, **fields: Any) -> bytes:
    return json.dumps({"type": kind, "isSidechain": False, "sessionId": SESSION, **fields}).encode() + b"\n"


def user(prompt: str, text: str = "go") -> bytes:
    return rec("user", promptId=prompt, uuid=f"u-{prompt}", message={"role": "user", "content": text})


def goal(uuid: str, *, met: bool) -> bytes:
    return rec("attachment", uuid=uuid, attachment={"type": "goal_status", "met": met, "condition": "c"})


def filler(megabytes: int) -> bytes:
    """Big tool-result-sized attachments (2.1.332 writes ~32-56 KB prompt_snapshot records)."""
    line = rec("attachment", attachment={"type": "prompt_snapshot", "blob": "x" * (48 << 10)})
    return line * ((megabytes << 20) // len(line) + 1)


def reply(text: str) -> bytes:
    return rec(
        "assistant", uuid=f"a-{text}", message={"stop_reason": "end_turn", "content": [{"type": "text", "text": text}]}
    )


def indexed(state: StateDir, claude_dir: Path, path: Path, data: bytes) -> ClaudeTail:
    """The scanner saw the transcript appear and folded it (its cursor is the index)."""
    tail = ClaudeTail(state, claude_dir, idle_grace=0.0, origin=None, include_message=False)
    tail.scan(full=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    tail.scan(full=False)
    return tail


@pytest.mark.parametrize("with_index", [True, False])
def test_goal_baseline_more_than_1_mib_back(tmp_path: Path, with_index: bool) -> None:
    """UserPromptSubmit of a new prompt while a goal set 3 MiB earlier is still active: the
    baseline is that marker (from the index); without an index the hook says it did not look."""
    hooks = HookEnv(tmp_path)
    state = StateDir(hooks.state_dir).ensure()
    path = hooks.claude_dir / "projects" / "-p" / f"{SESSION}.jsonl"
    data = user("p1") + goal("g-active", met=False) + filler(3) + reply("one")
    if with_index:
        indexed(state, hooks.claude_dir, path, data)
    else:
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
    payload = {"hook_event_name": "UserPromptSubmit", "session_id": SESSION, "prompt_id": "p2"}
    hooks.claude({**payload, "transcript_path": str(path), "cwd": "/home/dev/p", "prompt": "next"})
    session = state.read("claude", claude_session_key(SESSION))
    assert session is not None
    if with_index:
        assert session["goal_scan"]["status"] == "found-in-index"
        assert (session["goal_baseline"]["uuid"], session["goal_baseline"]["met"]) == ("g-active", False)
    else:
        assert session["goal_scan"]["status"] == "not-in-window" and session["goal_baseline"] is None


@pytest.mark.parametrize("with_index", [True, False])
def test_prompt_start_and_marker_more_than_16_mib_back(
    isolated_env: dict[str, Path], state: StateDir, with_index: bool
) -> None:
    """A prompt whose tool output fills 17 MiB and whose goal is met: the gate promotes it as
    "goal met" from the index; without one its start is out of reach (unknown evidence, retried)."""
    claude_dir = isolated_env["claude_dir"]
    path = claude_dir / "projects" / "-p" / f"{SESSION}.jsonl"
    data = user("p1") + goal("g-met", met=True) + filler(17) + reply("done")
    if with_index:
        indexed(state, claude_dir, path, data)
        state.remove("pending", event_key("claude", SESSION, "p1"))  # keep only the hook's candidate
    else:
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
    old = time.time() - 30
    os.utime(path, (old, old))
    key = event_key("claude", SESSION, "p1")
    candidate = records.new_candidate(
        key=key, provider="claude", source="claude-stop", session_id=SESSION, prompt_id="p1",
        transcript_path=str(path), claude_epoch=0, outcome="done",
    )  # fmt: skip
    assert ingest.submit_candidate(state, candidate) == "created"
    gate(state, fast_settings(), time.time() + 5)
    if with_index:
        assert where(state, key) == "outbox"
        assert last_decision(state, key)["record"].get("goal") == "met"
    else:
        assert where(state, key) == "pending"
        assert last_decision(state, key)["last"]["reason"] == "prompt-not-in-transcript"
