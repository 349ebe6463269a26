"""Codex hook trust, computed the way Codex 0.171.0 does, and compared read-only with config.toml.

Codex runs a non-managed hook only if ``config.toml`` has
``[hooks.state."<abs source path>:<event_snake>:<group>:<handler>"]`` with a ``trusted_hash`` equal
to the hook's current hash: ``"sha256:" + sha256`` of compact, key-sorted, UTF-8 (not ASCII-escaped)
JSON ``{"event_name", "matcher"?, "hooks": [{"type": "command", "command", "timeout", "async",
"statusMessage"?}]}``. Measured on the real binary (``codex app-server`` ``hooks/list`` currentHash;
see tests/test_install_trust_hash.py for the cases): the source path is canonical (symlinks resolved); the
default timeout is 600 s and 0 counts as 1; SessionEnd and Interrupt timeouts are clamped to 3 s;
Stop, UserPromptSubmit and Interrupt ignore the matcher, so it is not hashed for them.

donebell never writes ``trusted_hash`` (docs/agent-facts.md, "Codex: hooks and trust": trusting code
that runs on every turn is the user's decision): the user reviews the hook
with ``/hooks`` in Codex. This module only reads.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from donebell.workers.agents.codex.managed import CODEX_STOP_ARGS
from donebell.workers.kit.install.managed import is_managed_handler

DEFAULT_TIMEOUT = 600
_NO_MATCHER_EVENTS = frozenset({"stop", "user_prompt_submit", "interrupt"})
_SHORT_TIMEOUT_EVENTS = frozenset({"session_end", "interrupt"})
_SHORT_TIMEOUT = 3


def event_snake(event: str) -> str:
    """``UserPromptSubmit`` -> ``user_prompt_submit`` (the form in keys and hashes)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def state_key(source: Path, event: str, group: int, handler: int) -> str:
    """The ``[hooks.state]`` key of one handler; ``source`` is made canonical like Codex does."""
    return f"{os.path.realpath(source)}:{event_snake(event)}:{group}:{handler}"


def _timeout(raw: object, event: str) -> int:
    value = raw if isinstance(raw, (int, float)) and not isinstance(raw, bool) else DEFAULT_TIMEOUT
    seconds = max(1, int(value))
    return min(seconds, _SHORT_TIMEOUT) if event in _SHORT_TIMEOUT_EVENTS else seconds


def hook_hash(event: str, matcher: object, handler: dict[str, Any]) -> str:
    """Codex's ``currentHash`` of one command handler in its group."""
    snake = event_snake(event)
    item: dict[str, Any] = {
        "type": "command",
        "command": handler.get("command"),
        "timeout": _timeout(handler.get("timeout"), snake),
        "async": bool(handler.get("async", False)),
    }
    if handler.get("statusMessage") is not None:
        item["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": snake, "hooks": [item]}
    if matcher is not None and snake not in _NO_MATCHER_EVENTS:
        identity["matcher"] = matcher
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class HookTrust:
    """donebell's Stop handler as Codex sees it: where it is, its hash, and the verdict."""

    key: str
    source: Path
    command: str
    current_hash: str
    trusted_hash: str | None
    status: str  # "trusted" | "untrusted" | "modified" | "disabled"


def trust_entries(config_text: str | None) -> dict[str, dict[str, Any]]:
    """``[hooks.state]`` of a config.toml text (empty if absent or unparsable)."""
    if not config_text:
        return {}
    try:
        data = tomllib.loads(config_text)
    except tomllib.TOMLDecodeError:
        return {}
    state = data.get("hooks", {}).get("state", {}) if isinstance(data.get("hooks"), dict) else {}
    return {k: v for k, v in state.items() if isinstance(v, dict)} if isinstance(state, dict) else {}


def verdict(current: str, entry: dict[str, Any] | None) -> str:
    if entry is not None and entry.get("enabled") is False:
        return "disabled"
    trusted = entry.get("trusted_hash") if entry else None
    if trusted is None:
        return "untrusted"
    return "trusted" if trusted == current else "modified"


def _stop_groups(
    source: Path, hooks_table: object, event: str = "Stop", args: tuple[str, ...] = CODEX_STOP_ARGS
) -> list[tuple[Path, int, int, dict[str, Any], object]]:
    groups = hooks_table.get(event) if isinstance(hooks_table, dict) else None
    found = []
    for g, group in enumerate(groups if isinstance(groups, list) else []):
        handlers = group.get("hooks") if isinstance(group, dict) else None
        for h, handler in enumerate(handlers if isinstance(handlers, list) else []):
            if is_managed_handler(handler, args):
                found.append((source, g, h, handler, group.get("matcher")))
    return found


def donebell_stop_hooks(
    codex_home: Path, event: str = "Stop", args: tuple[str, ...] = CODEX_STOP_ARGS
) -> list[HookTrust]:
    """Every donebell Stop handler (or ``event``'s, running ``donebell <args>``) in ``hooks.json``
    and ``config.toml`` with its trust verdict."""
    hooks_json = codex_home / "hooks.json"
    config_toml = codex_home / "config.toml"
    try:
        config_text: str | None = config_toml.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        config_text = None
    candidates = []
    try:
        hooks_table = json.loads(hooks_json.read_text(encoding="utf-8-sig")).get("hooks")
        candidates += _stop_groups(hooks_json, hooks_table, event, args)
    except (OSError, ValueError, AttributeError):
        pass
    if config_text:
        try:
            candidates += _stop_groups(config_toml, tomllib.loads(config_text).get("hooks"), event, args)
        except tomllib.TOMLDecodeError:
            pass
    entries = trust_entries(config_text)
    result = []
    for source, g, h, handler, matcher in candidates:
        key = state_key(source, event, g, h)
        current = hook_hash(event, matcher, handler)
        entry = entries.get(key)
        trusted = entry.get("trusted_hash") if entry else None
        result.append(HookTrust(key, source, str(handler.get("command")), current, trusted, verdict(current, entry)))
    return result
