"""Which agents donebell knows, by name, and the one way a role reaches one.

Adding an agent is one folder, ``workers/agents/<name>/``, whose package declares its ``AGENT``
(a :class:`~donebell.workers.agents.LazyAgent`, which implements
:class:`~donebell.workers.agents.protocols.Agent`), plus its one line in :data:`AGENTS`
(docs/design.md, "Adding an agent"). A role asks :func:`agent` with a record's ``provider`` or a
hook command's prefix and never imports an agent's folder by name (``tests/test_layering.py``).

Lean: the hook path imports this module, so nothing here loads ``typing`` or ``importlib`` at run
time, and an agent's package is imported on first use only: ``donebell hook claude`` never loads
Codex's code (and of Claude's, only what its ``AGENT`` calls: the hook's parts).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

    from donebell.workers.agents.protocols import Agent, Install

#: name (the records' ``provider``, the hook command's prefix) -> the package declaring its ``AGENT``.
AGENTS: dict[str, str] = {
    "codex": "donebell.workers.agents.codex",
    "claude": "donebell.workers.agents.claude",
    "copilot": "donebell.workers.agents.copilot",
}
#: An agent that also runs another agent's hooks (Copilot CLI runs a trusted project's
#: Claude hooks from ``.claude/``) -> the variable it sets in their environment, so the other
#: agent's hook can tell the call is not its own (its own hooks report that task).
HOOK_HOST_ENV: dict[str, str] = {"copilot": "COPILOT_CLI"}


def agent(name: object) -> Agent | None:
    """The agent registered as ``name`` (its package's ``AGENT``, imported on first use), or ``None``."""
    path = AGENTS.get(name) if isinstance(name, str) else None
    if path is None:
        return None
    module: Any = __import__(path, fromlist=("AGENT",))  # the builtin: importlib costs start-up
    found: Agent = module.AGENT
    return found


def hosting_agent(environ: dict[str, str] | object) -> str | None:
    """The agent whose :data:`HOOK_HOST_ENV` variable is ``1`` in ``environ`` (a hook's), or None."""
    get = getattr(environ, "get", None)
    if get is None:
        return None
    return next((name for name, variable in HOOK_HOST_ENV.items() if get(variable) == "1"), None)


def names() -> tuple[str, ...]:
    """Every registered agent, in registration order."""
    return tuple(AGENTS)


def hook_target(command: str) -> tuple[Agent | None, str]:
    """``codex-stop`` -> (the Codex agent, ``"stop"``); ``claude`` -> (the Claude agent, ``""``).

    ``(None, …)`` for a prefix no agent is registered under; whether the agent knows the event
    is its :attr:`~donebell.workers.agents.protocols.Hooks.HOOK_OUTPUT`'s to say.
    """
    name, _, event = command.partition("-")
    return agent(name), event


def installer(name: str) -> Install | None:
    """The agent's wiring for ``install``, ``uninstall`` and ``doctor``: its folder's ``setup.py``
    (a module of the agent's package), or ``None`` for a name no agent is registered under."""
    path = AGENTS.get(name)
    if path is None:
        return None
    module: Any = __import__(path + ".setup", fromlist=("plan_install",))
    found: Install = module
    return found
