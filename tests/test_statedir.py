"""The state-directory protocol: atomic records, create-if-absent, dead letters, locks, safety."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import stat
import time
from pathlib import Path

import pytest
from donebell.shared.keys import event_key, identity, is_event_key, sequence_id
from donebell.shared.records import new_candidate, new_receipt, to_outbox
from donebell.shared.statedir import FOLDERS, InvalidRecord, StateDir, UnsafeStateDir
from support.statedir_kit import assert_all_records_whole, numbered_candidate


def _candidate(n: int, fill: int = 10) -> dict[str, object]:
    return numbered_candidate(n, fill)


@pytest.mark.parametrize(
    ("name", "is_key"),
    [
        ("0123456789abcdef" * 4, True),
        ("0123456789ABCDEF" * 4, False),  # file names are lowercase: an upper-case twin is a stray
        ("0123456789abcdef" * 4 + "0", False),
        ("0123456789abcdef" * 3 + "0123456789abcde", False),
        ("0123456789abcdeg" * 4, False),
        ("0123456789abcdef" * 3 + "0123456789abcd\u0660", False),  # a non-ASCII digit
        ("", False),
    ],
)
def test_only_64_lowercase_hex_characters_name_a_record(name: str, is_key: bool) -> None:
    assert is_event_key(name) is is_key


def test_layout_is_owner_only(state: StateDir) -> None:
    """Every folder exists with mode 0700 and records are written 0600."""
    for folder in FOLDERS:
        assert stat.S_IMODE(os.lstat(state.root / folder).st_mode) == 0o700
    rec = _candidate(1)
    assert state.create("pending", rec)
    assert stat.S_IMODE(os.lstat(state.record_path("pending", str(rec["key"]))).st_mode) == 0o600


def test_loose_permissions_are_tightened(tmp_path: Path) -> None:
    """A state dir left group/world-accessible is tightened back to 0700 on open."""
    root = tmp_path / "st"
    StateDir(root).ensure()
    os.chmod(root / "pending", 0o777)
    os.chmod(root, 0o755)
    StateDir(root).ensure()
    assert stat.S_IMODE(os.lstat(root).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(root / "pending").st_mode) == 0o700


def test_symlinked_folder_is_refused(tmp_path: Path) -> None:
    """A folder replaced by a symlink elsewhere is refused, never followed for writes."""
    root = tmp_path / "st"
    StateDir(root).ensure()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.rmdir(root / "outbox")
    os.symlink(elsewhere, root / "outbox")
    with pytest.raises(UnsafeStateDir):
        StateDir(root).ensure()
    assert list(elsewhere.iterdir()) == []


def test_planted_symlink_record_is_not_followed(state: StateDir, tmp_path: Path) -> None:
    """A record file that is a symlink reads as invalid, and its target is never touched."""
    target = tmp_path / "secret.txt"
    target.write_text("do not touch")
    key = event_key("codex", "t", "u")
    os.symlink(target, state.record_path("pending", key))
    with pytest.raises(InvalidRecord):
        state.read("pending", key)
    state.dead_letter_invalid("pending", f"{key}.json", "symlink")
    assert target.read_text() == "do not touch"
    assert not os.path.lexists(state.record_path("pending", key))


def test_create_if_absent_and_locate_in_pipeline_order(state: StateDir) -> None:
    """create() wins once; locate() follows a key from pending through outbox to sent."""
    rec = _candidate(2)
    key = str(rec["key"])
    assert state.create("pending", rec) is True
    assert state.create("pending", rec) is False
    assert state.locate(key) == "pending"
    outbox = to_outbox(rec, verdict="idle")
    assert outbox["sequence_id"] == sequence_id("codex", key) and outbox["sequence_id"].startswith("codex-")
    assert state.create("outbox", outbox)
    assert state.remove("pending", key)
    assert state.locate(key) == "outbox"
    assert state.finish("outbox", "sent", new_receipt(outbox, status="sent", reason="sent"))
    assert state.locate(key) == "sent"
    receipt = state.read("sent", key)
    assert receipt is not None and "fill" not in receipt  # receipts stay compact


def test_move_reports_a_lost_race(state: StateDir) -> None:
    """A claim by rename of a vanished record returns False instead of raising."""
    rec = _candidate(3)
    state.create("pending", rec)
    assert state.move("pending", "outbox", str(rec["key"])) is True
    assert state.move("pending", "outbox", str(rec["key"])) is False


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"\xff\xfe\x00garbage", b"[1,2,3]", b'{"key":"x"}', b'{"schema":99,"key":"k"}', b""],
    ids=["broken-json", "invalid-utf8", "not-object", "no-schema", "future-schema", "empty"],
)
def test_corrupt_records_go_to_dead_with_a_reason(state: StateDir, content: bytes) -> None:
    """Corrupt or unknown-schema files are moved to dead/ with a reason and original bytes kept."""
    key = event_key("codex", "corrupt", "1")
    good = _candidate(4)
    state.create("pending", good)
    state.record_path("pending", key).write_bytes(content)
    problems = []
    for k in state.keys("pending"):
        try:
            state.read("pending", k)
        except InvalidRecord as exc:
            problems.append(k)
            dead_key = state.dead_letter_invalid("pending", f"{k}.json", str(exc))
    assert problems == [key]
    letter = state.read("dead", dead_key)
    assert letter is not None and letter["reason"] == "invalid-record" and letter["detail"]
    assert (state.root / "dead" / f"{dead_key}.raw").read_bytes() == content
    assert state.keys("pending") == [good["key"]]  # the operation went on; the good record is intact
    assert state.locate(key) is None  # the real key stays free for a later, good signal


def test_weak_identity_when_an_id_is_missing() -> None:
    """Without both ids the key is random and marked weak; with both it is deterministic."""
    strong, weak = identity("codex", "t", "u")
    assert not weak and strong == event_key("codex", "t", "u")
    k1, w1 = identity("claude", "s", None)
    k2, _ = identity("claude", "s", None)
    assert w1 and k1 != k2 and len(k1) == 64
    assert event_key("codex", "a", "b") != event_key("claude", "a", "b")


def _create_same_key(
    root: str, key: str, barrier: multiprocessing.synchronize.Barrier, out: multiprocessing.Queue[bool]
) -> None:
    state = StateDir(root)
    rec = new_candidate(key=key, provider="codex", source=f"proc-{os.getpid()}")
    barrier.wait()
    out.put(state.create("pending", rec))


def test_concurrent_create_if_absent_has_one_winner(state: StateDir) -> None:
    """20 processes creating the same key at once: exactly one wins and the others see it."""
    ctx = multiprocessing.get_context("spawn")
    key = event_key("codex", "race", "1")
    barrier = ctx.Barrier(20)
    out: multiprocessing.Queue[bool] = ctx.Queue()
    procs = [ctx.Process(target=_create_same_key, args=(str(state.root), key, barrier, out)) for _ in range(20)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert sorted(results) == [False] * 19 + [True]
    assert state.read("pending", key) is not None
    assert os.listdir(state.root / "tmp") == []


def _writer_loop(root: str, seed: int) -> None:
    """Child body: replace and create records of varying sizes forever (until SIGKILL)."""
    state = StateDir(root)
    rnd = random.Random(seed)
    while True:
        n = rnd.randrange(8)
        rec = _candidate(n, fill=rnd.choice((1, 100, 5000, 200_000)))
        if rnd.random() < 0.5:
            state.replace("pending", rec)
        else:
            state.create("outbox", rec)
            state.remove("outbox", str(rec["key"]))


def test_sigkill_during_writes_never_exposes_a_partial_record(state: StateDir) -> None:
    """200 SIGKILLs at random points of durable writes leave only whole records visible."""
    kills = int(os.environ.get("DONEBELL_TEST_KILLS", "200"))
    checked = 0
    for i in range(kills):
        pid = os.fork()
        if pid == 0:  # child
            try:
                _writer_loop(str(state.root), i)
            finally:
                os._exit(0)
        time.sleep(random.uniform(0.001, 0.03))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        checked += assert_all_records_whole(state)
    assert checked > 0
    # Debris of interrupted writes stays in tmp/ only (maintenance sweeps it by age).
    for folder in ("pending", "outbox"):
        assert all(n.endswith(".json") for n in os.listdir(state.root / folder))


def test_mutation_lock_serializes_one_key_across_processes(state: StateDir) -> None:
    """While one process holds a key's mutation lock, another process waits for it."""
    key = event_key("codex", "lock", "1")
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        with state.mutation_lock(key):
            os.write(w, b"1")
            time.sleep(0.3)
        os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"1"
    start = time.monotonic()
    with state.mutation_lock(key):
        waited = time.monotonic() - start
    os.waitpid(pid, 0)
    assert waited >= 0.2


def test_role_lock_is_exclusive_and_freed_by_death(state: StateDir) -> None:
    """A role lock held by a live process refuses a second taker; the holder's death frees it."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        lock = StateDir(state.root).role_lock("delivery")
        os.write(w, b"1" if lock else b"0")
        time.sleep(30)
        os._exit(0)
    os.close(w)
    assert os.read(r, 1) == b"1"
    assert state.role_lock("delivery") is None
    owner = state.lock_owner("delivery")
    assert owner is not None and owner["pid"] == pid
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    lock = state.role_lock("delivery")
    assert lock is not None
    lock.release()


def test_log_is_bounded(state: StateDir, monkeypatch: pytest.MonkeyPatch) -> None:
    """notify.log rotates to one generation instead of growing without bound."""
    import donebell.shared.statedir as sd

    monkeypatch.setattr(sd, "LOG_MAX_BYTES", 2000)
    for i in range(200):
        state.log("info", "line", i=i)
    assert (state.root / "notify.log.1").exists()
    assert (state.root / "notify.log").stat().st_size <= 4200


def test_every_public_name_is_importable_from_the_package() -> None:
    """The statedir package keeps the single module's public names; RoleLock loads on first access."""
    import donebell.shared.statedir as sd

    assert set(sd.__all__) == {
        "BIRTH_NAME", "FOLDERS", "GroupCommit", "LOG_MAX_BYTES", "LOG_NAME", "MUTATION_LOCK_SHARDS", "PIPELINE",
        "RECEIPT_FOLDERS",
        "SCHEMA_VERSION", "InvalidRecord", "MutationLock", "RoleLock", "StateDir", "StateDirReplaced", "StateError",
        "UnsafeStateDir", "decode", "encode", "now", "open_state_dir", "operations_done",
        # the folder names (issue 35: constants, not strings spelled in place)
        "PENDING", "OUTBOX", "SENT", "SUPPRESSED", "DEAD", "WATCH", "WATCH_LOCAL", "WATCH_REMOTE", "WATCH_CLAUDE",
        "CLAUDE", "HEALTH", "LOCKS", "TMP", "MUTATION_LOCKS", "WAKE", "WAKE_ANSWERS",
    }  # fmt: skip
    assert sd.PIPELINE == (sd.PENDING, sd.OUTBOX, sd.SENT, sd.SUPPRESSED, sd.DEAD)
    assert all(getattr(sd, name) is not None for name in sd.__all__)
    from donebell.shared.statedir import RoleLock

    assert RoleLock.__name__ == "RoleLock" and StateDir.__module__ == "donebell.shared.statedir"
    with pytest.raises(AttributeError):
        sd.NoSuchName  # type: ignore[attr-defined]  # noqa: B018 - the module __getattr__ refuses unknown names


def test_one_crash_point_counter_counts_the_operations_of_every_layer(
    state: StateDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Durable writes (_files), record removal (_records), dead letters and retention (_upkeep) advance one counter."""
    import donebell.shared.statedir as sd

    monkeypatch.setattr(sd._base, "_crash_at", 1 << 30)  # armed, never reached: only counts
    monkeypatch.setattr(sd._base, "_op_count", 0)
    rec = _candidate(4)
    seen = [sd.operations_done()]
    state.create("pending", rec)
    seen.append(sd.operations_done())
    state.remove("pending", str(rec["key"]))
    seen.append(sd.operations_done())
    (state.root / "pending" / "stray.json").write_bytes(b"{not json")
    state.dead_letter_invalid("pending", "stray.json", "broken")
    seen.append(sd.operations_done())
    (state.root / "tmp" / "debris.tmp").write_bytes(b"")
    assert state.sweep_tmp(time.time() + 60) == 1
    seen.append(sd.operations_done())
    assert seen == sorted(set(seen)), seen  # each step counted more operations on the same counter


def test_changed_since_sees_only_records_written_after_the_mark(state: StateDir) -> None:
    """changed_since() is what a bounded worker's handover check relies on: it reports a record
    written after the mark, and nothing for records older than it."""
    state.create("pending", _candidate(50))
    old = state.record_path("pending", str(_candidate(50)["key"]))
    os.utime(old, (time.time() - 60, time.time() - 60))
    mark = time.time()
    assert not state.changed_since("pending", mark)
    state.create("pending", _candidate(51))
    assert state.changed_since("pending", mark)
    assert not state.changed_since("outbox", mark)
