"""``python -m benchmarks --write`` refreshes only the table between the page's markers."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import __main__ as runner


def test_write_replaces_the_marked_table_and_keeps_the_prose(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text(f"# B\n\nprose before\n\n{runner.WRITE_START}\nold table\n{runner.WRITE_END}\n\nprose after\n")
    monkeypatch.setattr(runner, "DOC", page)
    runner.write_table("| new | table |", ["delivery"])
    text = page.read_text()
    assert "old table" not in text and "| new | table |" in text
    assert text.startswith("# B\n\nprose before\n\n") and text.endswith("\n\nprose after\n")
    assert "`python -m benchmarks --write delivery`" in text


def test_write_appends_the_table_to_a_page_without_markers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "benchmarks.md"
    page.write_text("# B\n\nprose\n")
    monkeypatch.setattr(runner, "DOC", page)
    runner.write_table("| t |", [])
    text = page.read_text()
    assert text.startswith("# B\n\nprose\n\n" + runner.WRITE_START) and text.endswith(runner.WRITE_END + "\n")


def test_compare_writes_its_side_by_side_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--compare REF --write`` stores the comparison's table, naming the command that made it."""
    from benchmarks import compare

    page = tmp_path / "benchmarks.md"
    page.write_text(f"# B\n\n{runner.WRITE_START}\nold\n{runner.WRITE_END}\n")
    monkeypatch.setattr(runner, "DOC", page)
    monkeypatch.setattr(runner, "compile_package", lambda: None)

    def fake_compare(ref: str, names: list[str], rounds: int, tree: object, write: object = None) -> int:
        assert callable(write)
        write(f"| side by side with {ref} |")
        return 0

    monkeypatch.setattr(compare, "main", fake_compare)
    assert runner.main(["--compare", "81a8c74", "--rounds", "2", "--write", "delivery"]) == 0
    text = page.read_text()
    assert "| side by side with 81a8c74 |" in text and "old" not in text
    assert "`python -m benchmarks --compare 81a8c74 --rounds 2 --write delivery`" in text
