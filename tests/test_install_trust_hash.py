"""The Codex hook trust hash and state key, against vectors measured on the real Codex 0.171.0
(`codex app-server` hooks/list currentHash) and, when the pinned CLI is available, against Codex
itself on a hooks.json written by `donebell install`."""

from __future__ import annotations

import io
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from donebell.supervisor.install.command import main_install
from donebell.workers.agents.codex.trust_hash import donebell_stop_hooks, hook_hash, state_key
from support import npm_clis
from support.install_env import RecordingRunner, copy_fixture, isolate

# (event, matcher, handler, currentHash reported by Codex 0.171.0)
MEASURED = [
    (
        "Stop",
        None,
        {"command": "/usr/bin/donebell hook codex-stop", "timeout": 30},
        "246db200e3e104b60eaa4fe0d5a44f6d8e16ebc757d84f50cacd846d65671121",
    ),
    (
        "Stop",
        "x",
        {"command": 'echo ü "q"', "statusMessage": "hi é"},
        "2c8341cd319ef370d0f2618812a1d8a4f7a4e88f9e5094eecbaad901220e0d70",
    ),
    (
        "Stop",
        "x",
        {"command": "b", "timeout": 5, "async": True},
        "db6c25f8f67291f68d459f17f34d02379fe6a2b3226011f08bbdf473d84fd37d",
    ),
    ("Stop", "", {"command": "z", "timeout": 0}, "c3887dc8fabdff43abfea94628583eff0d38cd0aa159ae0c2aaf1c49099422f9"),
    ("UserPromptSubmit", None, {"command": "c"}, "7c96ebb87f4cd36cfa0db19f643ad93eb7ff4590794065279d55a6f60e1bb43c"),
    ("UserPromptSubmit", "u", {"command": "u"}, "428174c11a917f82217b7d1d27622db1935db5b47c2f7c04bd1090beb7f8a251"),
    ("PreToolUse", "Bash", {"command": "p"}, "f9cdca97d6f686447ee4092dbd007683d6ae614c017b62830e9fa3a78d197d3b"),
    ("SessionStart", "startup", {"command": "s"}, "b4f53e8e2169352a7e8ebb890660f5d7c55e8f53e26f66a987f78a19c4701f64"),
    ("SubagentStop", "m", {"command": "m"}, "ce515babba4b6b84e223483b5d49e41028031cc7dddee227b2be4a06c8592f73"),
    (
        "SessionEnd",
        "mm",
        {"command": "SessionEnd", "timeout": 30},
        "93b870e7183d87336214837708ef348889b3cf3b6b9b44a2a91824a1ca644a74",
    ),
    (
        "Interrupt",
        "mm",
        {"command": "Interrupt", "timeout": 30},
        "bc204269b9fe49199b425d379b2bcefc0877f308028ee028f238a4f33ba3569f",
    ),
    (
        "PostToolUse",
        "mm",
        {"command": "PostToolUse", "timeout": 30},
        "025680687f91ab8d6a811b24e5f51d23bbc1a8680a3ba57dcc9f1bf3d5723aaf",
    ),
]


@pytest.mark.parametrize(("event", "matcher", "handler", "expected"), MEASURED)
def test_hash_matches_what_codex_computed(event: str, matcher: Any, handler: dict[str, Any], expected: str) -> None:
    """Each handler hashes to the currentHash the real Codex reported (matchers, clamps, UTF-8)."""
    assert hook_hash(event, matcher, {"type": "command", **handler}) == "sha256:" + expected


def test_a_changed_command_changes_the_hash() -> None:
    """The hash covers the command, so a moved donebell is no longer trusted."""
    a = hook_hash("Stop", None, {"type": "command", "command": "/a/donebell hook codex-stop", "timeout": 30})
    b = hook_hash("Stop", None, {"type": "command", "command": "/b/donebell hook codex-stop", "timeout": 30})
    assert a != b


def test_state_key_uses_the_canonical_source_path(tmp_path: Path) -> None:
    """Codex keys trust by the resolved path, so a symlinked CODEX_HOME gives the real folder."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert state_key(tmp_path / "link" / "hooks.json", "Stop", 1, 0) == f"{real}/hooks.json:stop:1:0"


def _hooks_list(codex: Path, home: Path, cwd: Path) -> dict[str, Any]:
    """hooks/list from a real `codex app-server` over stdio (offline: no model request is made)."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home.parent), "CODEX_HOME": str(home)}
    proc = subprocess.Popen(
        [str(codex), "app-server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:

        def call(msg_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}) + "\n")
            proc.stdin.flush()
            while True:
                line = proc.stdout.readline()
                assert line, "codex app-server closed its output"
                message = json.loads(line)
                if message.get("id") == msg_id:
                    return message  # type: ignore[no-any-return]

        call(1, "initialize", {"clientInfo": {"name": "donebell-tests", "version": "1"}})
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "initialized"}) + "\n")
        proc.stdin.flush()
        result = call(2, "hooks/list", {"cwds": [str(cwd)]})["result"]["data"][0]
        return result  # type: ignore[no-any-return]
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.timeout(600)
def test_real_codex_loads_the_installed_hook_and_agrees_on_hash_and_trust(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex 0.171 parses the hooks.json install wrote, reports our key and hash, and trusts it
    exactly when config.toml carries that hash (and so does doctor's trust check)."""
    reason = npm_clis.skip_reason()
    if reason is not None:
        pytest.skip(reason)
    codex = npm_clis.codex_binary()
    paths = isolate(tmp_path, monkeypatch)
    monkeypatch.setenv("DONEBELL_CONFIG", str(paths["config"]))
    copy_fixture("codex-hooks.json", paths["codex"] / "hooks.json")
    copy_fixture("codex-config.toml", paths["codex"] / "config.toml")
    assert main_install(["--codex", "--service", "none"], runner=RecordingRunner(), out=io.StringIO()) == 0
    cwd = tmp_path / "work"
    cwd.mkdir()

    listed = _hooks_list(codex, paths["codex"], cwd)
    assert listed["warnings"] == [] and listed["errors"] == []
    ours = donebell_stop_hooks(paths["codex"])
    assert len(ours) == 1 and ours[0].status == "untrusted"
    by_key = {h["key"]: h for h in listed["hooks"]}
    assert by_key[ours[0].key]["currentHash"] == ours[0].current_hash
    assert by_key[ours[0].key]["trustStatus"] == "untrusted"
    # Codex's /hooks list names a handler by its statusMessage ("Unnamed hook" without one).
    assert by_key[ours[0].key]["statusMessage"] == "donebell: notify when the task is done"
    for hook in listed["hooks"]:  # the user's hooks too: our hash function is Codex's
        handler = {
            "command": hook["command"],
            "timeout": hook["timeoutSec"],
            "async": hook["async"],
            "statusMessage": hook["statusMessage"],
        }
        assert (
            hook_hash(hook["eventName"][0].upper() + hook["eventName"][1:], hook["matcher"], handler)
            == hook["currentHash"]
        ), hook["key"]

    with open(paths["codex"] / "config.toml", "a", encoding="utf-8") as f:
        f.write(f'\n[hooks.state."{ours[0].key}"]\ntrusted_hash = "{ours[0].current_hash}"\n')
    listed = _hooks_list(codex, paths["codex"], cwd)
    assert {h["key"]: h["trustStatus"] for h in listed["hooks"]}[ours[0].key] == "trusted"
    assert donebell_stop_hooks(paths["codex"])[0].status == "trusted"
