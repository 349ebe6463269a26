"""Run the real `codex` and `claude` CLIs offline against the scripted fake model servers.

Each run gets its own temp tree (HOME, agent home, work dir, TMPDIR) and a clean environment:
nothing from the developer's shell leaks in, so a real ~/.codex or API key is never touched.

    server = FakeResponses({"root": [Text("hi")]}).start()
    home = make_codex_home(tmp_path, server, hooks=recorder.hooks("Stop"))
    run = run_codex(home, "say hi")
    assert event_payloads(read_jsonl(home.root_rollout()), "task_complete")

The Claude side is the same with `make_claude_home` / `run_claude`. The process helpers are in
`agent_proc`, the hook recorder in `recorder`; this module re-exports them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from support import npm_clis
from support.fake_messages import FakeMessages
from support.fake_responses import FakeResponses
from support.scripted_server import ScriptedServer

from e2e.agent_proc import AgentRun, RunningAgent, base_env, start_agent
from e2e.recorder import Recorder, hook_config

__all__ = [
    "AgentRun",
    "ClaudeHome",
    "CodexHome",
    "Recorder",
    "RunningAgent",
    "claude_project_slug",
    "event_payloads",
    "interrupt_when_stalled",
    "make_claude_home",
    "make_codex_home",
    "read_jsonl",
    "run_claude",
    "run_claude_interrupted",
    "run_codex",
    "run_codex_interrupted",
    "start_claude",
    "start_codex",
]

JSON = dict[str, Any]
FAKE_OPENAI_KEY = "sk-fake-openai-key-for-e2e"
FAKE_ANTHROPIC_KEY = "sk-ant-fake-e2e-0123456789abcdefghij"


def read_jsonl(path: Path) -> list[JSON]:
    """Parse a JSONL file, skipping a torn last line (the agents append while we read)."""
    out: list[JSON] = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def event_payloads(records: Sequence[JSON], payload_type: str) -> list[JSON]:
    """Payloads of a rollout's `event_msg` records of one type (task_complete, turn_aborted...)."""
    return [r["payload"] for r in records if r.get("type") == "event_msg" and r["payload"].get("type") == payload_type]


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string literal is a valid TOML basic string


def _make_tree(tmp: Path) -> tuple[Path, Path, Path]:
    home, work, tmpdir = tmp / "home", tmp / "work", tmp / "tmp"
    for d in (home, work, tmpdir):
        d.mkdir(parents=True, exist_ok=True)
    return home, work, tmpdir


# ==== Codex ===================================================================================


@dataclass(frozen=True)
class CodexHome:
    """A throwaway CODEX_HOME wired to a fake Responses server."""

    root: Path
    home: Path
    codex_home: Path
    workdir: Path
    env: dict[str, str]

    @property
    def config_toml(self) -> Path:
        return self.codex_home / "config.toml"

    def rollouts(self) -> list[Path]:
        return sorted((self.codex_home / "sessions").glob("*/*/*/rollout-*.jsonl"))

    def session_meta(self, rollout: Path) -> JSON:
        first = read_jsonl(rollout)[:1]
        return first[0]["payload"] if first and first[0].get("type") == "session_meta" else {}

    def root_rollouts(self) -> list[Path]:
        return [p for p in self.rollouts() if self.session_meta(p).get("thread_source") != "subagent"]

    def child_rollouts(self) -> list[Path]:
        return [p for p in self.rollouts() if self.session_meta(p).get("thread_source") == "subagent"]

    def root_rollout(self) -> Path:
        roots = self.root_rollouts()
        assert len(roots) == 1, f"expected one root rollout, found {roots}"
        return roots[0]


def make_codex_home(
    tmp: Path,
    server: FakeResponses | str,
    *,
    notify: Sequence[str] | None = None,
    hooks: Mapping[str, Sequence[str]] | None = None,
    extra_toml: str = "",
    extra_env: Mapping[str, str] | None = None,
) -> CodexHome:
    """Create HOME, CODEX_HOME (offline config.toml, optional hooks.json) and a work dir.

    `server` is the fake or its `/v1` base URL. `notify` is the legacy notify argv (Codex appends
    one JSON argument); `hooks` maps an event (Stop, SubagentStop, ...) to shell commands.
    """
    home, work, tmpdir = _make_tree(tmp)
    codex_home = home / ".codex"
    codex_home.mkdir(exist_ok=True)
    base_url = server.base_url if isinstance(server, FakeResponses) else server
    lines = [
        'model = "gpt-fake"',
        'model_provider = "fake"',
        "check_for_update_on_startup = false",
    ]
    if notify:
        lines.append("notify = [" + ", ".join(_toml_str(a) for a in notify) + "]")
    # Retries off: an HTTP 500 must end the turn at once, not after backoff.
    lines += [
        "[model_providers.fake]",
        'name = "Fake local Responses server"',
        f"base_url = {_toml_str(base_url)}",
        'env_key = "FAKE_API_KEY"',
        'wire_api = "responses"',
        "request_max_retries = 0",
        "stream_max_retries = 0",
        "[analytics]",
        "enabled = false",
        "[feedback]",
        "enabled = false",
    ]
    (codex_home / "config.toml").write_text("\n".join(lines) + "\n" + extra_toml)
    if hooks:
        (codex_home / "hooks.json").write_text(json.dumps(hook_config(hooks), indent=1))
    env = base_env(home, tmpdir) | {"CODEX_HOME": str(codex_home), "FAKE_API_KEY": FAKE_OPENAI_KEY}
    env |= dict(extra_env or {})
    return CodexHome(tmp, home, codex_home, work, env)


def codex_argv(prompt: str, *, bypass_hook_trust: bool = True, extra_args: Sequence[str] = ()) -> list[str]:
    argv = [
        str(npm_clis.codex_binary()),
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
    ]
    if bypass_hook_trust:
        argv.append("--dangerously-bypass-hook-trust")  # exec skips untrusted hooks silently
    return [*argv, *extra_args, prompt]


def start_codex(home: CodexHome, prompt: str, **kw: Any) -> RunningAgent:
    """Start `codex exec` (stdin /dev/null) in the background; see `codex_argv` for options."""
    return start_agent(codex_argv(prompt, **kw), cwd=home.workdir, env=home.env)


def run_codex(home: CodexHome, prompt: str, *, timeout: float = 60, **kw: Any) -> AgentRun:
    """Run one `codex exec` turn to completion (or kill it after `timeout`)."""
    run = start_codex(home, prompt, **kw).wait(timeout)
    return replace(run, session_files=tuple(home.rollouts()))


def interrupt_when_stalled(
    agent: RunningAgent, server: ScriptedServer, *, stall: int = 1, timeout: float = 60
) -> AgentRun:
    """Wait until the fake holds its `stall`-th stalled request, SIGINT the agent, reap it."""
    try:
        server.wait_for_stall(count=stall, timeout=timeout)
    except TimeoutError:
        agent.kill()
        raise
    agent.interrupt()
    run = agent.wait(timeout)
    server.release_stalls()
    return run


def run_codex_interrupted(
    home: CodexHome, server: FakeResponses, prompt: str, *, stall: int = 1, timeout: float = 60, **kw: Any
) -> AgentRun:
    """Run codex and SIGINT it mid-request; script a `Stall()` step where the turn should be caught."""
    run = interrupt_when_stalled(start_codex(home, prompt, **kw), server, stall=stall, timeout=timeout)
    return replace(run, session_files=tuple(home.rollouts()))


# ==== Claude Code =============================================================================


def claude_project_slug(cwd: Path) -> str:
    """The transcript folder name for a cwd: every non-alphanumeric character becomes '-'."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


@dataclass(frozen=True)
class ClaudeHome:
    """A throwaway CLAUDE_CONFIG_DIR wired to a fake Messages server."""

    root: Path
    home: Path
    config_dir: Path
    workdir: Path
    env: dict[str, str]

    @property
    def project_dir(self) -> Path:
        return self.config_dir / "projects" / claude_project_slug(self.workdir)

    def transcripts(self) -> list[Path]:
        """Main-session transcripts (`<session_id>.jsonl`), oldest first."""
        return sorted(self.project_dir.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)

    def subagent_transcripts(self) -> list[Path]:
        return sorted(self.project_dir.glob("*/subagents/agent-*.jsonl"))


def make_claude_home(
    tmp: Path,
    server: FakeMessages | str,
    *,
    hooks: Mapping[str, Sequence[str]] | None = None,
    settings: Mapping[str, Any] | None = None,
    max_retries: int = 0,
    extra_env: Mapping[str, str] | None = None,
) -> ClaudeHome:
    """Create HOME, CLAUDE_CONFIG_DIR (onboarding done, settings.json hooks) and a work dir.

    `max_retries` is CLAUDE_CODE_MAX_RETRIES: 0 by default so an API error ends the turn at once
    (the CLI's own backoff is ~0.5 s, then ~1 s, and ignores retry-after headers).
    """
    home, work, tmpdir = _make_tree(tmp)
    config_dir = home / ".claude"
    config_dir.mkdir(exist_ok=True)
    # Print mode needs only hasCompletedOnboarding; the rest keeps an interactive TUI dialog-free.
    state = {
        "hasCompletedOnboarding": True,
        "bypassPermissionsModeAccepted": True,
        "theme": "dark",
        "customApiKeyResponses": {"approved": [FAKE_ANTHROPIC_KEY[-20:]], "rejected": []},
        "projects": {str(work): {"hasTrustDialogAccepted": True}},
    }
    (config_dir / ".claude.json").write_text(json.dumps(state))
    merged: dict[str, Any] = dict(settings or {})
    if hooks:
        merged["hooks"] = hook_config(hooks)["hooks"]
    if merged:
        (config_dir / "settings.json").write_text(json.dumps(merged, indent=1))
    url = server.url if isinstance(server, FakeMessages) else server
    env = base_env(home, tmpdir) | {
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": FAKE_ANTHROPIC_KEY,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_MAX_RETRIES": str(max_retries),
        # As root, bypassPermissions exits 1 unless the CLI believes it is sandboxed.
        "IS_SANDBOX": "1",
    }
    env |= dict(extra_env or {})
    return ClaudeHome(tmp, home, config_dir, work, env)


def claude_argv(prompt: str, *, output_format: str = "stream-json", extra_args: Sequence[str] = ()) -> list[str]:
    argv = [str(npm_clis.claude_binary()), "-p", "--output-format", output_format]
    if output_format == "stream-json":
        argv.append("--verbose")  # print mode refuses stream-json without it
    return [*argv, "--permission-mode", "bypassPermissions", *extra_args, prompt]


def start_claude(home: ClaudeHome, prompt: str, **kw: Any) -> RunningAgent:
    """Start `claude -p` (stdin /dev/null) in the background; see `claude_argv` for options."""
    return start_agent(claude_argv(prompt, **kw), cwd=home.workdir, env=home.env)


def run_claude(home: ClaudeHome, prompt: str, *, timeout: float = 60, **kw: Any) -> AgentRun:
    """Run `claude -p` to completion, including its background-task wind-down."""
    run = start_claude(home, prompt, **kw).wait(timeout)
    return replace(run, session_files=(*home.transcripts(), *home.subagent_transcripts()))


def run_claude_interrupted(
    home: ClaudeHome, server: FakeMessages, prompt: str, *, stall: int = 1, timeout: float = 60, **kw: Any
) -> AgentRun:
    """Run `claude -p` and SIGINT it while the fake holds a `Stall()` request."""
    run = interrupt_when_stalled(start_claude(home, prompt, **kw), server, stall=stall, timeout=timeout)
    return replace(run, session_files=(*home.transcripts(), *home.subagent_transcripts()))
