"""Is a Claude transcript still the file its cursor was reading? (issue 26 item 11)

A cursor records the transcript's device/inode, the byte offset read to, and a fingerprint of the
line that ends there (``line_fp``, the digest the Codex rollout cursor uses too). A transcript
replaced by a rename has another inode; one truncated below the offset is shorter; one truncated
and rewritten in place to at least the old size was taken for the same file, and everything
written before the offset (a new prompt) was never read: only the fingerprint tells it apart.
A restarted transcript is read again from its first byte, and the prompts its old cursor had
already judged (``submitted``, ``history``) are carried over so that none of them is repeated.
"""

from __future__ import annotations

from typing import IO, Any

from donebell.shared.keys import transcript_index_key
from donebell.shared.statedir import InvalidRecord, StateDir
from donebell.workers.kit.jsonl_tail import FileStat, line_fingerprint

FIELDS = ("dev", "ino", "offset", "size", "mtime_ns")
#: What a restarted transcript keeps of its old cursor: the prompts already judged.
CARRIED = ("submitted", "history")


def load(state: StateDir, folder: str, path: str) -> dict[str, Any] | None:
    """The persisted cursor of ``path``; None if absent or not a cursor (a broken one is dead-lettered)."""
    key = transcript_index_key(path)
    try:
        rec = state.read(folder, key)
    except InvalidRecord as exc:
        state.dead_letter_invalid(folder, f"{key}.json", f"claude cursor: {exc}")
        return None
    ok = rec is not None and rec.get("path") == path and isinstance(rec.get("fold"), dict)
    return rec if rec is not None and ok and all(isinstance(rec.get(n), int) for n in FIELDS) else None


def continues(cur: dict[str, Any], st: FileStat, f: IO[bytes]) -> bool:
    """False if the file is not the one the cursor was reading (replaced, truncated, rewritten)."""
    if (cur["dev"], cur["ino"]) != (st.dev, st.ino) or st.size < cur["offset"]:
        return False
    if cur["offset"] == 0 or cur.get("skipping"):
        return True
    fingerprint = cur.get("line_fp")
    if isinstance(fingerprint, str):
        return line_fingerprint(f, cur["offset"]) == fingerprint
    f.seek(cur["offset"] - 1)  # a cursor written before fingerprints: it sits just after a newline
    return f.read(1) == b"\n"


def remember_position(cur: dict[str, Any], f: IO[bytes]) -> None:
    """Fingerprint the line the cursor now ends after (none while it skips an oversized line)."""
    cur["line_fp"] = None if cur.get("skipping") else line_fingerprint(f, cur["offset"])
