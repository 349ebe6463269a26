"""What each agent looks like on disk and on the wire: one folder per agent (issue 25), and
:class:`LazyAgent`, the one object each agent's package declares as its ``AGENT`` (issue 35).

``codex/``, ``claude/`` and ``copilot/`` hold everything that knows that agent's formats and
commands: hook payloads, rollout/transcript records and cursors, gate evidence, titles, the wake
adapter. ``turn_status`` is the one classifier the agents' transcripts share. Importing this
package loads nothing else.
"""

from __future__ import annotations

TYPE_CHECKING = False  # the hook path imports this package: annotations only
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from donebell.shared.config.view import SettingsLike
    from donebell.shared.statedir import StateDir
    from donebell.workers.agents.protocols import Agent, LocalScan
    from donebell.workers.kit.gate_context import GateContext
    from donebell.workers.kit.hook_context import HookContext
    from donebell.workers.kit.thread_view import ThreadView
    from donebell.workers.kit.verdict import Verdict


# Here, not in a module of its own, because the hook path imports this package anyway; and the
# capabilities are typed attributes served by __getattr__, not one method each, because every
# function the class defines is loaded by every hook's start-up (docs/design.md, "Adding an agent").
class LazyAgent:
    """One agent as every role sees it (:class:`~donebell.workers.agents.protocols.Agent`): its
    words, its hook commands, and ``parts``, the functions of its own folder that do the work.

    ``parts`` maps a capability (a typed attribute below) to ``"module:function"``, the module
    inside the package ``where`` (the declaring agent package's ``__name__``). The function is
    imported each time the capability is asked for (``sys.modules`` keeps the module), so
    ``donebell hook codex-stop`` loads the hook's modules and nothing of the gate, the scanner or
    the wake adapter. A capability the agent names no part for answers :meth:`_default`: what an
    agent without that evidence answers. ``tests/test_agent_object.py`` holds every named function
    to its capability's type.
    """

    # What the roles call, typed as they call it (protocols.py says what each one means).
    approval_answer: Callable[[str | None], str | None]
    evaluate: Callable[[dict[str, Any], GateContext], Verdict]
    task_title: Callable[[dict[str, Any]], str | None]
    lookup_title: Callable[[dict[str, Any]], str | None]
    local_scan: Callable[[StateDir, SettingsLike, str], LocalScan | None]
    expire: Callable[[StateDir, float], dict[str, int]]
    locate_thread: Callable[[str], str | None]
    read_thread: Callable[[str], ThreadView]
    resume_argv: Callable[[str, str, list[str]], list[str] | None]
    daemon_socket: Callable[[], str | None]
    start_turn_in_daemon: Callable[[str, str, str], str]
    live_inbox: Callable[[str], str | None]
    post_to_inbox: Callable[[str, str], None]
    conversation_of: Callable[[dict[str, Any]], tuple[str | None, str | None]]
    coalescing_root: Callable[[dict[str, Any]], str]
    task_link: Callable[[dict[str, Any]], str | None]
    task_seconds: Callable[[dict[str, Any], StateDir], float | None]
    user_returned: Callable[[StateDir, dict[str, Any]], str | None]
    answered_in_file: Callable[[dict[str, Any], bytes, bytes], str | None]
    answered_at_terminal: Callable[[StateDir, dict[str, Any]], str | None]

    def __init__(
        self,
        where: str,
        *,
        name: str,
        display_name: str,
        hooks: Mapping[str, tuple[str, str]],
        parts: Mapping[str, str],
        ids: tuple[str, str],
        root: tuple[str, ...] = (),
        title_field: str | None = None,
        conversation_noun: str,
        turn_label: str,
        resume_command: str,
        program: str,
        tested_releases: tuple[str, ...],
    ) -> None:
        """``hooks``: event -> (the part that takes ``(ctx, args)``, what the hook prints, always;
        ``""`` is the bare ``donebell hook <name>``). ``ids``: the record's fields of (conversation,
        turn); ``root``: the fields naming the coalescing group, first set wins (default: the
        conversation's); ``title_field``: the record's field holding the task's title."""
        unknown = sorted(set(parts) - PARTS)
        if unknown or "evaluate" not in parts:
            raise ValueError(f"agent {name!r}: unknown parts {unknown}, or no evaluate")
        self.NAME, self.DISPLAY_NAME, self.PROGRAM, self.TESTED_RELEASES = name, display_name, program, tested_releases
        self.CONVERSATION_NOUN, self.TURN_LABEL, self.RESUME_COMMAND = conversation_noun, turn_label, resume_command
        self.HOOK_OUTPUT = {event: printed for event, (_part, printed) in hooks.items()}
        self.hooks = {event: part for event, (part, _printed) in hooks.items()}
        self.package, self.parts = where, dict(parts)
        self.ids, self.root, self.title_field = ids, root or ids[:1], title_field

    def __getattr__(self, capability: str) -> Callable[..., Any]:
        """A capability: the function the agent names for it, imported now, or :meth:`_default`."""
        if capability not in PARTS:
            raise AttributeError(capability)
        spec = self.parts.get(capability)
        return (lambda *args: self._default(capability, args)) if spec is None else self._named(spec)

    def hook(self, event: str, ctx: HookContext, args: list[str]) -> None:
        """``donebell hook <NAME>[-<event>]``: the role calls only the events of ``HOOK_OUTPUT``."""
        self._named(self.hooks[event])(ctx, args)

    def _named(self, spec: str) -> Callable[..., Any]:
        module, _, function = spec.partition(":")
        # the builtin, not importlib: importlib costs the hook start-up (lean_core.py)
        found: Callable[..., Any] = getattr(__import__(f"{self.package}.{module}", fromlist=(function,)), function)
        return found

    def _default(self, capability: str, args: tuple[Any, ...]) -> Any:
        """What an agent that names no part for ``capability`` answers: None, but for these."""
        if capability == "approval_answer":
            return args[0]  # the kit's shape (Claude Code's) is the one it obeys
        if capability == "lookup_title" and "task_title" in self.parts:
            return self.task_title(*args)  # the part reads the agent's files where they live
        if capability in ("task_title", "lookup_title"):  # the title is in the record, or nowhere
            title = args[0].get(self.title_field) if self.title_field else None
            return title if isinstance(title, str) and title else None
        if capability == "conversation_of":
            found = (args[0].get(field) for field in self.ids)
            return tuple(value if isinstance(value, str) else None for value in found)
        if capability == "coalescing_root":
            group = next((args[0][field] for field in self.root if args[0].get(field)), None)
            return f"{self.NAME}:{group or args[0]['key']}"
        if capability == "expire":
            return {}
        if capability == "read_thread":
            raise OSError(f"{self.DISPLAY_NAME} keeps no record a reply could continue")
        if capability in ("start_turn_in_daemon", "post_to_inbox"):
            from donebell.workers.kit.thread_view import DaemonError

            raise DaemonError(f"{self.DISPLAY_NAME} has no daemon or inbox that takes a turn", unreachable=True)
        return None


#: Every capability an agent may name a part for: the typed attributes of :class:`LazyAgent`.
PARTS = frozenset(LazyAgent.__annotations__)

if TYPE_CHECKING:

    def _an_agent(declared: LazyAgent) -> Agent:
        # mypy's proof that each capability is typed as the roles call it (that none is missing,
        # which __getattr__ would hide from mypy: tests/test_agent_object.py)
        return declared
