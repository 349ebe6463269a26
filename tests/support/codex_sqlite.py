"""Codex's recorded SQLite schemas, ready to execute: the one copy every test and benchmark uses.

``tests/fixtures/codex/sqlite-schema/<name>.sqlite.schema.sql`` are ``sqlite3 .schema`` dumps of
the databases codex 0.171.0 created (``state_5``: the thread index; ``goals_1``: the goal store).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

SCHEMAS = Path(__file__).resolve().parents[1] / "fixtures" / "codex" / "sqlite-schema"

#: Execution order by statement kind: a dump lists triggers before the tables they are on.
_ORDER = {"CREATE TABLE": 0, "CREATE INDEX": 1, "CREATE UNIQUE INDEX": 1, "CREATE TRIGGER": 2}


def schema_statements(name: str = "state_5") -> list[str]:
    """The statements of ``<name>.sqlite.schema.sql``: tables, then indexes, then triggers.

    ``sqlite_sequence`` is left out: SQLite creates it by itself.
    """
    statements, current = [], ""
    for line in (SCHEMAS / f"{name}.sqlite.schema.sql").read_text(encoding="utf-8").splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    statements = [s for s in statements if not s.startswith("CREATE TABLE sqlite_sequence")]
    return sorted(statements, key=lambda s: next((v for k, v in _ORDER.items() if s.startswith(k)), 3))


def create_schema(db: sqlite3.Connection, name: str = "state_5") -> None:
    """Create Codex's ``name`` database schema (empty tables) in ``db``."""
    for statement in schema_statements(name):
        db.execute(statement)
