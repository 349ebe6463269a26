"""Codex's live session for reply to continue (issue 28 item 3): the writer lock and ``codex queue``.

The lock is a real ``flock`` held by a real process, read as the wake role reads it. ``codex
queue`` itself runs in the end-to-end test (tests/e2e/test_wake_live.py, the real TUI); here a
stand-in executable on PATH injects each answer the real one gives (its exact output, measured on
0.171) to pin what the wake role makes of it: queued, queued but not resumed, nothing queued.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from donebell.shared.platform import locked
from donebell.workers.agents.codex import queue
from donebell.workers.kit.thread_view import DaemonError

pytestmark = pytest.mark.usefixtures("no_outside_config")

THREAD = "01a245f0-e2b2-77c3-9ca0-75b4990bec6d"
HOLD = "import fcntl, sys, time; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"


@pytest.fixture()
def codex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "codex"
    (home / "thread-writer-locks").mkdir(parents=True)
    monkeypatch.setenv("CODEX_HOME", str(home))
    return home


def hold_lock(path: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_thread_is_live_while_a_process_holds_its_writer_lock(codex_home: Path) -> None:
    lock = codex_home / "thread-writer-locks" / f"{THREAD}.lock"
    assert queue.live_thread(THREAD) is None  # no lock file: never opened, or cleaned up
    lock.touch()
    assert queue.live_thread(THREAD) is None  # the file stays after the TUI exits: not held
    holder = hold_lock(lock)
    try:
        assert queue.live_thread(THREAD) == THREAD
        assert locked._probe(str(lock)) is True  # the portable probe (no /proc/locks, portable mode)
    finally:
        holder.kill()
        holder.wait()
    assert queue.live_thread(THREAD) is None
    assert locked._probe(str(lock)) is False
    assert queue.live_thread("../" + THREAD) is None  # never a path built from a bad id


def test_another_files_lock_is_not_this_threads(codex_home: Path) -> None:
    other = codex_home / "thread-writer-locks" / "other.lock"
    (codex_home / "thread-writer-locks" / f"{THREAD}.lock").touch()
    holder = hold_lock(other)
    try:
        assert queue.live_thread(THREAD) is None
    finally:
        holder.kill()
        holder.wait()


def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> Path:
    """A ``codex`` on PATH that answers as ``body`` says and records its argv."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "codex"
    argv_file = tmp_path / "argv.txt"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nopen({str(argv_file)!r}, 'w').write(repr(sys.argv[1:]))\n"
        + textwrap.dedent(body)
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ.get('PATH', '')}")
    return argv_file


QUEUED = f"print('Queued message 01a245f0-edbf-79d0-a449-739e77b64eda for thread {THREAD}.')\n"


def test_queued_into_the_open_thread(tmp_path: Path, codex_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv_file = stand_in(tmp_path, monkeypatch, QUEUED)
    queue.queue_message(THREAD, "PHONE: go on")
    assert ast.literal_eval(argv_file.read_text()) == ["queue", "--thread", THREAD, "--message", "PHONE: go on"]


def test_with_the_daemon_up_the_daemon_is_asked_to_run_it(
    tmp_path: Path, codex_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    control = codex_home / "app-server-control"
    control.mkdir()
    (control / "app-server-control.sock").touch()
    argv_file = stand_in(tmp_path, monkeypatch, QUEUED)
    queue.queue_message(THREAD, "go")
    assert ast.literal_eval(argv_file.read_text())[-1] == "--resume"


def test_queued_but_not_resumed_is_not_a_reason_to_resume_again(
    tmp_path: Path, codex_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The message is in Codex's queue: a second start (``codex exec resume``) must not follow."""
    warning = "import sys; sys.stderr.write('warning: could not resume thread: start a local daemon\\n')\n"
    stand_in(tmp_path, monkeypatch, QUEUED + warning)
    with pytest.raises(DaemonError) as caught:
        queue.queue_message(THREAD, "go")
    assert not caught.value.unreachable and "could not resume" in str(caught.value)


def test_nothing_queued_lets_the_resume_way_go(
    tmp_path: Path, codex_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    error = (
        "import sys\nsys.stderr.write('Error: failed to queue session message: thread/queue/add failed: "
        "no rollout found for thread id x (code -32603)\\n\\nStack backtrace:\\n   0: <unknown>\\n')\nsys.exit(1)\n"
    )
    stand_in(tmp_path, monkeypatch, error)
    with pytest.raises(DaemonError) as caught:
        queue.queue_message(THREAD, "go")
    assert caught.value.unreachable
    assert str(caught.value).startswith("codex queue exit 1: Error: failed to queue session message")


def test_no_codex_on_path_lets_the_resume_way_go(codex_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(DaemonError) as caught:
        queue.queue_message(THREAD, "go")
    assert caught.value.unreachable


def test_a_hung_queue_command_may_have_queued_so_it_is_never_repeated(
    tmp_path: Path, codex_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stand_in(tmp_path, monkeypatch, QUEUED + "import time; time.sleep(30)\n")
    monkeypatch.setattr(queue, "QUEUE_SECONDS", 0.5)
    with pytest.raises(DaemonError) as caught:
        queue.queue_message(THREAD, "go")
    assert not caught.value.unreachable and "no answer" in str(caught.value)


def test_a_hung_queue_command_is_killed_with_everything_it_started(
    tmp_path: Path, codex_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34 item 3: a `codex queue` that hangs, with a child of its own holding the output pipe
    open, is killed as a group at its timeout: the wait ends on time and nothing is left running.
    (Killing only the leader, as `subprocess.run` does, leaves the child holding the pipe: the
    wait would last as long as the child.)"""
    pid_file = tmp_path / "child.pid"
    hang = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    stand_in(tmp_path, monkeypatch, hang)
    monkeypatch.setattr(queue, "QUEUE_SECONDS", 1.0)
    started = time.monotonic()
    with pytest.raises(DaemonError, match="process group was killed"):
        queue.queue_message(THREAD, "go")
    assert time.monotonic() - started < 10
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child), "the hung command's child survived"


def test_the_queue_command_gets_none_of_donebells_secrets(
    tmp_path: Path, codex_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_file = tmp_path / "env.txt"
    stand_in(tmp_path, monkeypatch, f"import os; open({str(env_file)!r}, 'w').write(repr(dict(os.environ)))\n" + QUEUED)
    monkeypatch.setenv("DONEBELL_TOKEN", "tk_secret_of_donebell")
    monkeypatch.setenv("DONEBELL_WAKE_TOKEN", "tk_secret_of_the_buttons")
    queue.queue_message(THREAD, "go")
    seen = ast.literal_eval(env_file.read_text())
    assert "DONEBELL_TOKEN" not in seen and "DONEBELL_WAKE_TOKEN" not in seen and seen["CODEX_HOME"]


def _alive(pid: int) -> bool:
    """A process that exists and is not a zombie (an unreaped zombie has already died)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
