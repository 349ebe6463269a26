"""What each agent looks like on disk and on the wire: one folder per agent (issue 25), and
:class:`LazyAgent`, the one object each folder's ``agent.py`` declares (issue 35).

``codex/``, ``claude/`` and ``copilot/`` hold everything that knows that agent's formats and
commands: hook payloads, rollout/transcript records and cursors, gate evidence, titles, the wake
adapter. ``turn_status`` is the one classifier the agents' transcripts share.

The class lives here, not in a module of its own, because the hook path imports this package
anyway: ``donebell hook …`` loads no more modules than before for it (``tests/test_import_cost.py``).
Importing this package loads nothing else.
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

#: Every capability an agent may name a part for (the methods of :class:`LazyAgent` that call one).
PARTS = frozenset(
    (
        "approval_answer",
        "evaluate",
        "task_title",
        "lookup_title",
        "local_scan",
        "expire",
        "locate_thread",
        "read_thread",
        "resume_argv",
        "daemon_socket",
        "start_turn_in_daemon",
        "live_inbox",
        "post_to_inbox",
        "task_link",
        "task_seconds",
        "user_returned",
        "answered_in_file",
        "answered_at_terminal",
    )
)


def _nothing(*_args: object) -> None:
    return None


def _no_counters(*_args: object) -> dict[str, int]:
    return {}


def _as_printed(printed: str | None) -> str | None:
    return printed


def _daemon_error(message: str) -> Exception:
    from donebell.workers.kit.thread_view import DaemonError

    return DaemonError(message, unreachable=True)


class LazyAgent:
    """One agent as every role sees it (:class:`~donebell.workers.agents.protocols.Agent`): its
    words, its hook commands, and a table of the functions in its own folder that do the work.

    ``parts`` maps a capability (a method name below) to ``"module:function"``, the module named
    inside the package of ``where`` (the declaring ``agent.py``'s ``__name__``). A part is imported
    when it is called, each time (the module stays in ``sys.modules``), so ``donebell hook
    codex-stop`` loads the hook's modules and nothing of the gate, the scanner or the wake adapter.
    A capability left out answers what an agent without that evidence answers: no title, no
    scanner, nothing to expire, no thread to continue, no policy evidence, the phone's approval
    printed as it is. Its signature is the Protocol method's (``tests/test_agent_object.py``).
    """

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
        turn), ``root``: the fields naming the coalescing group, first set wins (default: the
        conversation's). ``title_field``: the record's field holding the task's title, when no
        ``task_title`` part reads it."""
        unknown = sorted(set(parts) - PARTS)
        if unknown or "evaluate" not in parts:
            raise ValueError(f"agent {name!r}: unknown parts {unknown}, or no evaluate")
        self.NAME = name
        self.DISPLAY_NAME = display_name
        self.HOOK_OUTPUT: dict[str, str] = {event: printed for event, (_part, printed) in hooks.items()}
        self.CONVERSATION_NOUN = conversation_noun
        self.TURN_LABEL = turn_label
        self.RESUME_COMMAND = resume_command
        self.PROGRAM = program
        self.TESTED_RELEASES = tested_releases
        self.package = where.rpartition(".")[0]
        self.parts = dict(parts)
        self.hooks = {event: part for event, (part, _printed) in hooks.items()}
        self._ids, self._root, self._title_field = ids, root or ids[:1], title_field

    def __repr__(self) -> str:
        return f"<agent {self.NAME} from {self.package}>"

    def part(self, capability: str, default: Callable[..., Any] = _nothing) -> Callable[..., Any]:
        """The function the agent names for ``capability``, imported now; ``default`` when it names none."""
        spec = self.parts.get(capability)
        return default if spec is None else self.resolve(spec)

    def resolve(self, spec: str) -> Callable[..., Any]:
        """``"module:function"`` of the agent's package, imported now (``sys.modules`` keeps it)."""
        module, _, function = spec.partition(":")
        # the builtin, not importlib: importlib costs the hook start-up (lean_core.py)
        found: Callable[..., Any] = getattr(__import__(f"{self.package}.{module}", fromlist=(function,)), function)
        return found

    # --- Hooks -----------------------------------------------------------------------------------

    def hook(self, event: str, ctx: HookContext, args: list[str]) -> None:
        self.resolve(self.hooks[event])(ctx, args)  # the hook role calls only events of HOOK_OUTPUT

    def approval_answer(self, printed: str | None) -> str | None:
        answer: str | None = self.part("approval_answer", _as_printed)(printed)
        return answer

    # --- Gate, Titles, Scanning, Upkeep ----------------------------------------------------------

    def evaluate(self, record: dict[str, Any], ctx: GateContext) -> Verdict:
        verdict: Verdict = self.part("evaluate")(record, ctx)
        return verdict

    def task_title(self, record: dict[str, Any]) -> str | None:
        if "task_title" not in self.parts:
            title = record.get(self._title_field) if self._title_field else None
            return title if isinstance(title, str) and title else None
        found: str | None = self.part("task_title")(record)
        return found

    def lookup_title(self, record: dict[str, Any]) -> str | None:
        found: str | None = self.part("lookup_title", self.task_title)(record)
        return found

    def local_scan(self, state: StateDir, settings: SettingsLike, scope: str) -> LocalScan | None:
        scan: LocalScan | None = self.part("local_scan")(state, settings, scope)
        return scan

    def expire(self, state: StateDir, now: float) -> dict[str, int]:
        counters: dict[str, int] = self.part("expire", _no_counters)(state, now)
        return counters

    # --- Wake ------------------------------------------------------------------------------------

    def locate_thread(self, conversation_id: str) -> str | None:
        path: str | None = self.part("locate_thread")(conversation_id)
        return path

    def read_thread(self, path: str) -> ThreadView:
        view: ThreadView = self.part("read_thread", self._no_thread)(path)
        return view

    def _no_thread(self, path: str) -> ThreadView:
        raise OSError(f"{self.DISPLAY_NAME} keeps no record a reply could continue")

    def resume_argv(self, conversation_id: str, prompt: str, extra_args: list[str]) -> list[str] | None:
        argv: list[str] | None = self.part("resume_argv")(conversation_id, prompt, extra_args)
        return argv

    def daemon_socket(self) -> str | None:
        socket: str | None = self.part("daemon_socket")()
        return socket

    def start_turn_in_daemon(self, socket_path: str, conversation_id: str, prompt: str) -> str:
        turn: str = self.part("start_turn_in_daemon", self._no_daemon)(socket_path, conversation_id, prompt)
        return turn

    def _no_daemon(self, *_args: str) -> str:
        raise _daemon_error(f"{self.DISPLAY_NAME} has no daemon to start a turn in")

    def live_inbox(self, conversation_id: str) -> str | None:
        inbox: str | None = self.part("live_inbox")(conversation_id)
        return inbox

    def post_to_inbox(self, inbox: str, prompt: str) -> None:
        self.part("post_to_inbox", self._no_inbox)(inbox, prompt)

    def _no_inbox(self, *_args: str) -> None:
        raise _daemon_error(f"{self.DISPLAY_NAME} has no inbox a reply could go into")

    # --- Records, Policies -----------------------------------------------------------------------

    def conversation_of(self, record: dict[str, Any]) -> tuple[str | None, str | None]:
        conversation, turn = (record.get(field) for field in self._ids)
        return (conversation if isinstance(conversation, str) else None, turn if isinstance(turn, str) else None)

    def coalescing_root(self, record: dict[str, Any]) -> str:
        group = next((record[field] for field in self._root if record.get(field)), None)
        return f"{self.NAME}:{group or record['key']}"

    def task_link(self, record: dict[str, Any]) -> str | None:
        link: str | None = self.part("task_link")(record)
        return link

    def task_seconds(self, record: dict[str, Any], state: StateDir) -> float | None:
        seconds: float | None = self.part("task_seconds")(record, state)
        return seconds

    def user_returned(self, state: StateDir, record: dict[str, Any]) -> str | None:
        why: str | None = self.part("user_returned")(state, record)
        return why

    def answered_in_file(self, record: dict[str, Any], before: bytes, after: bytes) -> str | None:
        why: str | None = self.part("answered_in_file")(record, before, after)
        return why

    def answered_at_terminal(self, state: StateDir, record: dict[str, Any]) -> str | None:
        why: str | None = self.part("answered_at_terminal")(state, record)
        return why


if TYPE_CHECKING:

    def _an_agent(declared: LazyAgent) -> Agent:
        return declared  # mypy's proof that the object is every capability the roles call
