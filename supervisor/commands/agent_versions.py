"""Which Codex and Claude Code releases donebell was tested on, and which ones are installed here.

``donebell doctor`` and ``donebell status`` run ``codex --version`` / ``claude --version`` when
the program is on PATH (a short timeout each, both at once; never from a hook) and warn, listing
the tested releases, when one is outside the tested range: an agent update can change its hooks
(Claude Code 2.1.332 started killing print-mode StopFailure hooks). A version between two tested
releases counts as inside the range.

:data:`TESTED` is built from each agent's own ``PROGRAM`` and ``TESTED_RELEASES`` (its package's
``AGENT``), the list to extend after a release passes the e2e suite
(``DONEBELL_E2E_AGENTS=newest``, ``tests/support/agent_pins.json``; a unit test keeps them in step).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any

from donebell.shared.process.runner import Runner
from donebell.workers.agents.registry import agent, names
from donebell.workers.kit.install.checks import parse_version

#: agent -> (program on PATH, releases the e2e suite passed on, oldest first).
TESTED: dict[str, tuple[str, tuple[str, ...]]] = {
    name: (found.PROGRAM, found.TESTED_RELEASES) for name in names() if (found := agent(name)) is not None
}
#: Seconds one ``--version`` may take (a cold Claude binary needs well under one).
VERSION_TIMEOUT = 5.0


@dataclass(frozen=True)
class AgentVersion:
    """What was found for one agent. ``state``: tested | older | newer | unknown | not-found."""

    agent: str
    program: str | None
    version: str | None
    state: str
    tested: tuple[str, ...]
    warning: str | None = None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["tested"] = list(self.tested)
        return data


def _key(version: str) -> tuple[int, int, int]:
    parsed = parse_version(version)
    assert parsed is not None, version
    return parsed


def assess(agent: str, version: tuple[int, int, int]) -> tuple[str, str | None]:
    """(state, warning) of an installed ``version`` against the tested range."""
    program, tested = TESTED[agent]
    low, high = _key(tested[0]), _key(tested[-1])
    shown = ".".join(map(str, version))
    listing = ", ".join(tested)
    if version < low:
        return "older", f"{program} {shown} is older than every tested release ({listing}): upgrade {program}"
    if version > high:
        return "newer", (
            f"{program} {shown} is newer than every tested release ({listing}): "
            "its hooks may have changed; check `donebell explain` if a notification is missing"
        )
    return "tested", None


def probe(runner: Runner, agent: str) -> AgentVersion:
    """Look ``agent`` up on PATH and ask its version (never raises)."""
    program, tested = TESTED[agent]
    path = runner.which(program)
    if path is None:
        return AgentVersion(agent, None, None, "not-found", tested)
    result = runner.run([path, "--version"], timeout=VERSION_TIMEOUT)
    version = parse_version(result.stdout) if result.ok else None
    if version is None:
        reason = result.brief() if not result.ok else "no version in its output"
        return AgentVersion(agent, path, None, "unknown", tested, f"`{program} --version` failed: {reason}"[:200])
    state, warning = assess(agent, version)
    return AgentVersion(agent, path, ".".join(map(str, version)), state, tested, warning)


def probe_all(runner: Runner) -> list[AgentVersion]:
    """Every agent of :data:`TESTED`, asked in parallel (the slowest answer bounds the wait)."""
    with ThreadPoolExecutor(max_workers=len(TESTED)) as pool:
        return list(pool.map(lambda agent: probe(runner, agent), TESTED))


def summary(found: AgentVersion) -> str:
    """One human line: ``claude 2.1.332 (tested: 2.1.197, 2.1.332)``."""
    program = TESTED[found.agent][0]
    if found.state == "not-found":
        return f"{program}: not on PATH"
    shown = found.version or "version unknown"
    return f"{program} {shown} (tested: {', '.join(found.tested)})"
