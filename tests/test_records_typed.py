"""The records' vocabularies and shapes (issue 35): one list per vocabulary, checked where a record
is made, and the type checker's view of a record (``shared/record_types.py``) in step with the
records the code writes, at no cost to the hook."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

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


def test_a_receipt_with_an_unknown_reason_or_status_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under test a receipt is made with a reason of the fixed vocabulary or not at all: ``explain``
    and ``status`` show these words, and a misspelled one would be a receipt nobody can read back."""
    monkeypatch.setenv(records.STRICT_ENV, "1")  # (tests/conftest.py sets it for every test)
    record = records.new_candidate(key="k" * 64, provider="codex", source="codex-stop")
    assert records.new_receipt(record, status="suppressed", reason="subagent")["reason"] == "subagent"
    misspelt: Any = "sub-agent"  # (a word mypy would refuse: as one read from data)
    with pytest.raises(ValueError, match="unknown receipt reason 'sub-agent'"):
        records.new_receipt(record, status="suppressed", reason=misspelt)
    not_a_status: Any = "pending"
    with pytest.raises(ValueError, match="unknown receipt status 'pending'"):
        records.new_receipt(record, status=not_a_status, reason="subagent")


def test_a_candidate_with_an_unknown_outcome_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(records.STRICT_ENV, "1")
    assert records.new_candidate(key="k", provider="codex", source="scanner", outcome="failed")["outcome"] == "failed"
    assert "outcome" not in records.new_candidate(key="k", provider="codex", source="codex-stop")
    with pytest.raises(ValueError, match="unknown outcome 'finished'"):
        records.new_candidate(key="k", provider="codex", source="scanner", outcome="finished")


def test_in_use_an_unknown_word_is_reported_and_the_record_still_made(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Outside the tests the record is made with the word as given and the error goes to stderr
    (the service log): a receipt that failed to be made would leave a sent notification in
    ``outbox/``, sent again every pass."""
    monkeypatch.delenv(records.STRICT_ENV)
    record = records.new_candidate(key="k" * 64, provider="codex", source="scanner", outcome="finished")
    assert dict(record)["outcome"] == "finished"  # (a word its type does not allow)
    bad_reason: Any = "sub-agent"  # as a remote gate worker's answer could carry it
    receipt = records.new_receipt(record, status="suppressed", reason=bad_reason)
    assert dict(receipt)["reason"] == "sub-agent" and receipt["status"] == "suppressed"
    err = capsys.readouterr().err
    assert "unknown outcome 'finished'" in err and "unknown receipt reason 'sub-agent'" in err


def test_the_type_checker_refuses_a_misspelled_reason(tmp_path: Path) -> None:
    """``new_receipt``'s ``reason`` and ``status`` are the ``Literal`` vocabularies: mypy reads a
    misspelled word at the call, before any test runs it."""
    package = tmp_path / "donebell"
    package.mkdir()
    os.symlink(ROOT / "shared", package / "shared")
    (tmp_path / "use.py").write_text(
        "from donebell.shared.records import new_receipt\n"
        "new_receipt({}, status='suppressed', reason='subagent')\n"
        "new_receipt({}, status='suppressed', reason='sub-agent')\n"
        "new_receipt({}, status='pending', reason='subagent')\n"
    )
    mypy = Path(sys.executable).with_name("mypy")
    if not mypy.exists():
        pytest.skip("mypy is not installed in this environment (install the test extra)")
    result = subprocess.run(
        [str(mypy), "--strict", "--no-incremental", "--follow-imports=silent", "--explicit-package-bases", "use.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert [line.split(":")[1] for line in errors] == ["3", "4"], result.stdout


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


def test_a_receipt_declares_every_field_it_copies_from_its_record() -> None:
    """What ``new_receipt`` carries over from a record (``_RECEIPT_FIELDS``) is a declared field of
    ``Receipt``: a consumer reading it through the shape is checked, not refused."""
    assert set(records._RECEIPT_FIELDS) <= _declared(record_types.Receipt)


def test_a_claude_session_record_has_the_declared_fields(tmp_path: Path) -> None:
    """The session record the Claude hook writes (a new epoch, then a held prompt) is ``ClaudeSession``."""
    from donebell.workers.agents.claude import session

    state = StateDir(tmp_path / "state").ensure()
    made = session.advance(state, "s-1", "p-1", None, "/home/dev")
    assert session.note_held(state, "s-1", "p-1", "background work")
    written = session.read_session(state, "s-1")
    assert written is not None and written["held_prompt_id"] == "p-1"
    assert set(made) | set(written) <= _declared(record_types.ClaudeSession)


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
