"""The records' vocabularies and shapes (issue 35): one list per vocabulary, checked where a record
is made, and the type checker's view of a record (``shared/record_types.py``) in step with the
records the code writes, at no cost to the hook."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest
from donebell.shared import record_types, records
from donebell.shared.statedir import StateDir
from donebell.workers.kit.jsonl_tail import Cursor

ROOT = Path(__file__).resolve().parents[1]


def test_the_literal_vocabularies_are_the_run_time_lists() -> None:
    """``ReceiptReason`` and ``Outcome`` (the type checker's) are exactly ``REASONS`` and ``OUTCOMES``."""
    assert get_args(record_types.ReceiptReason) == records.REASONS
    assert get_args(record_types.Outcome) == records.OUTCOMES
    assert get_args(record_types.ReceiptStatus) == records.RECEIPT_STATUSES


def test_a_receipt_with_an_unknown_reason_or_status_is_refused() -> None:
    """A receipt is made with a reason of the fixed vocabulary or not at all: ``explain`` and
    ``status`` show these words, and a misspelled one would be a receipt nobody can read back."""
    record = records.new_candidate(key="k" * 64, provider="codex", source="codex-stop")
    assert records.new_receipt(record, status="suppressed", reason="subagent")["reason"] == "subagent"
    with pytest.raises(ValueError, match="unknown receipt reason 'sub-agent'"):
        records.new_receipt(record, status="suppressed", reason="sub-agent")
    with pytest.raises(ValueError, match="unknown receipt status 'pending'"):
        records.new_receipt(record, status="pending", reason="subagent")


def test_a_candidate_with_an_unknown_outcome_is_refused() -> None:
    assert records.new_candidate(key="k", provider="codex", source="scanner", outcome="failed")["outcome"] == "failed"
    assert "outcome" not in records.new_candidate(key="k", provider="codex", source="codex-stop")
    with pytest.raises(ValueError, match="unknown outcome 'finished'"):
        records.new_candidate(key="k", provider="codex", source="scanner", outcome="finished")


def _declared(typed: type) -> set[str]:
    return set(typed.__required_keys__) | set(typed.__optional_keys__)  # type: ignore[attr-defined]


def test_the_typed_shapes_declare_every_field_the_constructors_write(tmp_path: Path) -> None:
    """What ``new_candidate``, ``to_outbox``, ``new_receipt`` and a cursor write by themselves is
    declared in their ``TypedDict`` (a field added to one without the other fails here)."""
    candidate = records.new_candidate(key="k" * 64, provider="codex", source="codex-stop")
    assert set(candidate) <= _declared(record_types.Candidate)
    assert set(records.to_outbox(candidate, verdict="idle")) <= _declared(record_types.OutboxRecord)
    receipt = records.new_receipt(candidate, status="suppressed", reason="subagent")
    assert set(receipt) <= _declared(record_types.Receipt)
    log = tmp_path / "rollout.jsonl"
    log.write_text("{}\n")
    st = log.stat()
    cursor = Cursor(str(log), st.st_dev, st.st_ino, 3, st.st_size, st.st_mtime_ns)
    assert set(cursor.to_record("codex")) <= _declared(record_types.CursorRecord)
    assert StateDir(tmp_path / "state").root  # (a state directory is not needed to build them)


def test_record_types_is_imported_only_for_the_type_checker() -> None:
    """No module imports ``record_types`` at run time: the hook pays nothing for the shapes."""
    offenders = []
    for folder in ("shared", "workers", "supervisor"):
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            guarded = {
                id(inner)
                for node in ast.walk(tree)
                if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                for inner in ast.walk(node)
            }
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("record_types"):
                    if id(node) not in guarded:
                        offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []
