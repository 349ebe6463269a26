"""A new agent is one folder plus one registration line (issue 25): the test-only "toy" agent.

The package the roles run from is a copy of this one (links to its files) with exactly two
differences, which the test checks before anything runs: the folder ``tests/support/agent_toy/``
placed at ``donebell/workers/agents/toy/``, and one added line in ``workers/agents/registry.py``.
Then the real command line and the real roles, as separate processes on a real state directory,
carry one toy turn: ``donebell hook toy-done`` -> the gate (through the registry) waits while the
toy's own log says the turn is still running -> promotes once it says done -> the delivery role
posts one notification to the ntfy stand-in, titled by the toy's ``Titles``. And the real
``install --toy``, ``doctor`` and ``uninstall --toy`` wire, check and unwire the toy from its
folder's ``setup.py`` (issue 35): the CLI names no agent.
"""

from __future__ import annotations

import difflib
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import donebell.workers
from donebell.shared.statedir import StateDir
from donebell.workers.agents.protocols import Agent
from donebell.workers.agents.protocols import Install as InstallCapability
from support import agent_toy
from support.agent_toy import setup as toy_setup
from support.ntfy_standin import NtfyStandin
from support.rig import FAST_CONFIG

WORKERS = Path(list(donebell.workers.__path__)[0])
PACKAGE = WORKERS.parent
TOY = Path(list(agent_toy.__path__)[0])
#: The one registration line, added to ``AGENTS`` after the last built-in agent.
REGISTRATION = '    "toy": "donebell.workers.agents.toy",\n'
AFTER = '    "claude": "donebell.workers.agents.claude",\n'

#: mypy proves the toy implements every capability the roles call (tests/test_static_checks.py).
_TOY_IS_AN_AGENT: Agent = agent_toy.AGENT
#: ... and that its setup.py is what install, uninstall and doctor call.
_TOY_IS_INSTALLABLE: InstallCapability = toy_setup


def _link_children(source: Path, target: Path, skip: tuple[str, ...] = ()) -> None:
    target.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name not in (*skip, "__pycache__"):
            (target / entry.name).symlink_to(entry)


def package_with_toy(root: Path) -> Path:
    """``root/donebell``: this package through links, plus the toy folder and its registration."""
    package = root / "donebell"
    _link_children(PACKAGE / "ops", package)  # ops/ is the package itself (setup.py)
    for folder in ("shared", "supervisor"):
        (package / folder).symlink_to(PACKAGE / folder)
    _link_children(WORKERS, package / "workers", skip=("agents",))
    agents = package / "workers" / "agents"
    _link_children(WORKERS / "agents", agents, skip=("registry.py",))
    (agents / "toy").symlink_to(TOY)
    registry = (WORKERS / "agents" / "registry.py").read_text(encoding="utf-8")
    assert registry.count(AFTER) == 1
    (agents / "registry.py").write_text(registry.replace(AFTER, AFTER + REGISTRATION), encoding="utf-8")
    return root


def differences(root: Path) -> tuple[set[str], list[str]]:
    """(files of the copy that are not this package's own, registry lines added or removed)."""
    own = tuple(PACKAGE / folder for folder in ("ops", "shared", "workers", "supervisor"))
    foreign = set()
    for folder, _dirs, files in os.walk(root / "donebell", followlinks=True):
        for path in (Path(folder) / name for name in files if name.endswith(".py")):
            if not any(path.resolve().is_relative_to(o) for o in own):
                foreign.add(str(path.relative_to(root / "donebell")))
    old = (WORKERS / "agents" / "registry.py").read_text(encoding="utf-8").splitlines(keepends=True)
    new = (root / "donebell" / "workers" / "agents" / "registry.py").read_text(encoding="utf-8")
    changed = [line for line in difflib.ndiff(old, new.splitlines(keepends=True)) if line[:2] in ("+ ", "- ")]
    return foreign, changed


class Install:
    """A state directory and config for the toy, and the donebell command run from ``site``."""

    def __init__(self, tmp: Path, server: str, site: Path | None) -> None:
        self.tmp, self.site, self.topic = tmp, site, f"toy-{secrets.token_hex(6)}"
        self.state_dir, config = tmp / "state", tmp / "config.json"
        config.write_text(
            json.dumps(
                {
                    "server": server,
                    "topic": self.topic,
                    **FAST_CONFIG,
                    "include_thread_title": True,
                    "include_message": True,
                }
            ),
            encoding="utf-8",
        )
        config.chmod(0o600)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DONEBELL_", "CODEX_", "CLAUDE_", "PYTHON"))}
        self.env = {
            **env,
            "DONEBELL_STATE_DIR": str(self.state_dir),
            "DONEBELL_CONFIG": str(config),
            "DONEBELL_KICK_COMMAND": "off",
            "CODEX_HOME": str(tmp / "codex"),
            "CLAUDE_CONFIG_DIR": str(tmp / "claude"),
            "TOY_HOME": str(tmp / "toy"),
            **({"PYTHONPATH": str(site)} if site else {}),
        }

    def run(self, *argv: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "donebell.supervisor.cli", *argv],
            input=stdin,
            env=self.env,
            capture_output=True,
            timeout=60,
            check=False,
            cwd=self.tmp,
        )

    @property
    def state(self) -> StateDir:
        return StateDir(self.state_dir)

    def records(self, folder: str) -> list[dict[str, object]]:
        path = self.state_dir / folder
        return [json.loads(p.read_bytes()) for p in sorted(path.glob("*.json"))] if path.is_dir() else []


def turn_payload(log: Path) -> bytes:
    return json.dumps(
        {
            "session": "toy-session-1",
            "turn": "turn-7",
            "cwd": "/home/me/toyproject",
            "log": str(log),
            "title": "Sort the toy box",
            "message": "All toys sorted by colour.",
        }
    ).encode()


def test_the_copy_differs_by_the_toy_folder_and_one_line(tmp_path: Path) -> None:
    """What the round trip below runs is this package plus the folder and the one line, nothing else."""
    site = package_with_toy(tmp_path / "site")
    foreign, changed = differences(site)
    assert foreign == {"workers/agents/registry.py"} | {f"workers/agents/toy/{p.name}" for p in TOY.glob("*.py")}
    assert changed == ["+ " + REGISTRATION]


def test_a_toy_turn_goes_hook_gate_delivery_through_the_real_roles(tmp_path: Path, srv: NtfyStandin) -> None:
    install = Install(tmp_path, srv.url, package_with_toy(tmp_path / "site"))
    log = tmp_path / "toy-session-1.jsonl"
    log.write_text(json.dumps({"turn": "turn-7", "status": "working"}) + "\n", encoding="utf-8")

    hooked = install.run("hook", "toy-done", stdin=turn_payload(log))
    assert (hooked.returncode, hooked.stdout) == (0, b""), hooked.stderr
    (pending,) = install.records("pending")
    assert (pending["provider"], pending["source"], pending["toy_title"]) == ("toy", "toy-hook", "Sort the toy box")

    # The toy's log says the turn still runs: its gate keeps the candidate waiting, nothing is sent.
    assert install.run("worker", "delivery", "--once").returncode == 0
    assert [r["key"] for r in install.records("pending")] == [pending["key"]]
    reasons = [entry.get("reason") for entry in install.records("pending")[0]["probe"]["history"]]  # type: ignore[index]
    assert "toy-busy" in reasons
    assert srv.messages(install.topic) == []

    with log.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"turn": "turn-7", "status": "done"}) + "\n")
    deadline = time.monotonic() + 30
    while not srv.messages(install.topic) and time.monotonic() < deadline:
        assert install.run("worker", "delivery", "--once").returncode == 0
        time.sleep(0.2)
    (message,) = srv.messages(install.topic)
    assert message["title"] == "Sort the toy box"
    assert "All toys sorted by colour." in message["message"]
    (sent,) = install.records("sent")
    assert (sent["key"], sent["provider"]) == (pending["key"], "toy")
    assert install.records("pending") == [] and install.records("outbox") == []


def test_without_its_line_the_toy_is_unknown(tmp_path: Path, srv: NtfyStandin) -> None:
    """The registration line is what makes the folder an agent: the package as it is refuses the hook."""
    install = Install(tmp_path, srv.url, None)
    log = tmp_path / "toy-session-1.jsonl"
    result = install.run("hook", "toy-done", stdin=turn_payload(log))
    assert result.returncode == 0 and b"unknown hook 'toy-done'" in result.stderr
    assert install.records("pending") == []


def _check(install: Install, name: str) -> dict[str, object]:
    result = install.run("doctor", "--json")
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    found: dict[str, object] = checks[name]
    return found


def test_the_toy_is_installed_doctored_and_uninstalled_from_its_folder(tmp_path: Path, srv: NtfyStandin) -> None:
    """``install --toy`` writes the toy's hook, ``doctor`` sees it, ``uninstall --toy`` takes it out:
    the toy's setup.py does it all, reached through the registry's one line."""
    install = Install(tmp_path, srv.url, package_with_toy(tmp_path / "site"))
    (tmp_path / "toy").mkdir()
    hooks = tmp_path / "toy" / "hooks.json"
    assert b"--toy" in install.run("install", "--help").stdout
    assert _check(install, "toy_hooks")["status"] == "warn"  # here, not wired yet

    installed = install.run("install", "--toy", "--service", "none")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert b"Toy Agent:" in installed.stdout and not (tmp_path / "codex").exists()
    (handler,) = json.loads(hooks.read_text(encoding="utf-8"))["hooks"]["Done"][0]["hooks"]
    assert str(handler["command"]).endswith("hook toy-done")
    assert _check(install, "toy_hooks")["status"] == "ok"
    assert "agents" not in {c["name"] for c in json.loads(install.run("doctor", "--json").stdout)["checks"]}

    removed = install.run("uninstall", "--toy")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert not hooks.exists()  # install created it: uninstall deletes it
    assert _check(install, "toy_hooks")["status"] == "warn"
