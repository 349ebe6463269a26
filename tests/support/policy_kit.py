"""Candidates that go through the real gate (``idle_detection_mode: off`` promotes on the hook's
own evidence) and the real delivery role, for the notification-policy tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.delivery_kit import Env, outbox_record, wire_bodies


def pending(env: Env, **fields: Any) -> dict[str, Any]:
    """A pending candidate as a hook writes it; the gate of the next pass promotes it."""
    rec = outbox_record(**fields)
    cand = {
        k: v
        for k, v in rec.items()
        if k not in ("sequence_id", "promoted_at", "verdict", "attempts", "next_attempt_at", "last_error")
    }
    cand["kind"] = "candidate"
    assert env.state.create("pending", cand)
    return cand


def policy_env(root: Path, server: str, **config: Any) -> Env:
    return Env(root, server=server, idle_detection_mode="off", **config)


def receipt(env: Env, key: str) -> tuple[str | None, dict[str, Any] | None]:
    folder = env.state.locate(key)
    return folder, (env.state.read(folder, key) if folder else None)


__all__ = ["Env", "pending", "policy_env", "receipt", "wire_bodies"]
