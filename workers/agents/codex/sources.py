"""Where the Codex gate finds its evidence: rollout paths, thread rows, spawn edges, goals.

Everything is read-only (``shared.codex_db``: ``mode=ro`` + ``query_only``) and tolerant: a
missing, locked or foreign-schema database yields "unavailable", never an exception, and never
"busy" by itself. Answers come from the pass's database views (``GateContext.pass_resources``), reused
only while nothing was committed since; "unavailable" is remembered in ``GateContext.cache``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from donebell.workers.agents.codex import codex_home as default_codex_home
from donebell.workers.agents.codex import db as codex_db
from donebell.workers.agents.codex import identity
from donebell.workers.agents.codex.db_view import Build, Rows, pass_databases
from donebell.workers.agents.codex.rollout_index import RolloutIndex
from donebell.workers.kit.gate_context import GateContext


@dataclass(frozen=True)
class Homes:
    """The Codex home and SQLite home a candidate's evidence lives in."""

    codex_home: Path
    sqlite_home: Path


def homes(record: dict[str, Any]) -> Homes:
    """From the record (the hook/scanner saw them), else the environment's defaults."""
    home = record.get("codex_home")
    codex = Path(home) if isinstance(home, str) and home else default_codex_home()
    sqlite = record.get("sqlite_home")
    if isinstance(sqlite, str) and sqlite:
        return Homes(codex, Path(sqlite))
    env = os.environ.get("CODEX_SQLITE_HOME")
    if env and not (isinstance(home, str) and home):
        return Homes(codex, Path(env))
    return Homes(codex, codex)


#: Process-lifetime memo sizes: beyond this a memo starts over (they are only shortcuts).
MEMO_LIMIT = 4096


def _bounded(ctx: GateContext, name: str) -> dict[Any, Any]:
    memo: dict[Any, Any] = ctx.persistent.setdefault(name, {})
    if len(memo) > MEMO_LIMIT:
        memo.clear()
    return memo


def _db_query(
    ctx: GateContext,
    h: Homes,
    db: str,
    sql: str,
    params: tuple[object, ...],
    build: Build | None = None,
) -> Any:
    """Rows (or ``build(rows)``), or None when the database is unavailable.

    Answers come from the pass's view of the database (``codex_db_view``: reused only while
    nothing was committed since, so the second snapshot stays fresh); "unavailable" is remembered
    in the context, so a locked database costs the pass's decisions its busy timeout once.
    """
    path = os.path.join(h.sqlite_home, db)
    if ("db-unavailable", path) in ctx.cache:
        return None
    answer = pass_databases(ctx).view(path).answer(sql, params, build)
    if answer is None:
        ctx.cache[("db-unavailable", path)] = True
    return answer


def thread_row(ctx: GateContext, h: Homes, thread_id: str) -> tuple[str | None, str | None] | None:
    """``(rollout_path, source)`` from ``state_5.threads``; None if unavailable or unknown."""
    rows = _db_query(ctx, h, codex_db.STATE_DB, "SELECT rollout_path, source FROM threads WHERE id = ?", (thread_id,))
    if not rows:
        return None
    path, source = rows[0]
    return (path if isinstance(path, str) else None, source if isinstance(source, str) else None)


def goal_status(ctx: GateContext, h: Homes, thread_id: str) -> tuple[str | None, str]:
    """``(status, evidence)``; status None when there is no goal or the database is unavailable."""
    rows = _db_query(ctx, h, codex_db.GOALS_DB, "SELECT status FROM thread_goals WHERE thread_id = ?", (thread_id,))
    if rows is None:
        return None, "goal database unavailable (not treated as active)"
    if not rows:
        return None, "no goal"
    status = rows[0][0]
    return (status if isinstance(status, str) else None), f"goal status {status}"


def child_ids(ctx: GateContext, h: Homes, parent: str) -> tuple[set[str], list[str]]:
    """Direct children of ``parent`` from spawn edges and ``threads.source``; plus notes."""
    notes: list[str] = []
    children: set[str] = set()
    edges = _db_query(
        ctx,
        h,
        codex_db.STATE_DB,
        "SELECT child_thread_id FROM thread_spawn_edges WHERE parent_thread_id = ?",
        (parent,),
    )
    if edges is None:
        notes.append("spawn edges unavailable")
    else:
        children.update(str(r[0]) for r in edges if isinstance(r[0], str))
    # `codex exec` children may have no edge row: their threads.source names the parent. One scan
    # of the table answers every parent (`source` has no index: a scan per parent made a backlog
    # quadratic in the number of threads), rebuilt only when Codex committed something.
    by_parent = _db_query(
        ctx,
        h,
        codex_db.STATE_DB,
        "SELECT id, source FROM threads WHERE source LIKE ?",
        ('%"parent_thread_id":"%',),
        build=_children_by_parent,
    )
    children.update((by_parent or {}).get(parent, ()))
    return children, notes


def _children_by_parent(rows: Rows) -> dict[str, frozenset[str]]:
    """``parent thread id -> its children's ids`` from ``threads (id, source)`` rows."""
    found: dict[str, set[str]] = {}
    for thread_id, source in rows:
        ident = identity.classify_threads_source(source, thread_id if isinstance(thread_id, str) else None)
        if ident.parent_thread_id and ident.thread_id:
            found.setdefault(ident.parent_thread_id, set()).add(ident.thread_id)
    return {parent: frozenset(kids) for parent, kids in found.items()}


def session_dirs(codex_home: Path, since: float, now: float) -> list[Path]:
    """``sessions/YYYY/MM/DD`` folders (UTC) from ``since`` to ``now`` (at most 8 days)."""
    out: list[Path] = []
    day = datetime.fromtimestamp(max(since, now - 7 * 86400), UTC).date()
    last = datetime.fromtimestamp(now, UTC).date()
    while day <= last:
        out.append(codex_home / "sessions" / f"{day:%Y}" / f"{day:%m}" / f"{day:%d}")
        day += timedelta(days=1)
    return out


def find_rollout(ctx: GateContext, h: Homes, thread_id: str, hint: object = None) -> Path | None:
    """The rollout of ``thread_id``: the record's path, the thread index, then a bounded search."""
    if isinstance(hint, str) and hint and Path(hint).name.endswith(f"{thread_id}.jsonl") and os.path.isfile(hint):
        return Path(hint)
    memo = _bounded(ctx, "rollout_paths")
    known = memo.get(thread_id)
    if known and os.path.isfile(known):
        return Path(known)
    row = thread_row(ctx, h, thread_id)
    if row and row[0] and os.path.isfile(row[0]):
        memo[thread_id] = row[0]
        return Path(row[0])
    if isinstance(hint, str) and hint and os.path.isfile(hint):
        return Path(hint)
    for folder in reversed(session_dirs(h.codex_home, ctx.now - 7 * 86400, ctx.now)):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if name.endswith(f"-{thread_id}.jsonl"):
                memo[thread_id] = str(folder / name)
                return folder / name
    return None


def children_on_disk(ctx: GateContext, h: Homes, parent: str, since: float) -> dict[str, Path]:
    """Rollouts modified since ``since`` whose ``session_meta`` names ``parent`` as their parent.

    The fallback for children with neither an edge row nor a thread row yet. The day folders are
    indexed once for every candidate of the pass and the next ones (``rollout_index``): a listing
    per candidate made a backlog's pass quadratic.
    """
    index: RolloutIndex = ctx.persistent.setdefault("rollout_index", RolloutIndex())
    return index.children(session_dirs(h.codex_home, since, ctx.now), parent, since)


def classify_thread(ctx: GateContext, h: Homes, thread_id: str, rollout: Path | None) -> identity.ThreadIdentity:
    """Root / subagent / unknown from the rollout's first line, then ``threads.source``."""
    if rollout is not None:
        ident = identity.classify_rollout(rollout)
        if ident.classification != "unknown":
            return ident
    row = thread_row(ctx, h, thread_id)
    if row and row[1]:
        return identity.classify_threads_source(row[1], thread_id)
    why = "no rollout and no thread row" if rollout is None else "rollout first line unreadable, no thread row"
    return identity.ThreadIdentity("unknown", thread_id, evidence=why)
