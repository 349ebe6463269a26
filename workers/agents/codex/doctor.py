"""doctor's Codex checks: the wiring (``codex_hooks``), Codex's trust of donebell's hooks
(``codex_trust``, ``codex_needs_trust``) and whether the user's previous ``notify`` can still start
(``chain_notify``: the reason is install's knowledge, ``chain_check.py``; this module only turns it
into a doctor line, so install never imports doctor).
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from donebell.workers.agents.codex import codex_home
from donebell.workers.agents.codex.chain_check import chain_program_problem
from donebell.workers.agents.codex.install import REVIEW_STEP, codex_hooks_problem
from donebell.workers.agents.codex.managed import CODEX_NOTIFY_ARGS, CODEX_PERMISSION_ARGS, CODEX_STOP_ARGS
from donebell.workers.agents.codex.trust_hash import donebell_stop_hooks
from donebell.workers.kit.install.checks import (
    FAIL,
    OK,
    SKIP,
    WARN,
    Check,
    managed_handlers,
    program_missing,
    read_json,
)
from donebell.workers.kit.install.managed import handler_argv, is_managed_argv


def check_chain_notify(chain: list[str] | None) -> Check:
    """The doctor line for ``chain_notify`` (the user's previous notify, run before donebell's)."""
    if not chain:
        return Check("chain_notify", SKIP, "no previous Codex notify to run first")
    problem = chain_program_problem(chain)
    if problem:
        return Check(
            "chain_notify",
            WARN,
            f"your previous Codex notify cannot start: {problem}",
            "install that program again, or drop it: `donebell config unset chain_notify`",
            {"chain_notify": chain},
        )
    return Check(
        "chain_notify", OK, f"your previous Codex notify {chain[0]} runs first", details={"chain_notify": chain}
    )


def check_codex() -> list[Check]:
    home = codex_home()
    if not home.is_dir():
        return [Check("codex_hooks", SKIP, f"Codex not found ({home})")]
    hooks_doc, error = read_json(home / "hooks.json")
    if error:
        return [Check("codex_hooks", FAIL, error + ": Codex loads none of its hooks", "fix hooks.json")]
    try:
        toml = tomllib.loads((home / "config.toml").read_text(encoding="utf-8"))
    except FileNotFoundError:
        toml = {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return [Check("codex_hooks", FAIL, f"{home / 'config.toml'}: invalid ({exc})", "fix config.toml")]
    stops = managed_handlers(hooks_doc, "Stop", CODEX_STOP_ARGS)
    notify = toml.get("notify")
    has_notify = is_managed_argv(notify, CODEX_NOTIFY_ARGS)
    broken = [
        p
        for p in (*(program_missing(handler_argv(h)) for h in stops), program_missing(notify if has_notify else None))
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
