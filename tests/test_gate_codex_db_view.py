"""The gate's kept view of Codex's databases: an answer is reused only while nothing was committed.

Real SQLite files in Codex's recorded schema, written by other connections and another process
(as Codex writes them); the gate-level test commits a child's thread row between the decision and
the second fresh snapshot and checks that the root is not promoted.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from donebell.shared.statedir import StateDir
from donebell.workers.agents.codex.db_view import DbView
from donebell.workers.gate.commit import apply
from donebell.workers.gate.decide import safe_evaluate
from donebell.workers.kit.gate_context import GateContext
from fixtures.gate.kit import (
    PARENT_THREAD,
    PARENT_TURN,
    CodexWorld,
    dump,
    fast_settings,
    gate,
    lines_of,
    turn_records,
)
from support.codex_sqlite import create_schema

SQL = "SELECT id FROM threads WHERE source = ?"


def _make_db(path: Path, ids: list[str]) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    create_schema(conn)
    _add(conn, ids)
    conn.close()


def _add(conn: sqlite3.Connection, ids: list[str]) -> None:
    conn.executemany(
        "INSERT INTO threads (id, rollout_path, created_at, updated_at, source, model_provider, cwd, title,"
        " sandbox_policy, approval_mode) VALUES (?, '/r', 1, 1, 'exec', 'openai', '/w', 't', '{}', 'never')",
        [(i,) for i in ids],
    )
    conn.commit()


def _ids(rows: list[tuple[object, ...]]) -> list[str]:
    return sorted(str(r[0]) for r in rows)


class _Counting:
    """A ``build`` that counts how often the rows were actually read."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, rows: list[tuple[object, ...]]) -> list[str]:
        self.calls += 1
        return _ids(rows)


def test_an_unchanged_database_is_asked_once_and_a_commit_by_another_process_is_seen(tmp_path: Path) -> None:
    db = tmp_path / "state_5.sqlite"
    _make_db(db, ["a"])
    view, build = DbView(str(db)), _Counting()
    assert view.answer(SQL, ("exec",), build) == ["a"]
    assert view.answer(SQL, ("exec",), build) == ["a"]
    assert build.calls == 1, "an unchanged database was read again"
    code = (
        'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("INSERT INTO threads (id, rollout_path,'
        " created_at, updated_at, source, model_provider, cwd, title, sandbox_policy, approval_mode) VALUES ('b',"
        " '/r', 1, 1, 'exec', 'openai', '/w', 't', '{}', 'never')\"); c.commit()"
    )
    subprocess.run([sys.executable, "-c", code, str(db)], check=True, timeout=60)
    assert view.answer(SQL, ("exec",), build) == ["a", "b"], "a commit by another process went unseen"
    assert build.calls == 2


def test_a_replaced_database_is_opened_anew(tmp_path: Path) -> None:
    db, new = tmp_path / "state_5.sqlite", tmp_path / "new.sqlite"
    _make_db(db, ["a"])
    view = DbView(str(db))
    assert view.answer(SQL, ("exec",), _ids) == ["a"]
    _make_db(new, ["z"])
    os.replace(new, db)  # a new file under the same name: the kept connection still has the old one
    assert view.answer(SQL, ("exec",), _ids) == ["z"]


def test_a_missing_or_corrupt_database_is_unavailable_and_a_new_one_is_read(tmp_path: Path) -> None:
    db = tmp_path / "state_5.sqlite"
    view = DbView(str(db))
    assert view.answer(SQL, ("exec",), _ids) is None  # missing
    db.write_bytes(b"this is not an SQLite database" * 100)
    assert view.answer(SQL, ("exec",), _ids) is None  # corrupt: no exception
    db.unlink()
    _make_db(db, ["c"])
    assert view.answer(SQL, ("exec",), _ids) == ["c"]
    db.unlink()
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    assert view.answer(SQL, ("exec",), _ids) is None, "a deleted database still answered"


@pytest.fixture()
def world(isolated_env: dict[str, Path], state: StateDir) -> CodexWorld:
    return CodexWorld(isolated_env["codex_home"], state)


@pytest.mark.parametrize("child_appears", [False, True])
def test_a_child_row_committed_between_the_snapshots_holds_the_root(
    world: CodexWorld, state: StateDir, tmp_path: Path, child_appears: bool
) -> None:
    """The decision reads the children from ``threads.source`` (one scan for every parent); a child
    thread committed after it, before the second snapshot, must be seen by that snapshot."""
    world.write_rollout(PARENT_THREAD, lines_of("simple-exec.jsonl")[:1] + turn_records(PARENT_TURN))
    world.age(PARENT_THREAD, 30)
    world.add_thread(PARENT_THREAD)
    key = world.submit(PARENT_THREAD, PARENT_TURN)
    record = state.read("pending", key)
    assert record is not None
    ctx = GateContext(state, fast_settings(), time.time(), {}, {})
    first = safe_evaluate(record, ctx)
    assert first.action == "promote", first
    if child_appears:
        child = "01a22be3-099d-72b3-b400-cbf3b3fc9999"
        running = tmp_path / "elsewhere" / f"rollout-{child}.jsonl"  # not in a day folder: only the row finds it
        running.parent.mkdir()
        running.write_bytes(dump(lines_of("subagent-child.jsonl")[:9]))
        world.sql(
            "state_5",
            "INSERT INTO threads (id, rollout_path, created_at, updated_at, source, model_provider, cwd, title,"
            " sandbox_policy, approval_mode) VALUES (?, ?, 1, 1, ?, 'fake', '/w', 't', '{}', 'never')",
            (child, str(running), f'{{"subagent":{{"thread_spawn":{{"parent_thread_id":"{PARENT_THREAD}"}}}}}}'),
        )
    try:
        applied, final = apply(
            state, record, first, ctx.now, retry_max=60, recheck=lambda current: safe_evaluate(current, ctx.fresh())
        )
    finally:
        ctx.close()
    if child_appears:
        assert applied == "waiting" and final.action == "wait", (applied, final)
    else:
        assert applied == "promoted", (applied, final)


def _open_files() -> set[str]:
    names = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            names.add(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            continue  # closed meanwhile (the listing's own fd)
    return names


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc to list open files")
def test_no_codex_database_stays_open_after_a_gate_pass(world: CodexWorld, state: StateDir) -> None:
    """The views live for one pass: between passes Codex may delete or rename its files (Windows
    refuses that while a file is open)."""
    world.write_rollout(PARENT_THREAD, lines_of("simple-exec.jsonl")[:1] + turn_records(PARENT_TURN))
    world.age(PARENT_THREAD, 30)
    world.add_thread(PARENT_THREAD)
    key = world.submit(PARENT_THREAD, PARENT_TURN)
    gate(state, fast_settings())
    assert state.locate(key) == "outbox", "the pass did not get as far as the databases"
    db = str(world.home / "state_5.sqlite")
    assert not {name for name in _open_files() if name.startswith(db)}, "a database file was left open"


def test_a_pass_over_many_roots_scans_the_thread_table_once(
    world: CodexWorld, state: StateDir, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 15 item 7 in a real Codex home: the children query scans all of ``threads`` (no index on
    ``source``). It ran once per candidate and evaluation (2N scans for N candidates, quadratic in a
    backlog); one pass must scan it once, whatever the number of candidates."""
    import uuid

    from donebell.workers.agents.codex import db as codex_db

    scans: list[str] = []
    real_query = codex_db.query

    def counting(conn: sqlite3.Connection, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        if "LIKE" in sql:
            scans.append(sql)
        return real_query(conn, sql, params)

    monkeypatch.setattr(codex_db, "query", counting)
    keys = []
    for _ in range(40):
        thread, turn = str(uuid.uuid4()), str(uuid.uuid4())
        meta = world.root(thread)
        world.write_rollout(thread, [meta, *turn_records(turn)])
        world.age(thread, 30)
        world.add_thread(thread)
        keys.append(world.submit(thread, turn))
    gate(state, fast_settings())
    assert [state.locate(k) for k in keys] == ["outbox"] * len(keys)
    assert len(scans) == 1, f"{len(scans)} scans of threads for {len(keys)} candidates"
