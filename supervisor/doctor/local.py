"""Doctor checks that read local files only: config, state directory, the agents' wiring and trust."""

from __future__ import annotations

import json
import os
import stat
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from donebell.shared import paths, state_dir_check
from donebell.workers.agents import claude as claude_folder
from donebell.workers.agents import codex as codex_folder
from donebell.shared.config import model
from donebell.shared.statedir import FOLDERS
from donebell.shared.config.secret_text import public_url as _public_url
from donebell.workers.agents.codex.install import REVIEW_STEP, codex_hooks_problem
from donebell.workers.agents.claude.install import CLAUDE_ARGS, CLAUDE_EVENTS
from donebell.workers.agents.codex.managed import CODEX_NOTIFY_ARGS, CODEX_PERMISSION_ARGS, CODEX_STOP_ARGS
from donebell.workers.kit.install.managed import handler_argv, is_managed_argv, is_managed_handler
from donebell.workers.agents.codex.trust_hash import donebell_stop_hooks

OK, WARN, FAIL, UNKNOWN, SKIP = "ok", "warn", "fail", "unknown", "skip"


@dataclass
class Check:
    """One doctor finding; ``fail`` means notifications are blocked until ``next_step`` is done."""

    name: str
    status: str
    summary: str
    next_step: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def _owner_only(path: Path) -> str | None:
    """A problem with the file's owner or mode, or None (always None on Windows)."""
    if sys.platform == "win32":
        return None
    st = path.stat()
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return f"owned by uid {st.st_uid}, not you"
    mode = stat.S_IMODE(st.st_mode)
    return f"mode {mode:04o} lets others read it" if mode & 0o077 else None


def check_config() -> tuple[Check, model.Settings | None]:
    path = paths.config_path()
    try:
        loaded = model.load()
    except model.ConfigError as exc:
        return Check("config", FAIL, str(exc), "fix the file, then run `donebell config check`"), None
    settings = loaded.settings
    if not loaded.exists:
        return Check(
            "config", FAIL, f"no config file at {path}", "run `donebell install` (or `donebell config init`)"
        ), None
    if not settings.topic:
        return Check("config", FAIL, f"{path}: no topic set", f'set "topic" in {path}'), settings
    problem = _owner_only(path) if path.exists() else None
    details = {"path": str(path), "server": _public_url(settings.server), "warnings": loaded.warnings}
    if problem:
        return Check("config", WARN, f"{path}: {problem}", f"chmod 600 {path}", details), settings
    if loaded.warnings:
        return Check("config", WARN, "; ".join(loaded.warnings), "run `donebell config check`", details), settings
    return Check("config", OK, f"{path}: valid, owner-only", details=details), settings


def check_state_dir() -> Check:
    root = paths.state_dir_path()
    unusable = state_dir_check.problem(str(root))  # the line every other command prints
    if unusable:
        fix = f"remove {root}, or " if os.path.lexists(root) else ""
        return Check("state_dir", FAIL, unusable, f"{fix}point DONEBELL_STATE_DIR at a folder donebell can create")
    if not root.exists():
        return Check("state_dir", OK, f"{root}: not created yet (the first hook or `donebell run` creates it)")
    unwritable = [
        str(p) for p in (root, *(root / f for f in FOLDERS)) if p.exists() and not os.access(p, os.W_OK | os.X_OK)
    ]
    if unwritable:
        return Check("state_dir", FAIL, f"not writable: {', '.join(unwritable[:3])}", "fix the owner/permissions")
    problem = _owner_only(root)
    if problem:
        return Check("state_dir", WARN, f"{root}: {problem}", f"chmod 700 {root}")
    return Check("state_dir", OK, f"{root}: writable, owner-only")


def _program_missing(argv: list[Any] | None) -> str | None:
    if not argv:
        return None
    program = argv[0]
    if (
        isinstance(program, str)
        and os.path.isabs(program)
        and not (os.path.isfile(program) and os.access(program, os.X_OK))
    ):
        return program
    return None


def _read_json(path: Path) -> tuple[Any, str | None]:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig")), None
    except FileNotFoundError:
        return None, None
    except (OSError, ValueError) as exc:
        return None, f"{path}: unreadable or invalid JSON ({exc})"


def _handlers(doc: Any, event: str, args: tuple[str, ...]) -> list[dict[str, Any]]:
    groups = doc.get("hooks", {}).get(event) if isinstance(doc, dict) and isinstance(doc.get("hooks"), dict) else None
    found = []
    for group in groups if isinstance(groups, list) else []:
        for handler in group.get("hooks", []) if isinstance(group, dict) else []:
            if is_managed_handler(handler, args):
                found.append(handler)
    return found


def check_codex() -> list[Check]:
    home = codex_folder.codex_home()
    if not home.is_dir():
        return [Check("codex_hooks", SKIP, f"Codex not found ({home})")]
    hooks_doc, error = _read_json(home / "hooks.json")
    if error:
        return [Check("codex_hooks", FAIL, error + ": Codex loads none of its hooks", "fix hooks.json")]
    try:
        toml = tomllib.loads((home / "config.toml").read_text(encoding="utf-8"))
    except FileNotFoundError:
        toml = {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return [Check("codex_hooks", FAIL, f"{home / 'config.toml'}: invalid ({exc})", "fix config.toml")]
    stops = _handlers(hooks_doc, "Stop", CODEX_STOP_ARGS)
    notify = toml.get("notify")
    has_notify = is_managed_argv(notify, CODEX_NOTIFY_ARGS)
    broken = [
        p
        for p in (*(_program_missing(handler_argv(h)) for h in stops), _program_missing(notify if has_notify else None))
        if p
    ]
    details = {"home": str(home), "stop_hooks": len(stops), "notify": has_notify, "wired": bool(stops or has_notify)}
    checks = [_codex_wiring(stops, has_notify, broken, details), *_codex_loading(home, hooks_doc, stops, toml)]
    checks.extend(check_codex_trust(home))
    return checks


def _codex_wiring(stops: list[Any], has_notify: bool, broken: list[str], details: dict[str, Any]) -> Check:
    """Are Codex's Stop hook and notify both pointed at a donebell that exists?"""
    if broken:
        return Check(
            "codex_hooks",
            FAIL,
            f"Codex runs a donebell that does not exist: {broken[0]}",
            "run `donebell install --codex` again from the current installation",
            details,
        )
    if stops and has_notify:
        return Check("codex_hooks", OK, "Stop hook and notify registered", details=details)
    if stops or has_notify:
        missing = "notify" if stops else "the Stop hook"
        return Check("codex_hooks", WARN, f"{missing} is not registered", "run `donebell install --codex`", details)
    return Check("codex_hooks", WARN, "Codex is not wired to donebell", "run `donebell install --codex`", details)


def _codex_loading(home: Path, hooks_doc: Any, stops: list[Any], toml: dict[str, Any]) -> list[Check]:
    """What would keep Codex from running the hooks it has: an unloadable file, duplicates, hooks off."""
    checks = []
    problem = codex_hooks_problem(hooks_doc) if hooks_doc is not None else None
    if problem:
        checks.append(
            Check(
                "codex_hooks",
                WARN,
                f"Codex cannot load hooks.json ({problem}): none of its hooks run",
                f"fix {home / 'hooks.json'}",
            )
        )
    if len(stops) > 1:
        checks.append(Check("codex_hooks", WARN, f"{len(stops)} donebell Stop hooks", "run `donebell install --codex`"))
    if isinstance(toml.get("features"), dict) and toml["features"].get("hooks") is False:
        checks.append(
            Check(
                "codex_hooks",
                WARN,
                "hooks are disabled ([features] hooks = false)",
                "remove that line to let Codex run hooks",
            )
        )
    return checks


def check_codex_trust(home: Path) -> list[Check]:
    hooks = donebell_stop_hooks(home)
    if not hooks:
        return [Check("codex_trust", SKIP, "no donebell Stop hook to trust")]
    checks = []
    for hook in hooks:
        details = {"key": hook.key, "current_hash": hook.current_hash, "trusted_hash": hook.trusted_hash}
        if hook.status == "trusted":
            checks.append(Check("codex_trust", OK, "the donebell Stop hook is trusted", details=details))
            continue
        summary = {
            "untrusted": "the donebell Stop hook is not trusted yet, so Codex skips it silently",
            "modified": "the donebell Stop hook changed since it was trusted, so Codex skips it silently",
            "disabled": "the donebell Stop hook is disabled in Codex",
        }[hook.status]
        checks.append(Check("codex_trust", WARN, summary, REVIEW_STEP, details))
    return checks + _codex_permission_trust(home)


def _codex_permission_trust(home: Path) -> list[Check]:
    """``codex_needs_trust``: the needs-you PermissionRequest hook (docs/approvals.md); an untrusted
    one is skipped by Codex silently, so Codex tasks never say they wait for you."""
    hooks = donebell_stop_hooks(home, "PermissionRequest", CODEX_PERMISSION_ARGS)
    if not hooks:
        return [Check("codex_needs_trust", SKIP, "no donebell PermissionRequest hook (install adds it)")]
    checks = []
    for hook in hooks:
        details = {"key": hook.key, "current_hash": hook.current_hash, "trusted_hash": hook.trusted_hash}
        if hook.status == "trusted":
            checks.append(
                Check("codex_needs_trust", OK, "the donebell PermissionRequest hook is trusted", details=details)
            )
            continue
        summary = f"the donebell PermissionRequest hook is {hook.status}: no needs-you notifications from Codex"
        checks.append(Check("codex_needs_trust", WARN, summary, REVIEW_STEP, details))
    return checks


def check_claude(enabled: bool) -> list[Check]:
    home = claude_folder.claude_config_dir()
    if not home.is_dir():
        return [Check("claude_hooks", SKIP, f"Claude Code not found ({home})")]
    doc, error = _read_json(home / "settings.json")
    if error:
        return [Check("claude_hooks", FAIL, error + ": Claude Code ignores these settings", "fix settings.json")]
    found = {event: _handlers(doc, event, CLAUDE_ARGS) for event in CLAUDE_EVENTS}
    wired = [event for event, handlers in found.items() if handlers]
    broken = [p for hs in found.values() for h in hs if (p := _program_missing(handler_argv(h)))]
    details = {"settings": str(home / "settings.json"), "events": wired, "wired": bool(wired)}
    if broken:
        return [
            Check(
                "claude_hooks",
                FAIL,
                f"Claude runs a donebell that does not exist: {broken[0]}",
                "run `donebell install --claude` again from the current installation",
                details,
            )
        ]
    if not wired:
        return [
            Check(
                "claude_hooks", WARN, "Claude Code is not wired to donebell", "run `donebell install --claude`", details
            )
        ]
    if not enabled:
        return [
            Check(
                "claude_hooks",
                WARN,
                "hooks registered but enable_claude_code is false: they do nothing",
                "set enable_claude_code to true",
                details,
            )
        ]
    missing = [event for event in CLAUDE_EVENTS if event not in wired]
    if missing:
        return [
            Check(
                "claude_hooks", WARN, f"missing hooks: {', '.join(missing)}", "run `donebell install --claude`", details
            )
        ]
    return [Check("claude_hooks", OK, f"{', '.join(wired)} registered", details=details)]
