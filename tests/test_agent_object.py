"""One object per agent (issue 35): each ``agent.py`` declares its ``AGENT``, a ``LazyAgent`` that
names the functions of its own folder doing each capability's work and imports them when called.

mypy checks the object against the Protocols (``workers/agents/__init__.py``), but not the
functions it names as ``"module:function"``: the first test holds each named function to the
signature of the Protocol method that calls it, as the forwarding functions once made mypy do.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

import donebell.workers
import pytest
from donebell.workers.agents import PARTS, LazyAgent
from donebell.workers.agents.registry import AGENTS, agent, names
from donebell.workers.kit.thread_view import DaemonError
from support.agent_toy.agent import AGENT as TOY

AGENTS_FOLDER = Path(list(donebell.workers.__path__)[0]) / "agents"
EVERY_AGENT = [*(found for name in names() if (found := agent(name)) is not None), TOY]
#: A part may return a class of its own where the Protocol method returns a Protocol: that class
#: must have the Protocol's members (``protocols.LocalScan``).
NARROWED = {"LocalScan | None": ("scan", "watch_paths", "health")}


def shape(function: Any, *, method: bool = False) -> tuple[list[object], object]:
    """(each positional parameter's annotation, the return annotation), as written."""
    signature = inspect.signature(function)
    parameters = list(signature.parameters.values())[1 if method else 0 :]
    return [p.annotation for p in parameters], signature.return_annotation


@pytest.mark.parametrize("found", EVERY_AGENT, ids=repr)
def test_every_named_function_has_the_protocol_methods_signature(found: LazyAgent) -> None:
    for capability, spec in found.parts.items():
        function = found.resolve(spec)
        (want, returns), (got, got_returns) = shape(getattr(LazyAgent, capability), method=True), shape(function)
        assert got == want, f"{found.NAME} {capability} = {spec}: {got} is not {want}"
        if got_returns != returns:
            returned = function.__globals__[str(got_returns).removesuffix(" | None")]
            assert all(callable(getattr(returned, member, None)) for member in NARROWED[str(returns)]), spec
    for event, spec in found.hooks.items():
        assert shape(found.resolve(spec)) == (["HookContext", "list[str]"], "None"), f"{found.NAME} {event}"
    assert set(found.hooks) == set(found.HOOK_OUTPUT)


def test_the_signature_check_sees_a_wrong_function() -> None:
    """A part naming a function of another shape fails the check above (so it can fail)."""
    wrong = LazyAgent(
        TOY.package + ".agent",
        **_toy_words(),
        hooks={"done": ("hook:done", "")},
        parts={"evaluate": "gate:evaluate", "task_seconds": "gate:evaluate"},
        ids=("session_id", "turn_id"),
    )
    with pytest.raises(AssertionError, match="task_seconds"):
        test_every_named_function_has_the_protocol_methods_signature(wrong)


def _toy_words() -> dict[str, Any]:
    return {
        "name": "toy",
        "display_name": "Toy Agent",
        "conversation_noun": "Toy session",
        "turn_label": "Toy turn",
        "resume_command": "toy --resume {id}",
        "program": "toy",
        "tested_releases": ("1.0.0",),
    }


def test_a_declaration_names_only_known_capabilities_and_always_a_gate() -> None:
    hooks = {"done": ("hook:done", "")}
    with pytest.raises(ValueError, match="task_titel"):
        LazyAgent(__name__, **_toy_words(), hooks=hooks, parts={"evaluate": "g:e", "task_titel": "t:t"}, ids=("a", "b"))
    with pytest.raises(ValueError, match="no evaluate"):
        LazyAgent(__name__, **_toy_words(), hooks=hooks, parts={}, ids=("a", "b"))
    assert PARTS == {name for name in vars(LazyAgent) if not name.startswith("_")} - {
        "hook",
        "part",
        "resolve",
        "conversation_of",
        "coalescing_root",
    }


def test_a_capability_left_out_answers_as_an_agent_without_that_evidence(tmp_path: Path) -> None:
    """The toy names its hook and its gate only: everything else is the object's default."""
    record = {"key": "toy:s:t", "session_id": "s", "turn_id": "t", "toy_title": "Sort the toy box"}
    assert TOY.approval_answer('{"x": 1}') == '{"x": 1}' and TOY.approval_answer(None) is None
    assert TOY.task_title(record) == TOY.lookup_title(record) == "Sort the toy box"
    assert TOY.task_title({**record, "toy_title": ""}) is None and TOY.task_title({"key": "k"}) is None
    assert TOY.local_scan(None, None, "all") is None  # type: ignore[arg-type]
    assert TOY.expire(None, 0.0) == {}  # type: ignore[arg-type]
    assert TOY.locate_thread("s") is None and TOY.resume_argv("s", "go on", []) is None
    assert TOY.daemon_socket() is None and TOY.live_inbox("s") is None
    with pytest.raises(OSError, match="Toy Agent keeps no record"):
        TOY.read_thread(str(tmp_path / "s.jsonl"))
    for refused in (lambda: TOY.start_turn_in_daemon("/x.sock", "s", "go on"), lambda: TOY.post_to_inbox("s", "go")):
        with pytest.raises(DaemonError) as caught:
            refused()
        assert caught.value.unreachable and "Toy Agent has no" in str(caught.value)
    assert TOY.task_link(record) is None and TOY.task_seconds(record, None) is None  # type: ignore[arg-type]
    assert TOY.user_returned(None, record) is None and TOY.answered_at_terminal(None, record) is None  # type: ignore[arg-type]
    assert TOY.answered_in_file(record, b"", b"") is None


def test_records_are_read_by_the_declared_fields() -> None:
    codex, copilot = agent("codex"), agent("copilot")
    assert codex is not None and copilot is not None
    child = {"key": "codex:c:t", "thread_id": "c", "turn_id": "t", "root_thread_id": "r"}
    assert codex.conversation_of(child) == ("c", "t")
    assert codex.coalescing_root(child) == "codex:r"  # a subagent's candidates coalesce with their root's
    assert codex.coalescing_root({**child, "root_thread_id": None}) == "codex:c"
    assert codex.coalescing_root({"key": "codex:weak"}) == "codex:codex:weak"
    signal = {"key": "copilot:s", "session_id": "s", "interaction_id": 7, "copilot_title": "Fix the build"}
    assert copilot.conversation_of(signal) == ("s", None)  # not yet mapped to its task
    assert copilot.coalescing_root(signal) == "copilot:s"
    assert copilot.task_title(signal) == copilot.lookup_title(signal) == "Fix the build"
    ended = {"task_started_ms": 1000, "task_ended_ms": 62500}
    assert copilot.task_seconds(ended, None) == 61.5  # type: ignore[arg-type]


def test_each_agent_py_is_a_declaration() -> None:
    """No forwarding function comes back: an ``agent.py`` holds its docstring, imports and ``AGENT``."""
    toy = Path(str(sys.modules[TOY.package + ".agent"].__file__))
    for path in [*(AGENTS_FOLDER / name / "agent.py" for name in AGENTS), toy]:
        body = ast.parse(path.read_text(encoding="utf-8")).body
        kinds = [type(node).__name__ for node in body if not isinstance(node, (ast.Import, ast.ImportFrom))]
        assert kinds == ["Expr", "Assign"], f"{path}: {kinds}"


def test_a_part_is_imported_when_called_and_not_before() -> None:
    """Asking the registry for Codex loads its ``agent.py``; its gate loads when the gate is called."""
    code = (
        "import sys\n"
        "from donebell.workers.agents.registry import agent\n"
        "codex = agent('codex')\n"
        "codex.coalescing_root({'key': 'k'}); codex.approval_answer(None)\n"
        "print(sorted(m for m in sys.modules if m.startswith('donebell.workers.agents.codex')))\n"
        "codex.part('evaluate')\n"
        "print('donebell.workers.agents.codex.gate' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.split("\n")[:2] == [
        "['donebell.workers.agents.codex', 'donebell.workers.agents.codex.agent']",
        "True",
    ]
