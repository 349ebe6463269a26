"""`donebell install` wires the "needs you" hooks (docs/approvals.md) and uninstall takes them away.

Claude: a synchronous PermissionRequest group and the three needs types in the Notification
matcher; Codex: a PermissionRequest group in hooks.json under its own /hooks label. Uninstall gives
back the original bytes (tests/test_install.py covers that for every file) and drops the Codex
trust entry of the removed hook too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from donebell.workers.agents.codex.managed import CODEX_PERMISSION_ARGS, CODEX_PERMISSION_LABEL
from donebell.workers.agents.codex.trust_hash import donebell_stop_hooks
from donebell.workers.kit.install.managed import PERMISSION_HOOK_TIMEOUT, donebell_executable
from test_install import env, install, uninstall

EXE = donebell_executable()
__all__ = ["env"]  # the fixture, shared with test_install


def test_install_registers_the_needs_you_hooks(env: dict[str, Path]) -> None:
    code, out = install()
    assert code == 0, out
    settings = json.loads((env["claude"] / "settings.json").read_text())
    [group] = [g for g in settings["hooks"]["PermissionRequest"] if EXE in g["hooks"][0]["command"]]
    assert group["hooks"][0]["command"] == f"{EXE} hook claude" and "matcher" not in group
    assert "async" not in group["hooks"][0] and group["hooks"][0]["timeout"] == PERMISSION_HOOK_TIMEOUT
    matcher = settings["hooks"]["Notification"][-1]["matcher"].split("|")
    assert matcher == ["idle_prompt", "agent_completed", "permission_prompt", "elicitation_dialog", "agent_needs_input"]
    hooks = json.loads((env["codex"] / "hooks.json").read_text())
    assert hooks["hooks"]["PermissionRequest"] == [
        {
            "hooks": [
                {
                    "type": "command",
                    "command": f"{EXE} hook codex-permission",
                    "timeout": PERMISSION_HOOK_TIMEOUT,
                    "statusMessage": CODEX_PERMISSION_LABEL,
                }
            ]
        }
    ]
    assert "PermissionRequest hooks added" in out


def test_uninstall_removes_them_and_the_codex_trust_entry(env: dict[str, Path]) -> None:
    before = {p: p.read_bytes() for p in (env["codex"] / "hooks.json", env["claude"] / "settings.json")}
    install()
    [hook] = donebell_stop_hooks(env["codex"], "PermissionRequest", CODEX_PERMISSION_ARGS)
    config = env["codex"] / "config.toml"
    with config.open("a", encoding="utf-8") as f:  # the user trusted it with /hooks
        f.write(f'\n[hooks.state."{hook.key}"]\ntrusted_hash = "{hook.current_hash}"\n')
    code, out = uninstall()
    assert code == 0, out
    assert hook.key not in config.read_text()
    for path, data in before.items():
        assert path.read_bytes() == data, path


@pytest.mark.parametrize("first", [True, False])
def test_an_install_from_before_needs_you_is_upgraded_in_place(env: dict[str, Path], first: bool) -> None:
    """An older install (no PermissionRequest, the old Notification matcher) gains the hooks on the
    next install, once; a second install changes nothing."""
    install()
    path = env["claude"] / "settings.json"
    settings = json.loads(path.read_text())
    settings["hooks"]["Notification"][-1]["matcher"] = "idle_prompt|agent_completed"
    settings["hooks"]["PermissionRequest"] = [
        g for g in settings["hooks"]["PermissionRequest"] if EXE not in g["hooks"][0]["command"]
    ]
    path.write_text(json.dumps(settings, indent=2) + "\n")
    install()
    upgraded = path.read_text()
    if not first:
        install()
        assert path.read_text() == upgraded
    settings = json.loads(upgraded)
    assert settings["hooks"]["Notification"][-1]["matcher"].endswith("|agent_needs_input")
    assert sum(EXE in g["hooks"][0]["command"] for g in settings["hooks"]["PermissionRequest"]) == 1
