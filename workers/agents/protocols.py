"""The small interfaces the roles call on an agent: one ``Protocol`` per capability.

An agent is one object, the ``AGENT`` its folder's package declares (a
:class:`~donebell.workers.agents.LazyAgent`, which implements every Protocol below; mypy checks it
once for all agents), registered by name in :mod:`~donebell.workers.agents.registry`. Each
capability is what one role asks:

* :class:`Hooks`: the hook role (``donebell hook <agent>[-<event>]``) hands it the invocation;
* :class:`Gate`: the delivery role's gate asks whether a pending candidate of this agent is done;
* :class:`Titles`: the delivery role names the task in the push; the remote probe worker looks a
  title up where the files live;
* :class:`Scanning`: the local scanner runs each agent's :class:`LocalScan` (none is fine);
* :class:`Upkeep`: the maintenance role lets the agent expire what only it writes;
* :class:`Wake`: the wake role finds a thread's record, reads its turns and starts the next one;
* :class:`Records`: every role that groups, keys or names the agent's records (the gate's
  coalescing, the reply ticket's ids, ``explain``), and the push's link to the task;
* :class:`Policies`: the delivery policies' evidence (task time, desk return, a "needs you"
  request answered at the terminal);
* :class:`Versions`: the releases the e2e suite passed on, for ``doctor``;
* :class:`Install`: ``install``, ``uninstall`` and ``doctor``'s wiring checks (the folder's
  ``setup.py``, loaded by :func:`~donebell.workers.agents.registry.installer` only).

What the roles pass in and get back are their own types (``HookContext``, ``GateContext``,
``Verdict``, the settings view) from ``workers/kit/``: an agent imports the kit and ``shared/``, a
role never imports an agent by name (``tests/test_layering.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from donebell.shared.config.view import SettingsLike
    from donebell.shared.process.runner import Runner
    from donebell.shared.statedir import StateDir
    from donebell.workers.kit.gate_context import GateContext
    from donebell.workers.kit.hook_context import HookContext
    from donebell.workers.kit.install.checks import Check
    from donebell.workers.kit.install.plans import AgentPlan
    from donebell.workers.kit.pass_result import PassResult
    from donebell.workers.kit.thread_view import ThreadView
    from donebell.workers.kit.verdict import Verdict


class Hooks(Protocol):
    """``donebell hook <NAME>`` and ``donebell hook <NAME>-<event>``."""

    @property
    def NAME(self) -> str:  # a constant of the agent, hence the case
        """The agent's name: its records' ``provider`` and its hook command's prefix."""
        ...

    @property
    def HOOK_OUTPUT(self) -> Mapping[str, str]:
        """event -> what the hook prints on stdout, always ("" is the bare ``donebell hook <NAME>``)."""
        ...

    def hook(self, event: str, ctx: HookContext, args: list[str]) -> None:
        """Record the agent's signal (payload on stdin or in ``args``); raise ``PayloadError`` to refuse it."""
        ...

    def approval_answer(self, printed: str | None) -> str | None:
        """The phone's answer as the kit's wait prints it (Claude Code's ``hookSpecificOutput``
        shape) in the shape this agent obeys, or None to print nothing (its own dialog decides).
        One place for it, so a hook that resumes its wait after the lean sleep prints it the same."""
        ...


class Gate(Protocol):
    """The agent's evidence that a pending candidate's task is truly done."""

    def evaluate(self, record: dict[str, Any], ctx: GateContext) -> Verdict:
        """Decide one pending candidate of this agent now (wait, promote, suppress or remove)."""
        ...


class Titles(Protocol):
    """How the push names the agent and the task."""

    @property
    def DISPLAY_NAME(self) -> str:
        """The agent's name as a person reads it ("Codex"): the push title when nothing better is known."""
        ...

    def task_title(self, record: dict[str, Any]) -> str | None:
        """The agent's own name for the task at send time; never opens a remote root's files."""
        ...

    def lookup_title(self, record: dict[str, Any]) -> str | None:
        """The title read from the agent's files, where they live (the remote probe worker)."""
        ...


class LocalScan(Protocol):
    """One agent's share of a local-scanner pass: a safety net that reads the agent's own files."""

    def scan(self, full: bool) -> PassResult:
        """Tail what changed and submit what ended (``full``: the periodic rescan the role schedules)."""
        ...

    def watch_paths(self) -> list[Path]:
        """What the role's inotify watches to wake a pass early."""
        ...

    def health(self) -> dict[str, Any]:
        """Fields for the role's health file."""
        ...


class Scanning(Protocol):
    """The local scanner's part."""

    def local_scan(self, state: StateDir, settings: SettingsLike, scope: str) -> LocalScan | None:
        """The agent's share of each pass (``scope``: ``hot`` or ``all``); None when it is switched off."""
        ...


class Upkeep(Protocol):
    """The maintenance role's part: expire what only this agent writes."""

    def expire(self, state: StateDir, now: float) -> dict[str, int]:
        """Remove the agent's own records nothing needs any more: counters for the role's log."""
        ...


class Wake(Protocol):
    """The wake role's part: reply to continue (docs/wake.md)."""

    def locate_thread(self, conversation_id: str) -> str | None:
        """The file that records the thread's turns on this machine, or None."""
        ...

    def read_thread(self, path: str) -> ThreadView:
        """The thread's turns as that file shows them; ``OSError`` if it cannot be read."""
        ...

    def resume_argv(self, conversation_id: str, prompt: str, extra_args: list[str]) -> list[str] | None:
        """The agent's own command that starts one turn in the thread, or None when it is not on PATH."""
        ...

    def daemon_socket(self) -> str | None:
        """A running daemon of the agent that can start the turn instead (None: the command is used)."""
        ...

    def start_turn_in_daemon(self, socket_path: str, conversation_id: str, prompt: str) -> str:
        """Ask that daemon for one turn; its id, or :class:`~donebell.workers.kit.thread_view.DaemonError`."""
        ...

    def live_inbox(self, conversation_id: str) -> str | None:
        """The inbox of the conversation's session while it is still open (the reply goes into it
        instead of a new process), or None."""
        ...

    def post_to_inbox(self, inbox: str, prompt: str) -> None:
        """Deliver ``prompt`` into that session as one user message; ``DaemonError`` if it cannot."""
        ...


class Records(Protocol):
    """How the agent's records name a conversation and a turn."""

    @property
    def CONVERSATION_NOUN(self) -> str:
        """What a person calls the agent's conversation ("Codex thread")."""
        ...

    @property
    def TURN_LABEL(self) -> str:
        """What ``explain`` calls one of its turns ("Codex turn")."""
        ...

    @property
    def RESUME_COMMAND(self) -> str:
        """The agent's own command that reopens a conversation, ``{id}`` for its id."""
        ...

    def conversation_of(self, record: dict[str, Any]) -> tuple[str | None, str | None]:
        """(conversation id, turn id) as the record's event key was made from, or None for either."""
        ...

    def coalescing_root(self, record: dict[str, Any]) -> str:
        """The group whose candidates coalesce into one push (a root thread, a session)."""
        ...

    def task_link(self, record: dict[str, Any]) -> str | None:
        """A web link to the task (the push's click and "Open task"), or None."""
        ...


class Policies(Protocol):
    """The delivery policies' evidence, read from the state directory or the agent's own files."""

    def answered_in_file(self, record: dict[str, Any], before: bytes, after: bytes) -> str | None:
        """Why the request's file shows this very request answered, or None. ``after``: what the
        agent wrote there after the request (from ``answer_offset``); ``before``: the end of what it
        had written until then (where the waiting call usually is). Only the request's own call's
        result counts (another call's never does); while that call cannot be identified, only what
        ends the whole wait (the turn's end, a new prompt)."""
        ...

    def task_seconds(self, record: dict[str, Any], state: StateDir) -> float | None:
        """How long the task took by the agent's own timestamps (``min_task_seconds``), or None."""
        ...

    def user_returned(self, state: StateDir, record: dict[str, Any]) -> str | None:
        """Why the user is believed back at the desk in this conversation (desk grace), or None."""
        ...

    def answered_at_terminal(self, state: StateDir, record: dict[str, Any]) -> str | None:
        """The agent's own sign, beyond its file (``answered_in_file``), that a "needs you" request was answered."""
        ...


class Versions(Protocol):
    """What ``doctor`` checks the installed agent against."""

    @property
    def PROGRAM(self) -> str:
        """The agent's command on PATH (asked ``--version``)."""
        ...

    @property
    def TESTED_RELEASES(self) -> tuple[str, ...]:
        """Releases the e2e suite passed on, oldest first (``tests/support/agent_pins.json``)."""
        ...


class Agent(Hooks, Gate, Titles, Scanning, Upkeep, Wake, Records, Policies, Versions, Protocol):
    """Everything the roles ask of one agent."""


class Install(Protocol):
    """``donebell install | uninstall | doctor``: the agent's wiring, in its folder's ``setup.py``.

    Hook entries, config files, trust and the checks of them: the CLI asks
    :func:`~donebell.workers.agents.registry.installer` and names no agent, so the agent's folder
    is the only place that knows where its files are and what goes into them. The version check
    is :class:`Versions` (``doctor``'s table of tested releases).
    """

    @property
    def DISPLAY_NAME(self) -> str:
        """The agent's name as a person reads it (install's lines, the ``--<name>`` flag's help)."""
        ...

    @property
    def INSTALL_HELP(self) -> str:
        """Help of ``donebell install --<name>``: where the agent's files are."""
        ...

    def present(self, runner: Runner) -> bool:
        """Is the agent on this machine (its home exists, its variable is set, or its CLI is on PATH)?"""
        ...

    def plan_install(self, executable: str, record: dict[str, Any], runner: Runner) -> AgentPlan:
        """The edits that wire the agent to ``executable`` (nothing is written); ``record`` is
        donebell's install record, the plan's ``record`` the record after it."""
        ...

    def plan_uninstall(self, record: dict[str, Any], chain: list[str] | None) -> AgentPlan:
        """The edits that unwire the agent; ``chain`` is donebell's ``chain_notify`` (what to put back)."""
        ...

    def doctor_checks(self, settings: SettingsLike | None) -> list[Check]:
        """doctor's lines about the wiring (``details["wired"]`` when anything is wired); ``settings``
        is None when the config cannot be read."""
        ...

    def permission_hooks(self) -> list[tuple[Path, tuple[str, ...]]]:
        """Each file that may hold donebell's PermissionRequest hook, with its hook arguments."""
        ...
