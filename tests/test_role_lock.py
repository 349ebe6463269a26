"""Role locks (shared/statedir/_roles.py, filelock):
one holder per role file, private to its owner whatever the umask, free again once released or
when the owner record cannot be written. (Exclusion across processes and the holder's death:
tests/test_statedir.py.)"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from donebell.shared.statedir import StateDir


@pytest.fixture()
def state(tmp_path: Path) -> StateDir:
    return StateDir(tmp_path / "state").ensure()


def test_a_held_role_lock_refuses_a_second_taker_until_released(state: StateDir) -> None:
    first = state.role_lock("maintenance")
    assert first is not None and first.still_held()
    assert state.role_lock("maintenance") is None  # another open file: refused, even in this process
    assert state.role_lock("delivery") is not None  # another role's file is another lock
    first.release()
    first.release()  # twice: nothing more to do
    assert state.lock_owner("maintenance") is None
    again = state.role_lock("maintenance")
    assert again is not None
    again.release()


def test_the_lock_file_is_private_whatever_the_umask(state: StateDir) -> None:
    old = os.umask(0)
    try:
        lock = state.role_lock("delivery")
    finally:
        os.umask(old)
    assert lock is not None
    assert stat.S_IMODE(os.stat(state.path("locks", "delivery.lock")).st_mode) == 0o600
    lock.release()


def test_a_lock_whose_owner_record_fails_is_not_kept(state: StateDir, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(state, "write_file", refuse)
    with pytest.raises(OSError):
        state.role_lock("delivery")
    monkeypatch.undo()
    lock = state.role_lock("delivery")
    assert lock is not None
    lock.release()
