"""The one bounded reader (shared/bounded_read.py), on real files: FIFOs, symlinks, directories,
files larger than the bound, windows cut inside a UTF-8 sequence, half-written and invalid lines."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from donebell.shared.bounded_read import (
    NotARegularFile,
    TailWindow,
    complete_lines_region,
    open_regular,
    parse_record,
    read_first_line,
    read_from,
    read_tail,
    reverse_lines,
    utf8_boundary,
)


def _jsonl(*records: object) -> bytes:
    return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records)


def test_fifo_is_refused_at_once_by_every_reader(tmp_path: Path) -> None:
    """A FIFO with no writer is refused by every reader before any read, in well under a second."""
    fifo = tmp_path / "rollout.jsonl"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(NotARegularFile):
        open_regular(fifo)
    assert read_first_line(fifo, 1 << 20) is None
    for read in (
        lambda: read_tail(fifo, 1 << 20),
        lambda: read_from(fifo, 0, 10),
        lambda: list(reverse_lines(fifo, 99)),
    ):
        with pytest.raises(OSError):
            read()
    assert time.monotonic() - started < 1.0


def test_fifo_with_a_writer_and_data_is_still_refused(tmp_path: Path) -> None:
    """A FIFO holding data from a live writer is not read either: the refusal is by file type, not by luck."""
    fifo = tmp_path / "t.jsonl"
    os.mkfifo(fifo)
    held = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # writer and reader end at once: never blocks (Linux)
    try:
        os.write(held, b'{"a":1}\n' * 10)
        with pytest.raises(NotARegularFile):
            read_tail(fifo, 1 << 20)
        assert read_first_line(fifo, 1 << 20) is None
        assert os.read(held, 1 << 10) == b'{"a":1}\n' * 10  # nothing was consumed by the refused reads
    finally:
        os.close(held)


def test_symlinks_are_followed_to_what_they_name(tmp_path: Path) -> None:
    """A symlink to a regular file reads that file; one to a FIFO is refused; a dangling one is absent."""
    target = tmp_path / "real.jsonl"
    target.write_bytes(b'{"first":1}\n{"second":2}\n')
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert read_first_line(link, 100) == b'{"first":1}'
    assert read_tail(link, 100).complete_lines() == [b'{"first":1}', b'{"second":2}']
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    to_fifo = tmp_path / "to-fifo.jsonl"
    to_fifo.symlink_to(fifo)
    with pytest.raises(NotARegularFile):
        read_tail(to_fifo, 100)
    dangling = tmp_path / "dangling.jsonl"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError):
        read_tail(dangling, 100)
    assert read_first_line(dangling, 100) is None


def test_directory_is_not_a_regular_file(tmp_path: Path) -> None:
    """A directory named like a transcript is refused with NotARegularFile, not read or listed."""
    folder = tmp_path / "t.jsonl"
    folder.mkdir()
    with pytest.raises(NotARegularFile) as caught:
        read_tail(folder, 100)
    assert "not a regular file" in str(caught.value) and str(folder) in str(caught.value)
    assert read_first_line(folder, 100) is None


def test_file_larger_than_the_bound_reads_only_the_bound(tmp_path: Path) -> None:
    """Head and tail reads return at most the bound, whatever the file size; the window says where it lies."""
    path = tmp_path / "big.jsonl"
    lines = [json.dumps({"n": i}).encode() for i in range(20000)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    size = path.stat().st_size
    window = read_tail(path, 4096)
    assert (len(window.data), window.offset, window.size) == (4096, size - 4096, size)
    got = window.complete_lines()
    assert got == lines[-len(got) :] and 0 < len(got) < 4096 // 8  # the cut first line is dropped
    assert read_first_line(path, 5) is None  # the first line does not fit in 5 bytes
    assert read_first_line(path, 1 << 20) == lines[0]
    assert read_from(path, size - 10, 1 << 20) == path.read_bytes()[-10:]
    assert len(read_from(path, 0, 100)) == 100
    newest_first = [line for line, _ in reverse_lines(path, 4096)]
    assert newest_first == list(reversed(lines))[: len(newest_first)] and len(newest_first) < 4096 // 8


def test_tail_starting_mid_utf8_sequence_never_yields_a_broken_line(tmp_path: Path) -> None:
    """Whatever byte the window starts at, even inside a multibyte character, every line it keeps decodes."""
    path = tmp_path / "t.jsonl"
    data = _jsonl({"text": "é€😀" * 30}, {"uuid": "last", "text": "ü"})
    path.write_bytes(data)
    for cap in range(1, len(data) + 1):
        window = read_tail(path, cap)
        for line in window.complete_lines():
            assert parse_record(line) is not None, (cap, line)
        starts_mid_char = cap < len(data) and data[len(data) - cap] & 0xC0 == 0x80
        if starts_mid_char:
            assert utf8_boundary(window.data) > 0
    assert [parse_record(x) for x in read_tail(path, len(data) - 3).complete_lines()] == [{"uuid": "last", "text": "ü"}]


def test_half_written_last_line_is_never_a_line(tmp_path: Path) -> None:
    """Bytes after the last newline (a record being written) are left out by the tail, the reverse and the head reader."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":2}\n{"c":')
    window = read_tail(path, 1 << 20)
    assert window.partial and window.complete_lines() == [b'{"a":1}', b'{"b":2}']
    assert [line for line, _ in reverse_lines(path, 1 << 20)] == [b'{"b":2}', b'{"a":1}']
    assert [offset for _, offset in reverse_lines(path, 1 << 20)] == [8, 0]
    path.write_bytes(b'{"only":"unterminated"}')
    assert read_first_line(path, 1 << 20) is None
    assert read_tail(path, 1 << 20).complete_lines() == [] and read_tail(path, 1 << 20).partial
    assert list(reverse_lines(path, 1 << 20)) == []


def test_invalid_utf8_is_returned_as_bytes_for_the_caller_to_skip(tmp_path: Path) -> None:
    """Invalid UTF-8 is not the reader's to judge: the line comes back whole and the record parser skips it."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"a":1}\n\xff\xfe\xfd not utf-8\n{"b":2}\n')
    lines = read_tail(path, 1 << 20).complete_lines()
    assert lines == [b'{"a":1}', b"\xff\xfe\xfd not utf-8", b'{"b":2}']
    assert [parse_record(line) for line in lines] == [{"a": 1}, None, {"b": 2}]
    # a window that starts on invalid continuation bytes is aligned past them all, then past the cut line
    assert utf8_boundary(b"\x80\x80\x80\x80\x80\x80x") == 6
    assert complete_lines_region(b"\x80\x80\x80\x80\x80\x80x\n{}\n", offset=1) == (8, 11)


def test_complete_region_of_a_window_at_file_start_keeps_the_first_line() -> None:
    """Only a window that starts inside the file drops its first line; one at byte 0 keeps it."""
    assert TailWindow(b"a\nb\nc", 0, 5).complete_lines() == [b"a", b"b"]
    assert TailWindow(b"a\nb\nc", 1, 6).complete_lines() == [b"b"]
    assert TailWindow(b"abc", 3, 6).complete_lines() == [] and not TailWindow(b"abc", 3, 6).partial
