"""``donebell hook codex-stop`` and ``codex-notify`` on the real Codex 0.171.0 payloads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from donebell.shared.keys import event_key
from donebell.shared.records import new_receipt
from support.hooks_harness import HookEnv, codex_hook_payload, notify_payload, rollout_lines

ROOT = "01a22be2-8ff4-7060-90c7-45d2cf0697b5"  # the simple run's thread
ROOT_TURN = "01a22be2-9063-7c32-bfff-4b6d573f20c6"
PARENT = "01a22be3-06d2-7621-bea7-5b13dfa14a99"  # the subagent run's root thread
CHILD = "01a22be3-099d-72b3-b400-cbf3b3fc981c"
CHILD_TURN = "01a22be3-09a5-7663-9250-da7e95b36313"


@pytest.fixture()
def hooks(tmp_path: Path) -> HookEnv:
    return HookEnv(tmp_path)


def _rollout_identity(fixture: str) -> tuple[str, str]:
    """(session_meta.id, task_complete.turn_id) as the rollout scanner will read them."""
    lines = [json.loads(line) for line in rollout_lines(fixture)]
    thread = lines[0]["payload"]["id"]
    turn = next(r["payload"]["turn_id"] for r in lines if r["payload"].get("type") == "task_complete")
    return thread, turn


@pytest.mark.parametrize("scenario", ["simple", "tool", "subagent"])
def test_root_stop_before_task_complete_creates_candidate(hooks: HookEnv, scenario: str) -> None:
    """A root Stop (rollout not yet holding task_complete) becomes one pending candidate with the scanner's key."""
    from support.hooks_harness import STOP_ROLLOUT

    hooks.install_rollout(STOP_ROLLOUT[scenario], upto="task_complete")
    payload = hooks.stop_payload(scenario)
    hooks.stop(payload)
    thread, turn = _rollout_identity(STOP_ROLLOUT[scenario])
    assert payload["session_id"] == thread  # Stop's session_id is the root's session_meta.id
    rec = hooks.only("pending")
    assert rec["key"] == event_key("codex", thread, turn)
    assert (rec["provider"], rec["source"], rec["classification"]) == ("codex", "codex-stop", "root")
    assert (rec["thread_id"], rec["turn_id"], rec["root_thread_id"]) == (thread, turn, thread)
    assert rec["outcome"] is None and rec["weak_identity"] is False
    assert rec["transcript_path"] == payload["transcript_path"]
    assert rec["codex_home"] == str(hooks.codex_home) and rec["sqlite_home"] == str(hooks.codex_home)
    assert rec["last_message"] is None and rec["has_final_message"] is True
    assert hooks.counts() == {"pending": 1, "outbox": 0, "sent": 0, "suppressed": 0, "dead": 0}


def test_include_message_keeps_the_final_message(hooks: HookEnv) -> None:
    """With include_message true the candidate stores last_assistant_message; by default it does not."""
    hooks.install_rollout("simple-exec")
    hooks.write_config(include_message=True, origin="laptop")
    hooks.stop(hooks.stop_payload("simple"))
    rec = hooks.only("pending")
    assert rec["last_message"] == "Hello from the fake model. Task done."
    assert rec["origin"] == "laptop"


def test_child_notify_becomes_suppressed_receipt(hooks: HookEnv) -> None:
    """The notify Codex sends for a child thread (no client key) leaves a subagent receipt, no candidate."""
    hooks.install_rollout("subagent-child")
    payload = notify_payload("subagent--notify-1")
    assert "client" not in payload
    hooks.notify(payload)
    receipt = hooks.only("suppressed")
    assert receipt["key"] == event_key("codex", CHILD, CHILD_TURN)
    assert (receipt["status"], receipt["reason"], receipt["root_thread_id"]) == ("suppressed", "subagent", PARENT)
    assert "last_message" not in receipt
    assert hooks.counts()["pending"] == 0


def test_root_notify_merges_into_the_stop_candidate(hooks: HookEnv) -> None:
    """Stop then the legacy notify of the same turn leave one candidate carrying both sources."""
    hooks.install_rollout("simple-exec")
    hooks.stop(hooks.stop_payload("simple"))
    hooks.notify(notify_payload("simple--notify-1"))
    rec = hooks.only("pending")
    assert rec["sources"] == ["codex-stop", "codex-notify"] and rec["revision"] == 2
    assert rec["outcome"] == "done" and rec["has_user_message"] is True


def test_notify_alone_creates_root_candidate(hooks: HookEnv) -> None:
    """A root notify without a Stop creates the candidate itself, finding the rollout by thread id."""
    rollout = hooks.install_rollout("subagent-parent")
    hooks.notify(notify_payload("subagent--notify-2"))
    rec = hooks.only("pending")
    assert rec["key"] == event_key("codex", PARENT, "01a22be3-06ec-7e93-b5b9-ce9929a82f4f")
    assert rec["source"] == "codex-notify" and rec["classification"] == "root" and rec["client"] == "codex_exec"
    assert rec["transcript_path"] == str(rollout)
    assert rec["has_user_message"] is True and rec["has_final_message"] is True


def test_children_classified_from_threads_table_without_rollouts(hooks: HookEnv) -> None:
    """With no rollout files, state_5.threads.source (read-only) classifies the child and the root."""
    hooks.install_threads_db()
    hooks.notify(notify_payload("subagent--notify-1"))
    hooks.notify(notify_payload("subagent--notify-2"))
    assert hooks.only("suppressed")["reason"] == "subagent"
    rec = hooks.only("pending")
    assert rec["classification"] == "root" and rec["thread_id"] == PARENT
    assert "threads.source" in rec["classification_evidence"]


def test_child_notify_without_evidence_stays_unknown(hooks: HookEnv) -> None:
    """A client-less notify with no local evidence is an unknown candidate (a hint, not proof), never lost."""
    hooks.notify(notify_payload("subagent--notify-1"))
    rec = hooks.only("pending")
    assert rec["classification"] == "unknown" and rec["client"] is None
    assert "without client" in rec["classification_evidence"]


def test_stop_without_local_evidence_is_unknown(hooks: HookEnv) -> None:
    """A Stop whose rollout is missing and whose thread is unindexed is an unknown candidate for the gate."""
    hooks.stop(hooks.stop_payload("simple"))
    rec = hooks.only("pending")
    assert rec["classification"] == "unknown" and rec["root_thread_id"] is None


def test_subagent_stop_and_other_events_are_ignored(hooks: HookEnv) -> None:
    """SubagentStop (and Interrupt) sent to codex-stop write nothing and still print {}."""
    hooks.install_rollout("subagent-parent")
    hooks.install_rollout("subagent-child")
    hooks.stop(codex_hook_payload("subagent--SubagentStop"))
    hooks.stop(codex_hook_payload("abort-int--Interrupt"))
    assert hooks.counts() == {"pending": 0, "outbox": 0, "sent": 0, "suppressed": 0, "dead": 0}
    assert "codex hook event ignored" in hooks.log_messages()


def test_stop_from_inside_a_subagent_is_suppressed(hooks: HookEnv) -> None:
    """A Stop carrying agent_id is the child's: suppressed under the child's key (the one its notify uses)."""
    hooks.install_rollout("subagent-child")
    payload = codex_hook_payload("subagent--SubagentStop")
    payload["hook_event_name"] = "Stop"
    hooks.stop(payload)
    receipt = hooks.only("suppressed")
    assert receipt["key"] == event_key("codex", CHILD, CHILD_TURN) and receipt["reason"] == "subagent"
    hooks.notify(notify_payload("subagent--notify-1"))  # the child's notify: a duplicate now
    assert hooks.counts() == {"pending": 0, "outbox": 0, "sent": 0, "suppressed": 1, "dead": 0}


def test_missing_turn_id_gives_weak_identity(hooks: HookEnv) -> None:
    """A Stop without turn_id still becomes a candidate, marked weak_identity (no dedupe possible)."""
    hooks.install_rollout("simple-exec")
    payload = hooks.stop_payload("simple")
    del payload["turn_id"]
    hooks.stop(payload)
    hooks.stop(payload)
    found = hooks.records("pending")
    assert len(found) == 2 and all(r["weak_identity"] and r["turn_id"] is None for r in found)


def test_stop_without_session_id_takes_the_thread_from_its_rollout(hooks: HookEnv) -> None:
    """A Stop that lost session_id still gets the right key: the root rollout's session_meta names the thread."""
    hooks.install_rollout("simple-exec")
    payload = hooks.stop_payload("simple")
    del payload["session_id"]
    hooks.stop(payload)
    rec = hooks.only("pending")
    assert rec["key"] == event_key("codex", ROOT, ROOT_TURN) and rec["weak_identity"] is False


def test_rollout_of_another_thread_is_not_attached(hooks: HookEnv) -> None:
    """A Stop whose transcript's session_meta names another thread keeps its own key and drops that path."""
    hooks.install_rollout("simple-exec")
    hooks.stop(hooks.stop_payload("simple", session_id="not-this-thread"))
    rec = hooks.only("pending")
    assert rec["key"] == event_key("codex", "not-this-thread", ROOT_TURN)
    assert rec["classification"] == "unknown" and rec["transcript_path"] is None
    assert f"rollout belongs to thread {ROOT}" in rec["classification_evidence"]


def test_signal_for_a_finished_key_changes_nothing(hooks: HookEnv) -> None:
    """A Stop arriving after the turn was sent is a duplicate: no new pending record."""
    hooks.install_rollout("simple-exec")
    key = event_key("codex", ROOT, ROOT_TURN)
    state = hooks.state.ensure()
    state.create("sent", new_receipt({"key": key, "provider": "codex"}, status="sent", reason="sent"))
    hooks.stop(hooks.stop_payload("simple"))
    assert hooks.counts()["pending"] == 0 and hooks.counts()["sent"] == 1
    assert "codex codex-stop: duplicate" in hooks.log_messages()


def test_fifty_concurrent_stops_leave_one_pending_record(hooks: HookEnv) -> None:
    """50 simultaneous hook processes for one (thread, turn) converge on exactly one pending record."""
    count = int(os.environ.get("DONEBELL_HOOK_STORM", "50"))
    hooks.install_rollout("simple-exec", upto="task_complete")
    data = json.dumps(hooks.stop_payload("simple")).encode()
    procs = [
        subprocess.Popen(
            hooks.argv("codex-stop"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=hooks.env(),
        )
        for _ in range(count)
    ]
    outputs = [p.communicate(data, timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert all(out == b"{}\n" for out, _ in outputs)
    rec = hooks.only("pending")
    assert rec["revision"] == count
    assert hooks.counts() == {"pending": 1, "outbox": 0, "sent": 0, "suppressed": 0, "dead": 0}
    assert list((hooks.state_dir / "tmp").iterdir()) == []


def test_unusable_state_dir_still_prints_empty_object(hooks: HookEnv, tmp_path: Path) -> None:
    """If the state dir cannot be used (a file is in the way) the hook still prints {} and exits 0."""
    blocker = tmp_path / "blocked"
    blocker.write_text("not a directory")
    hooks.install_rollout("simple-exec")
    result = hooks.run("codex-stop", stdin=hooks.stop_payload("simple"), DONEBELL_STATE_DIR=str(blocker))
    assert result.returncode == 0 and result.stdout == b"{}\n"
    assert b"state dir unusable" in result.stderr


def test_broken_config_falls_back_to_defaults(hooks: HookEnv) -> None:
    """A config file that is not JSON does not stop ingestion (defaults apply: no message kept)."""
    hooks.config.write_bytes(b"{not json")
    hooks.install_rollout("simple-exec")
    hooks.stop(hooks.stop_payload("simple"))
    assert hooks.only("pending")["last_message"] is None


def test_stop_output_is_never_a_block_decision(hooks: HookEnv) -> None:
    """Even with stop_hook_active and an internal error path, stdout is exactly {} (a block would loop Codex)."""
    payload = hooks.stop_payload("simple", stop_hook_active=True, transcript_path=str(hooks.root / "fifo"))
    os.mkfifo(hooks.root / "fifo")  # a FIFO as transcript must not block the hook
    result = subprocess.run(
        hooks.argv("codex-stop"), input=json.dumps(payload).encode(), capture_output=True, env=hooks.env(), timeout=30
    )
    assert result.returncode == 0 and result.stdout == b"{}\n"
    rec = hooks.only("pending")
    assert rec["stop_hook_active"] is True and rec["classification"] == "unknown"
    assert sys.executable  # the hook ran under this interpreter
