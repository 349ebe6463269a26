"""Nothing the wake role reads of an agent's files can hang it or grow without bound (issue 34 item 6).

Real FIFOs planted where a Claude session record or a rollout belongs (an ``open`` for reading
waits for a writer forever: the probes run in a child process with a deadline, so a regression
fails instead of hanging the suite), a real big rollout with a huge line, and a real ``flock``
held on a path a bad ``session_meta.id`` would name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest
from donebell.workers.agents.codex import writer_lock
from donebell.workers.wake import agents
from support.wake_world import THREAD

pytestmark = pytest.mark.usefixtures("no_outside_config")

HOLD = "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"


def _in_a_child(code: str, env: dict[str, str], deadline: float = 15.0) -> str:
    """Run ``code`` in a child python; its stdout. Fails (instead of hanging) past ``deadline``."""
    try:
        run = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=deadline,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for {deadline:g} s on a FIFO")
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_a_fifo_named_like_a_claude_session_record_is_skipped(tmp_path: Path) -> None:
    """Before, the inbox lookup opened `sessions/<pid>.json` blocking: a FIFO there hung the role
    (`worker wake --once` past 40 s). Now it is refused unread, and the real record beside it is found."""
    sessions = tmp_path / "claude" / "sessions"
    sessions.mkdir(parents=True)
    os.mkfifo(sessions / "1.json")
    code = """
        from donebell.workers.agents.claude import inbox
        print(inbox.live_inbox("0b2bd3f5-5a39-4d6c-9f51-7a8f2c5c0e11"))
    """
    started = time.monotonic()
    assert _in_a_child(code, {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}) == "None"
    assert time.monotonic() - started < 10


@pytest.mark.parametrize("provider", ["codex", "claude"])
def test_a_fifo_named_like_a_rollout_or_transcript_is_refused(tmp_path: Path, provider: str) -> None:
    """The thread view opened the rollout / transcript blocking (a FIFO's size is 0: the size cap
    let it through); now it is an OSError at once, which the role reports as `rollout-missing`."""
    fifo = tmp_path / f"rollout-2026-12-01T10-00-00-{THREAD}.jsonl"
    os.mkfifo(fifo)
    code = f"""
        from donebell.workers.wake import agents
        try:
            agents.read_thread({provider!r}, {str(fifo)!r})
        except OSError as exc:
            print("refused:", type(exc).__name__)
    """
    assert _in_a_child(code, {}) == "refused: NotARegularFile"


def _big_rollout(path: Path, huge_line: int) -> None:
    """A real-shaped rollout: session_meta, two finished turns, a huge line between them."""
    with path.open("wb") as f:
        meta = {"type": "session_meta", "payload": {"id": THREAD, "cwd": "/work"}}
        f.write(json.dumps(meta).encode() + b"\n")
        for turn in ("turn-1", "turn-2"):
            for kind in ("task_started", "task_complete"):
                f.write(json.dumps({"type": "event_msg", "payload": {"type": kind, "turn_id": turn}}).encode() + b"\n")
            blob = {"type": "response_item", "payload": {"type": "message", "content": "x" * huge_line}}
            f.write(json.dumps(blob).encode() + b"\n")
        f.write(b'{"type":"event_msg","payload":{"type":"task_started","turn_id":"turn-3"')  # still being written


def test_a_big_rollout_is_read_in_bounded_memory_and_then_only_what_it_appends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 48 MB rollout whose two 24 MB lines (a pasted image, a long tool output) are not turns:
    the view is right, the read never holds a whole line (before: each line was read whole), the
    view of a file that did not change is not read again, and one that grew is read only from
    where the last read ended (before: every 2 s, whole)."""
    rollout = tmp_path / f"rollout-2026-12-01T10-00-00-{THREAD}.jsonl"
    _big_rollout(rollout, 24 << 20)
    tracemalloc.start()
    try:
        view = agents.read_thread("codex", str(rollout))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (view.turns, view.latest_done, view.active, view.cwd) == (2, "turn-2", False, "/work")
    assert peak < 8 << 20, f"peak {peak} bytes while reading"

    assert agents.read_thread("codex", str(rollout)) == view
    read = _bytes_read_by(lambda: agents.read_thread("codex", str(rollout)), monkeypatch)
    assert read == 0  # not read again

    with rollout.open("ab") as f:  # the half-written line completes: the file changed
        f.write(b"}}\n")
    read = _bytes_read_by(lambda: agents.read_thread("codex", str(rollout)), monkeypatch)
    assert agents.read_thread("codex", str(rollout)).active is True
    assert read < 1 << 16, read  # only what was appended since (before: all 48 MB, every 2 s)


def _bytes_read_by(call: Callable[[], object], monkeypatch: pytest.MonkeyPatch) -> int:
    """How many bytes `os.read` returned while ``call`` ran."""
    total = [0]
    real = os.read

    def counting(fd: int, n: int) -> bytes:
        data = real(fd, n)
        total[0] += len(data)
        return data

    with monkeypatch.context() as patch:
        patch.setattr(os, "read", counting)
        call()
    return total[0]


def test_a_lock_path_from_a_bad_session_meta_id_is_never_looked_at(tmp_path: Path) -> None:
    """A rollout's session_meta.id names the writer lock's path; an id that is not an id (`../x`)
    must not make a lock held elsewhere count as the thread's (before: it did)."""
    home = tmp_path / "codex"
    (home / "thread-writer-locks").mkdir(parents=True)
    elsewhere = home / "evil.lock"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(elsewhere)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert writer_lock.writer_holds(str(elsewhere))  # the lock is really held
        assert writer_lock.thread_is_open(str(home), "../evil") is False
    finally:
        holder.kill()
        holder.wait()


def test_reading_on_from_where_it_ended_finds_what_a_whole_read_finds(tmp_path: Path) -> None:
    """The appended-only read agrees with a fresh read at every step: lines written in pieces, a
    line over the cap across chunk boundaries, a file shortened, a file replaced."""
    from donebell.workers.kit.thread_view import LINE_MAX, _reads, json_lines

    path = tmp_path / "t.jsonl"
    pieces = [b'{"n":1}\n{"n":', b"2}\n", b'{"big":"' + b"x" * (LINE_MAX + 70_000), b'"}\n{"n":3}\n{"n":4', b"}\n"]
    path.write_bytes(b"")
    for piece in pieces:
        with path.open("ab") as f:
            f.write(piece)
        on = json_lines(str(path))
        _reads.clear()
        assert on == json_lines(str(path))  # a fresh read
    assert [o.get("n") for o in on] == [1, 2, 3, 4]
    path.write_bytes(b'{"n":9}\n')  # shortened in place
    assert json_lines(str(path)) == [{"n": 9}]
    path.unlink()
    path.write_bytes(b'{"n":7}\n{"n":8}\n{"n":9}\n')  # replaced: another inode, longer
    assert [o["n"] for o in json_lines(str(path))] == [7, 8, 9]
