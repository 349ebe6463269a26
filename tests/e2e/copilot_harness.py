"""Run the real GitHub Copilot CLI offline against the scripted Messages server (`FakeCopilot`).

Each run gets its own temp tree (HOME, COPILOT_HOME = HOME/.copilot, work dir, TMPDIR) and a clean
environment: ``COPILOT_OFFLINE`` with a BYOK provider of type ``anthropic`` pointing at the fake,
auto-update off, and ``COPILOT_PKG_CACHE_HOME`` at the package the install unpacked once (a private
HOME would unpack ~150 MB again on every run).

    with FakeCopilot({"main": [Text("hi")]}) as server:
        home = make_copilot_home(tmp_path, server, hooks=recorder.hooks("agentStop"))
        run = run_copilot(home, "say hi")
        [session] = home.session_ids()

Hooks are Copilot's user-level hook files (``$COPILOT_HOME/hooks/*.json``, camelCase events);
the recorder's go into ``e2e-recorder.json`` beside whatever ``donebell install`` writes there.
The work folder is listed in ``trustedFolders`` so the TUI asks no folder-trust question.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from support import npm_clis
from support.fake_copilot import FakeCopilot

from e2e.agent_proc import AgentRun, RunningAgent, base_env, start_agent
from e2e.harness import interrupt_when_stalled, read_jsonl

JSON = dict[str, Any]
FAKE_COPILOT_KEY = "sk-ant-fake-copilot-e2e-0123456789"
FAKE_MODEL = "claude-sonnet-4-5"
RECORDER_HOOKS_FILE = "e2e-recorder.json"


@dataclass(frozen=True)
class CopilotHome:
    """A throwaway COPILOT_HOME wired to a fake Messages server."""

    root: Path
    home: Path
    copilot_home: Path
    workdir: Path
    env: dict[str, str]

    @property
    def hooks_dir(self) -> Path:
        return self.copilot_home / "hooks"

    def installed_hook_files(self) -> list[Path]:
        """The hook files in COPILOT_HOME/hooks other than the recorder's (what install wrote)."""
        return sorted(p for p in self.hooks_dir.glob("*.json") if p.name != RECORDER_HOOKS_FILE)

    def session_dirs(self) -> list[Path]:
        """``session-state/<id>`` folders, oldest first."""
        found = [p for p in (self.copilot_home / "session-state").glob("[!.]*") if p.is_dir()]
        return sorted(found, key=lambda p: p.stat().st_mtime)

    def session_ids(self) -> list[str]:
        return [p.name for p in self.session_dirs()]

    def events(self, session: str) -> list[JSON]:
        """The session's ``events.jsonl`` records (written in batches: read it after the run)."""
        path = self.copilot_home / "session-state" / session / "events.jsonl"
        return read_jsonl(path) if path.exists() else []

    def event_types(self, session: str) -> list[str]:
        return [str(e.get("type")) for e in self.events(session)]


def copilot_hook_file(hooks: Mapping[str, Sequence[str]], timeout: int = 30) -> JSON:
    """``{"version": 1, "hooks": {event: [{"type": "command", "bash": ..., "timeoutSec": ...}]}}``."""
    return {
        "version": 1,
        "hooks": {
            event: [{"type": "command", "bash": c, "timeoutSec": timeout} for c in commands]
            for event, commands in hooks.items()
        },
    }


def make_copilot_home(
    tmp: Path,
    server: FakeCopilot | str,
    *,
    hooks: Mapping[str, Sequence[str]] | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> CopilotHome:
    """Create HOME, COPILOT_HOME (trusted work dir, no banner, optional recorder hooks) and a work dir."""
    home, work, tmpdir = (tmp / "home", tmp / "work", tmp / "tmp")
    for folder in (home, work, tmpdir):
        folder.mkdir(parents=True, exist_ok=True)
    copilot_home = home / ".copilot"
    (copilot_home / "hooks").mkdir(parents=True, exist_ok=True)
    # Folder trust is read from config.json (the same key in settings.json is ignored).
    (copilot_home / "config.json").write_text(json.dumps({"trustedFolders": [str(work)], "banner": "never"}))
    (copilot_home / "settings.json").write_text(json.dumps({"banner": "never"}))
    if hooks:
        (copilot_home / "hooks" / RECORDER_HOOKS_FILE).write_text(json.dumps(copilot_hook_file(hooks), indent=1))
    url = server.url if isinstance(server, FakeCopilot) else server
    env = base_env(home, tmpdir) | {
        "COPILOT_HOME": str(copilot_home),
        "COPILOT_OFFLINE": "true",
        "COPILOT_AUTO_UPDATE": "false",
        "COPILOT_PROVIDER_BASE_URL": url,
        "COPILOT_PROVIDER_TYPE": "anthropic",
        "COPILOT_PROVIDER_API_KEY": FAKE_COPILOT_KEY,
        "COPILOT_MODEL": FAKE_MODEL,
        "COPILOT_PKG_CACHE_HOME": str(npm_clis.copilot_pkg_cache()),
    }
    env |= dict(extra_env or {})
    return CopilotHome(tmp, home, copilot_home, work, env)


def copilot_argv(prompt: str, *, allow_all_tools: bool = True, extra_args: Sequence[str] = ()) -> list[str]:
    argv = [str(npm_clis.copilot_binary()), "-p", prompt]
    if allow_all_tools:
        argv.append("--allow-all-tools")
    return [*argv, *extra_args]


def start_copilot(home: CopilotHome, prompt: str, **kw: Any) -> RunningAgent:
    """Start ``copilot -p`` (stdin /dev/null) in the background; see ``copilot_argv`` for options."""
    return start_agent(copilot_argv(prompt, **kw), cwd=home.workdir, env=home.env)


def run_copilot(home: CopilotHome, prompt: str, *, timeout: float = 90, **kw: Any) -> AgentRun:
    """Run ``copilot -p`` to completion (it waits for its background shells and agents)."""
    run = start_copilot(home, prompt, **kw).wait(timeout)
    return replace(run, session_files=tuple(home.session_dirs()))


def run_copilot_interrupted(
    home: CopilotHome, server: FakeCopilot, prompt: str, *, stall: int = 1, timeout: float = 60, **kw: Any
) -> AgentRun:
    """Run ``copilot -p`` and SIGINT it while the fake holds a ``Stall()`` request."""
    run = interrupt_when_stalled(start_copilot(home, prompt, **kw), server, stall=stall, timeout=timeout)
    return replace(run, session_files=tuple(home.session_dirs()))
