"""The `#…` id on the phone tells threads apart: two Codex threads started in the same millisecond
(UUIDv7s with the same timestamp prefix) reach the server, through the real delivery worker, with
different short ids, each stable for its thread; a Claude session gets the same treatment."""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

from donebell.shared.text.short_id import short_id
from support.delivery_kit import Env
from support.ntfy_standin import NtfyStandin


def _uuid7_same_millisecond(ms: int) -> str:
    """A UUIDv7 for the millisecond ``ms`` with fresh random bits (as Codex makes thread ids)."""
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms << 80) | (0x7 << 76) | ((rand >> 64) & 0xFFF) << 64 | (0b10 << 62) | (rand & (2**62 - 1))
    return str(uuid.UUID(int=value))


def test_threads_started_together_get_different_stable_short_ids(srv: NtfyStandin, tmp_path: Path) -> None:
    env = Env(tmp_path, server=srv.url, origin="laptop")
    first, second = _uuid7_same_millisecond(1764600000000), _uuid7_same_millisecond(1764600000000)
    assert first[:8] == second[:8]  # the old `#…`: identical for both threads
    claude = str(uuid.uuid4())
    for provider, ident in (("codex", first), ("codex", second), ("codex", first), ("claude", claude)):
        env.queue(provider=provider, thread_id=ident)
    run = env.run_cli("worker", "delivery", "--once")
    assert run.returncode == 0, run.stderr
    shown = [re.search(r"#([0-9a-f]{8})$", m["message"]).group(1) for m in srv.messages()]  # type: ignore[union-attr]
    # Delivery goes in key order, not queue order: compare the ids shown as a multiset.
    assert sorted(shown) == sorted([short_id(first), short_id(first), short_id(second), short_id(claude)])
    assert len({short_id(first), short_id(second), short_id(claude)}) == 3  # stable for a thread, distinct across
    assert short_id(first) == first.replace("-", "")[-8:]  # the random tail, not the timestamp
    assert short_id(claude) == claude.replace("-", "")[-8:]


def test_a_non_uuid_id_gets_a_short_hash() -> None:
    assert short_id("5d2c6f0e-claude-session") == short_id("5d2c6f0e-claude-session")
    assert short_id("5d2c6f0e-claude-session") != short_id("5d2c6f0e-claude-sessio2")
    assert re.fullmatch(r"[0-9a-f]{8}", short_id("weird id"))
