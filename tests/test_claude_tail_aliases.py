"""Claude transcripts that are not what their names say (issue 26 items 10 and 11).

* A symlink (or a second hard link) in Claude's projects folder pointing at a transcript made a
  second notification for one prompt: the alias's file name was taken as a session id. One file
  (inode), one identity.
* A transcript truncated and rewritten in place between two scans, to a size at or beyond the
  cursor, lost the prompt written into it: the cursor only compared sizes. A rewrite is detected
  by content (the fingerprint of the line before the cursor), the file is read again from its
  first byte, and the prompt already sent is not repeated.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from donebell.shared.keys import event_key
from donebell.shared.statedir import StateDir
from support.claude_fixtures import cut_after, place, session_of, transcript_lines
from support.claude_tail_kit import age, pending, prompts, watching


@pytest.fixture()
def claude_dir(tmp_path: Path) -> Path:
    path = tmp_path / "claude"
    (path / "projects").mkdir(parents=True)
    return path


@pytest.mark.parametrize("where", ["same-folder", "other-project"])
@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_an_alias_of_a_transcript_is_one_identity(state: StateDir, claude_dir: Path, link: str, where: str) -> None:
    tail = watching(state, claude_dir)
    path = place(claude_dir, "simple")
    tail.scan(full=True)  # the transcript is tailed under its own name before the alias appears
    folder = path.parent if where == "same-folder" else claude_dir / "projects" / "-home-dev-alias"
    folder.mkdir(exist_ok=True)
    alias = folder / "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee.jsonl"
    if link == "symlink":
        alias.symlink_to(path)
    else:
        os.link(path, alias)
    for _ in range(3):
        age(path, 5)
        tail.scan(full=True)
        tail.scan(full=False)
    [rec] = pending(state)
    assert rec["key"] == event_key("claude", session_of("simple"), prompts("simple")[-1])


def _rewrite_in_place(path: Path, data: bytes, min_size: int) -> None:
    """Truncate and rewrite the same inode (as an editor or a sync tool does), at least ``min_size`` long."""
    inode = path.stat().st_ino
    padding = b""
    if len(data) < min_size:  # a JSON line the fold ignores keeps the cursor's offset inside the file
        filler = json.dumps({"type": "file-history-snapshot", "pad": ""}).encode()
        padding = filler[:-2] + b"x" * (min_size - len(data) - len(filler) - 1) + filler[-2:] + b"\n"
    with path.open("r+b") as f:
        f.truncate(0)
        f.write(padding + data)
    assert path.stat().st_ino == inode


@pytest.mark.parametrize("fresh", [True, False], ids=["seen-from-start", "existed-before-the-scanner"])
def test_a_transcript_rewritten_in_place_keeps_the_prompt_written_into_it(
    state: StateDir, claude_dir: Path, fresh: bool
) -> None:
    first = transcript_lines("simple")
    if not fresh:  # the session was working when the scanner first looked: its prompt still counts
        path = place(claude_dir, "simple", cut_after(first, lambda r: r.get("type") == "user"))
        tail = watching(state, claude_dir)
        path.write_bytes(b"".join(first))
    else:
        tail = watching(state, claude_dir)
        path = place(claude_dir, "simple")
    age(path, 5)
    tail.scan(full=False)
    [sent] = pending(state)
    assert sent["prompt_id"] == prompts("simple")[-1]
    cursor_offset = path.stat().st_size
    # Another conversation's lines (another prompt) written over it, as long as the old content.
    other = [line.replace(b"simple", b"rewrite") for line in transcript_lines("apierror529")]
    session = session_of("simple").encode()
    other = [line.replace(session_of("apierror529").encode(), session) for line in other]
    _rewrite_in_place(path, b"".join(other), cursor_offset)
    assert path.stat().st_size >= cursor_offset
    age(path, 5)
    tail.scan(full=False)
    tail.scan(full=False)
    keys = sorted(str(r["key"]) for r in pending(state))
    expected = sorted({str(sent["key"]), event_key("claude", session_of("simple"), prompts("apierror529")[-1])})
    assert keys == expected, keys  # the new prompt found once, the old one not repeated
