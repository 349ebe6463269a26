"""The write fence: a role whose state directory was deleted and re-created under it writes nothing
into the new one (issue 15 item 5: a receipt lost with the old directory must not be followed by a
second notification from a role that was mid-pass when it went)."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from donebell.shared.statedir import BIRTH_NAME, StateDir, StateDirReplaced
from donebell.workers.kit.pass_result import PassResult
from donebell.workers.role import EXIT_LOCK_LOST, Role, run_role
from support.statedir_kit import numbered_candidate


def _recreate(root: Path) -> StateDir:
    """`rm -rf` of the directory, then another process's ``ensure`` making a fresh one."""
    shutil.rmtree(root)
    return StateDir(root).ensure()


def _records_anywhere(root: Path) -> list[str]:
    """Every JSON file a write could have left: not the lock files, nor the directory's birth
    file (``created.json``, written when the directory itself is created)."""
    found = root.rglob("*.json")
    return sorted(str(p.relative_to(root)) for p in found if "locks" not in p.parts and p.name != BIRTH_NAME)


def test_a_role_that_lost_its_lock_cannot_write_into_the_recreated_directory(state: StateDir) -> None:
    lock = state.role_lock("delivery")
    assert lock is not None
    state.fence_with(lock.still_held)
    assert state.create("pending", numbered_candidate(1))  # still ours: writes go through

    fresh = _recreate(state.root)
    for write in (
        lambda: state.create("pending", numbered_candidate(2)),
        lambda: state.replace("sent", numbered_candidate(3)),
        lambda: state.write_file(state.path("watch", "cursor.json"), b"{}", durable=False),
    ):
        with pytest.raises(StateDirReplaced) as caught:
            write()
        assert isinstance(caught.value, OSError) and caught.value.errno == errno.ESTALE
    assert _records_anywhere(fresh.root) == []
    assert os.listdir(fresh.path("tmp")) == []  # refused before a temp file was made
    lock.release()


def test_nor_move_or_remove_a_record_the_new_directory_holds(state: StateDir) -> None:
    """A verdict made in the old directory (promote, remove, expire) must not act on a record of
    the same key that the new roles wrote (a replayed turn)."""
    lock = state.role_lock("delivery")
    assert lock is not None
    state.fence_with(lock.still_held)
    fresh = _recreate(state.root)
    key, receipt = str(numbered_candidate(1)["key"]), numbered_candidate(2)
    assert fresh.create("pending", numbered_candidate(1)) and fresh.create("sent", receipt)
    changes: list[Callable[[], object]] = [
        lambda: state.remove("pending", key),
        lambda: state.move("pending", "outbox", key),
        lambda: state.expire("sent", older_than=float("inf")),
    ]
    for change in changes:
        with pytest.raises(StateDirReplaced):
            change()
    assert _records_anywhere(fresh.root) == sorted(
        [os.path.join("pending", f"{key}.json"), os.path.join("sent", f"{receipt['key']}.json")]
    )
    lock.release()


def test_a_record_staged_before_the_deletion_is_never_published_in_the_new_directory(state: StateDir) -> None:
    """Checked before the temp file is made, the fence cannot see a deletion after it: the temp
    file goes with the old directory, so the link that would publish it fails."""
    lock = state.role_lock("delivery")
    assert lock is not None
    state.fence_with(lock.still_held)
    batch = state.group_commit("outbox")
    batch.stage(numbered_candidate(1))
    batch.flush()
    fresh = _recreate(state.root)
    with pytest.raises(FileNotFoundError):
        batch.link(str(numbered_candidate(1)["key"]))
    assert _records_anywhere(fresh.root) == []
    lock.release()


def test_an_unfenced_state_dir_writes_into_whatever_directory_is_there(state: StateDir) -> None:
    """The control: without the fence, the same late write lands in the new directory (the
    duplicate the fence prevents), so the test above can fail."""
    fresh = _recreate(state.root)
    assert state.create("pending", numbered_candidate(2))
    assert _records_anywhere(fresh.root) == [os.path.join("pending", f"{numbered_candidate(2)['key']}.json")]


def test_a_helper_process_fences_on_its_roles_lock_file(state: StateDir) -> None:
    """A role's helper (the remote scanner's per-root child) holds no lock: it fences on the role's
    lock file as it was when the helper started. Run in a real second process."""
    lock = state.role_lock("remote-scanner")
    assert lock is not None
    script = textwrap.dedent(
        f"""
        import sys
        from donebell.shared.statedir import BIRTH_NAME, StateDir, StateDirReplaced
        from support.statedir_kit import numbered_candidate
        state = StateDir({str(state.root)!r})
        state.fence_on_role_lock("remote-scanner")
        print(state.create("pending", numbered_candidate(1)), flush=True)
        sys.stdin.readline()  # the parent deletes and re-creates the directory here
        try:
            state.create("pending", numbered_candidate(2))
            print("written")
        except StateDirReplaced:
            print("refused")
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "True"
    fresh = _recreate(state.root)
    newer = StateDir(fresh.root).role_lock("remote-scanner")  # the new role's lock: another file
    assert newer is not None
    child.stdin.write("\n")
    child.stdin.flush()
    assert child.stdout.readline().strip() == "refused"
    assert child.wait(10) == 0
    assert _records_anywhere(fresh.root) == []
    newer.release()
    lock.release()


class _MidPassRole(Role):
    """Its pass sees one turn, then the state directory is deleted and re-created (a second
    supervisor's lock in it), then it reports a second turn: the late write of a scanner behind."""

    name = "fence-test"

    def run_pass(self) -> PassResult:
        assert self.state.create("pending", numbered_candidate(1))
        _recreate(self.state.root).role_lock(self.name)  # its lock file: another inode
        self.state.create("pending", numbered_candidate(2))
        raise AssertionError("the fence let a write through")


def test_a_role_whose_directory_goes_mid_pass_stops_without_writing_or_failing(
    isolated_env: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_role(_MidPassRole, []) == EXIT_LOCK_LOST
    err = capsys.readouterr().err
    assert "lock file is gone or replaced" in err and "pass failed" not in err
    assert _records_anywhere(isolated_env["state"]) == []  # the second turn went nowhere
