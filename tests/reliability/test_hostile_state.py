"""Hostile and broken files in the state directory: moved aside with a reason, never followed, never fatal.

Every bad file sits beside a good root turn; the pass must deliver the good turn, move each bad
``<key>.json`` to ``dead/`` (a sanitized dead letter plus the original bytes as ``.raw``), never
write through a planted symlink, and never hang or crash (design.md, "An unparsable file anywhere").
"""

from __future__ import annotations

import json
import os
import socket
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from donebell.shared.keys import event_key
from donebell.shared.statedir import MUTATION_LOCK_SHARDS
from support.figures import record
from support.ntfy_standin import NtfyStandin
from support.rig import Rig

HUGE = 100 << 20  # the 100 MB single-line record


def _valid(key: str) -> bytes:
    return json.dumps({"schema": 1, "kind": "candidate", "key": key, "provider": "codex"}).encode()


def _plant(base: Path, key: str, kind: str, outside: Path) -> None:
    """Put one kind of broken or hostile file at ``base/<key>.json``."""
    path = base / f"{key}.json"
    whole = _valid(key)
    if kind == "truncated":
        path.write_bytes(whole[: len(whole) // 2])
    elif kind == "garbage":
        path.write_bytes(os.urandom(512))
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "invalid-utf8":
        path.write_bytes(whole[:-1] + b',"cwd":"\xff\xfe\xc0"}')
    elif kind == "bom":
        path.write_bytes(b"\xef\xbb\xbf" + whole)
    elif kind == "array":
        path.write_bytes(b"[1, 2, 3]")
    elif kind == "future-schema":
        path.write_bytes(whole.replace(b'"schema": 1', b'"schema": 99'))
    elif kind == "no-schema":
        path.write_bytes(whole.replace(b'"schema": 1, ', b""))
    elif kind == "key-mismatch":
        path.write_bytes(_valid(event_key("codex", "other", "turn")))
    elif kind == "nul-bytes":
        path.write_bytes(b"\x00" * 4096)
    elif kind == "deep-nesting":
        path.write_bytes(whole[:-1] + b',"x":' + b"[" * 200_000 + b"]" * 200_000 + b"}")
    elif kind == "huge-line":
        with open(path, "wb") as f:
            f.write(whole[:-1] + b',"pad":"')
            chunk = b"a" * (1 << 20)
            for _ in range(HUGE >> 20):
                f.write(chunk)
            f.write(b'"}')
    elif kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        # Bound at a short path (AF_UNIX paths are limited to ~108 bytes), then renamed into place.
        short = Path(tempfile.mkdtemp(prefix="db-")) / "s"
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(short))
        sock.close()
        os.rename(short, path)
        short.parent.rmdir()
    elif kind == "symlink-outside":
        path.symlink_to(outside)
    elif kind == "dangling-symlink":
        path.symlink_to(base / "nowhere")
    else:
        raise AssertionError(kind)


KINDS = (
    "truncated",
    "garbage",
    "empty",
    "invalid-utf8",
    "bom",
    "array",
    "future-schema",
    "no-schema",
    "key-mismatch",
    "nul-bytes",
    "deep-nesting",
    "huge-line",
    "directory",
    "fifo",
    "socket",
    "symlink-outside",
    "dangling-symlink",
)


def _outside(rig: Rig) -> Path:
    outside = rig.root / "outside" / "precious.txt"
    outside.parent.mkdir()
    outside.write_text("precious\n")
    return outside


def _dead_letters(rig: Rig) -> list[dict[str, object]]:
    return [r for r in rig.read_all("dead") if r.get("reason") == "invalid-record"]


@pytest.mark.parametrize("folder", ["pending", "outbox"])
def test_broken_record_files_are_dead_lettered_and_the_good_turn_still_goes_out(
    make_rig: Callable[..., Rig], standin: NtfyStandin, folder: str
) -> None:
    """17 kinds of broken file in pending/ or outbox/ (incl. a 100 MB line, a FIFO, a symlink) each become a
    dead letter with its bytes kept, a symlink's target is untouched, and the good turn is delivered once."""
    rig = make_rig()
    good = rig.new_turn()
    assert rig.hook_stop(good).rc == 0
    rig.complete(good)
    outside = _outside(rig)
    bad = {kind: event_key("codex", f"hostile-{folder}", kind) for kind in KINDS}
    for kind, key in bad.items():
        _plant(rig.state_dir / folder, key, kind, outside)

    run = rig.deliver_once()

    assert run.rc == 0, run.output
    assert rig.where(good.key) == ["sent"]
    assert [m["sequence_id"] for m in standin.messages(rig.topic)] == [good.sequence_id]
    left = [kind for kind, key in bad.items() if os.path.lexists(rig.state_dir / folder / f"{key}.json")]
    assert left == [], f"still in {folder}/: {left}"
    letters = _dead_letters(rig)
    assert sorted(str(r["original_name"]) for r in letters) == sorted(f"{k}.json" for k in bad.values())
    for letter in letters:  # the original bytes stay beside each letter, never silently lost
        assert os.path.lexists(rig.state_dir / "dead" / f"{letter['key']}.raw")
    assert outside.read_text() == "precious\n"
    assert rig.partial_records() == []
    record(f"hostile_files_{folder}", bad_inputs=len(KINDS), dead_lettered=len(letters), good_delivered=1, lost=0)


def test_broken_cursor_files_are_dead_lettered_and_scanning_goes_on(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """Broken cursors in watch/local/ are moved aside; the rollout is re-read from its start, the turn it
    already reported is not notified again, and a new turn is found."""
    rig = make_rig()
    first = rig.new_turn(complete=True)
    rig.settle([first.key])
    cursors = sorted((rig.state_dir / "watch" / "local").iterdir())
    assert len(cursors) == 1
    cursors[0].write_bytes(b'{"schema":1,"kind":"cursor","key"')  # the real cursor, cut short
    outside = _outside(rig)
    kinds = [k for k in KINDS if k != "huge-line"]  # a cursor is read with the same 64 MiB cap as records
    for kind in kinds:
        _plant(rig.state_dir / "watch" / "local", event_key("codex", "hostile-cursor", kind), kind, outside)
    second = rig.new_turn(complete=True)

    scan = rig.scan_once()
    rig.settle([second.key])

    assert scan.rc == 0, scan.output
    assert rig.where(first.key) == rig.where(second.key) == ["sent"]
    sent = sorted(m["sequence_id"] for m in standin.messages(rig.topic))
    assert sent == sorted([first.sequence_id, second.sequence_id])  # the replay did not notify twice
    assert outside.read_text() == "precious\n"
    left = [p.name for p in (rig.state_dir / "watch" / "local").iterdir() if p.name.startswith("hostile")]
    assert left == []
    record("hostile_files_watch", bad_inputs=len(kinds) + 1, duplicates=0, lost=0)


@pytest.mark.parametrize(
    "target",
    ["notify.log", "health/delivery.json", "locks/delivery.lock", "locks/delivery.owner.json", "mutation-lock"],
)
def test_a_symlink_planted_in_the_state_dir_is_never_written_through(
    make_rig: Callable[..., Rig], standin: NtfyStandin, target: str
) -> None:
    """A symlink planted at a file the roles write (log, health, role lock, owner, mutation lock) never
    changes its target, and the turn is still delivered (a planted lock link is removed, not followed)."""
    rig = make_rig()
    turn = rig.new_turn()
    assert rig.hook_stop(turn).rc == 0  # creates the state dir
    rig.complete(turn)
    outside = _outside(rig)
    if target == "mutation-lock":  # the shard file that serializes this very turn's key
        target = f"mutation-locks/shard-{int(turn.key[:8], 16) % MUTATION_LOCK_SHARDS:02d}.lock"
    link = rig.state_dir / target
    if os.path.lexists(link):
        link.unlink()
    link.symlink_to(outside)

    run = rig.deliver_once()
    later = rig.new_turn()
    assert rig.hook_stop(later).rc == 0

    assert run.rc == 0, run.output
    assert outside.read_text() == "precious\n"
    assert rig.where(turn.key) == ["sent"]
    assert rig.where(later.key) == ["pending"]


@pytest.mark.parametrize("folder", ["outbox", "pending", "tmp"])
def test_a_state_folder_replaced_by_a_symlink_is_refused(make_rig: Callable[..., Rig], folder: str) -> None:
    """A record folder swapped for a symlink to another directory makes donebell refuse, loudly, to use
    the state dir: nothing is written into the link's target."""
    rig = make_rig()
    turn = rig.new_turn()
    assert rig.hook_stop(turn).rc == 0
    rig.complete(turn)
    elsewhere = rig.root / "elsewhere"
    elsewhere.mkdir()
    moved = rig.root / f"{folder}.orig"
    os.rename(rig.state_dir / folder, moved)
    (rig.state_dir / folder).symlink_to(elsewhere, target_is_directory=True)

    hook = rig.hook_stop(rig.new_turn())
    run = rig.deliver_once()

    assert hook.rc == 0  # a hook never hurts the agent
    assert run.rc != 0 and "not a plain directory" in run.output, run.output
    assert list(elsewhere.iterdir()) == []


def test_loose_permissions_are_tightened_and_a_readable_secret_config_is_refused(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """A state dir opened to the group/world is put back to 0700; a config holding a token that others
    can read stops delivery with a clear error (exit 78) and the record waits, untouched, in outbox/."""
    rig = make_rig()
    turn = rig.new_turn()
    assert rig.hook_stop(turn).rc == 0
    rig.complete(turn)
    for path in (rig.state_dir, rig.state_dir / "pending", rig.state_dir / "outbox"):
        os.chmod(path, 0o777)
    rig.update_config(token="tk_reliability_loose_config_token")
    os.chmod(rig.config_path, 0o644)

    refused = rig.deliver_once()

    assert refused.rc == 78, refused.output
    assert "chmod 600" in refused.output
    for path in (rig.state_dir, rig.state_dir / "pending", rig.state_dir / "outbox"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    assert rig.where(turn.key) == ["pending"] and standin.messages(rig.topic) == []

    os.chmod(rig.config_path, 0o600)
    rig.settle([turn.key])
    assert rig.where(turn.key) == ["sent"]
