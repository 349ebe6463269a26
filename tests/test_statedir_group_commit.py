"""The state directory's group commit: many records made durable with a few flushes, crash-safe at every step."""

from __future__ import annotations

import os

import pytest
from donebell.shared.records import to_outbox
from donebell.shared.statedir import StateDir
from support.statedir_kit import assert_all_records_whole
from support.statedir_kit import numbered_candidate as _candidate


def _group_promote(root: str, keys: list[str], crash_at: int) -> None:
    """In a child process: promote ``keys`` pending -> outbox with one group commit, crashing at
    the ``crash_at``-th counted operation (0: never), the order the gate's ``Promotions`` uses."""
    import donebell.shared.statedir as sd

    sd._base._crash_at, sd._base._op_count = crash_at, 0
    state = StateDir(root)
    batch = state.group_commit("outbox")
    for key in keys:
        batch.stage(to_outbox(state.read("pending", key) or {}, verdict="idle"))
    batch.flush()
    for key in keys:
        batch.link(key)
    batch.sync()
    for key in keys:
        state.remove("pending", key, sync=False)
    state.sync_folder("pending")
    batch.close()


def test_group_commit_crash_at_every_step_loses_no_record_and_exposes_no_partial_one(state: StateDir) -> None:
    """Five promotions in one group commit, crashed (``DONEBELL_CRASH_AT`` seam, os._exit) at every
    counted operation in turn: each key is always in pending/, or in outbox/ whole (both between
    the two steps), and a pending copy is removed only after every outbox record is linked."""
    keys = [str(_candidate(100 + i)["key"]) for i in range(5)]
    n, outcomes = 0, set()
    while True:
        n += 1
        for folder in ("pending", "outbox", "tmp"):
            for name in os.listdir(state.root / folder):
                os.unlink(state.root / folder / name)
        for i in range(5):
            assert state.create("pending", _candidate(100 + i))
        pid = os.fork()
        if pid == 0:
            try:
                _group_promote(str(state.root), keys, n)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        where = {key: [f for f in ("pending", "outbox") if state.exists(f, key)] for key in keys}
        assert all(where[key] for key in keys), (n, where)
        assert_all_records_whole(state)
        linked = sum(1 for key in keys if "outbox" in where[key])
        if any(w == ["outbox"] for w in where.values()):
            assert linked == len(keys), (n, where)  # no pending copy went before every link was made
        outcomes.add(tuple(sorted(tuple(w) for w in where.values())))
        if os.waitstatus_to_exitcode(status) == 0:
            break
        assert os.waitstatus_to_exitcode(status) == 86, (n, status)
        assert n < 200
    assert all(w == ["outbox"] for w in where.values())  # the run that reached its end promoted all
    assert (("pending",),) * 5 in outcomes and (("pending", "outbox"),) * 5 in outcomes, outcomes


def test_group_commit_links_only_flushed_records_and_discards_the_rest(
    state: StateDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """link() before flush() is refused and leaves no temp file; an existing file wins over a link;
    close() removes what was staged and never linked; one folder flush covers every link."""
    import donebell.shared.statedir as sd

    monkeypatch.setattr(sd._base, "_crash_at", 1 << 30)  # armed, never reached: only counts

    first, second, third = (_candidate(200 + i) for i in range(3))
    assert state.create("sent", second)
    batch = state.group_commit("sent")
    batch.stage(first)
    with pytest.raises(sd.StateError):
        batch.link(str(first["key"]))
    assert os.listdir(state.root / "tmp") == []
    batch.stage(first)
    batch.stage({**second, "fill": "other"})
    batch.stage(third)
    batch.flush()
    assert batch.link(str(first["key"])) is True
    assert batch.link(str(second["key"])) is False  # the earlier file wins, as create() does
    ops = sd.operations_done()
    batch.sync()
    batch.close()
    assert sd.operations_done() - ops == 1  # sync() and close(): one flush of the folder, nothing else
    assert state.read("sent", str(first["key"])) == first
    assert state.read("sent", str(second["key"])) == second
    assert not state.exists("sent", str(third["key"])) and os.listdir(state.root / "tmp") == []
