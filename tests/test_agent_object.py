"""One object per agent (issue 35): each agent's package declares its ``AGENT``, a ``LazyAgent``
that names the functions of its own folder doing each capability's work and imports them when
they are asked for.

mypy checks the object against the Protocols (``workers/agents/__init__.py``), but not the
functions it names as ``"module:function"``: the first test holds each named function to the
capability's type, as the forwarding functions once made mypy do.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from typing import Any

import pytest
from donebell.workers.agents import PARTS, LazyAgent, protocols
from donebell.workers.agents.registry import AGENTS, agent, names
from donebell.workers.kit.thread_view import DaemonError
from support.agent_toy import AGENT as TOY

EVERY_AGENT = [*(found for name in names() if (found := agent(name)) is not None), TOY]
#: A part may return a class of its own where the capability returns a Protocol: that class must
#: have the Protocol's members (``protocols.LocalScan``).
NARROWED = {"LocalScan | None": ("scan", "watch_paths", "health")}


def named(found: LazyAgent, spec: str) -> Any:
    module, _, function = spec.partition(":")
    return getattr(__import__(f"{found.package}.{module}", fromlist=(function,)), function)


def callable_type(function: Any) -> tuple[str, str]:
    """(``Callable[[<parameters>], ...]`` as the function's annotations write it, its return)."""
    signature = inspect.signature(function)
    parameters = ", ".join(str(p.annotation) for p in signature.parameters.values())
    return f"Callable[[{parameters}], ", str(signature.return_annotation)


@pytest.mark.parametrize("found", EVERY_AGENT, ids=lambda found: found.NAME)
def test_every_named_function_has_the_capabilitys_type(found: LazyAgent) -> None:
    for capability, spec in found.parts.items():
        function = named(found, spec)
        assert getattr(found, capability) is function
        want = LazyAgent.__annotations__[capability]
        parameters, returns = callable_type(function)
        assert want.startswith(parameters), f"{found.NAME} {capability} = {spec}: {parameters} is not {want}"
        wanted_return = want.removeprefix(parameters).removesuffix("]")
        if returns != wanted_return:
            returned = function.__globals__[returns.removesuffix(" | None")]
            assert all(callable(getattr(returned, member, None)) for member in NARROWED[wanted_return]), spec
    for event, spec in found.hooks.items():
        assert callable_type(named(found, spec)) == ("Callable[[HookContext, list[str]], ", "None"), event
    assert set(found.hooks) == set(found.HOOK_OUTPUT)


def test_the_type_check_sees_a_wrong_function() -> None:
    """A part naming a function of another shape fails the check above (so it can fail)."""
    wrong = LazyAgent(
        TOY.package,
        **_toy_words(),
        hooks={"done": ("hook:done", "")},
        parts={"evaluate": "gate:evaluate", "task_seconds": "gate:evaluate"},
        ids=("session_id", "turn_id"),
    )
    with pytest.raises(AssertionError, match="task_seconds"):
        test_every_named_function_has_the_capabilitys_type(wrong)


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


def test_the_capabilities_are_the_protocols_methods() -> None:
    """Every method the roles call, but the hook (the ``hooks`` table), is a capability a part may name."""
    methods = {
        name
        for capability in protocols.Agent.__mro__
        if capability.__module__ == protocols.__name__
        for name, value in vars(capability).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }
    assert methods - {"hook"} == PARTS
    hooks = {"done": ("hook:done", "")}
    with pytest.raises(ValueError, match="task_titel"):
        LazyAgent("x", **_toy_words(), hooks=hooks, parts={"evaluate": "g:e", "task_titel": "t:t"}, ids=("a", "b"))
    with pytest.raises(ValueError, match="no evaluate"):
        LazyAgent("x", **_toy_words(), hooks=hooks, parts={}, ids=("a", "b"))
    with pytest.raises(AttributeError):
        TOY.evaluat  # noqa: B018 - a misspelt capability is no capability


def test_a_capability_left_out_answers_as_an_agent_without_that_evidence(tmp_path: Any) -> None:
    """The toy names its hook and its gate only: everything else is the object's default."""
    record = {"key": "toy:s:t", "session_id": "s", "turn_id": "t", "toy_title": "Sort the toy box"}
    assert TOY.approval_answer('{"x": 1}') == '{"x": 1}' and TOY.approval_answer(None) is None
    assert TOY.task_title(record) == TOY.lookup_title(record) == "Sort the toy box"
    assert TOY.task_title({**record, "toy_title": ""}) is None and TOY.task_title({"key": "k"}) is None
    assert TOY.conversation_of({**record, "turn_id": 7}) == ("s", None)
    assert TOY.coalescing_root(record) == "toy:s" and TOY.coalescing_root({"key": "k"}) == "toy:k"
    assert TOY.local_scan(None, None, "all") is None  # type: ignore[arg-type]
    assert TOY.expire(None, 0.0) == {}  # type: ignore[arg-type]
    assert TOY.locate_thread("s") is None and TOY.resume_argv("s", "go on", []) is None
    assert TOY.daemon_socket() is None and TOY.live_inbox("s") is None
    with pytest.raises(OSError, match="Toy Agent keeps no record"):
        TOY.read_thread(str(tmp_path / "s.jsonl"))
    for refused in (lambda: TOY.start_turn_in_daemon("/x.sock", "s", "go on"), lambda: TOY.post_to_inbox("s", "go")):
        with pytest.raises(DaemonError) as caught:
            refused()
        assert caught.value.unreachable and "Toy Agent has no daemon" in str(caught.value)
    assert TOY.task_link(record) is None and TOY.task_seconds(record, None) is None  # type: ignore[arg-type]
    assert TOY.user_returned(None, record) is None and TOY.answered_at_terminal(None, record) is None  # type: ignore[arg-type]
    assert TOY.answered_in_file(record, b"", b"") is None


def test_records_are_read_by_the_declared_fields(tmp_path: Any) -> None:
    codex, claude, copilot = agent("codex"), agent("claude"), agent("copilot")
    assert codex is not None and claude is not None and copilot is not None
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
    # Claude names a task_title part (its transcript's title) and no lookup_title: the lookup is the same.
    transcript = tmp_path / "s.jsonl"
    transcript.write_text('{"type": "custom-title", "customTitle": "Tidy the docs"}\n', encoding="utf-8")
    session = {"key": "claude:s:p", "session_id": "s", "prompt_id": "p", "transcript_path": str(transcript)}
    assert claude.lookup_title(session) == claude.task_title(session) == "Tidy the docs"
    assert claude.conversation_of(session) == ("s", "p") and claude.coalescing_root(session) == "claude:s"


def test_each_agent_is_its_packages_agent() -> None:
    for name in names():
        found = agent(name)
        assert isinstance(found, LazyAgent) and found.NAME == name and found.package == AGENTS[name]


def test_a_part_is_imported_when_asked_for_and_not_before() -> None:
    """Asking the registry for Codex loads its package; its gate loads when the gate is asked for."""
    code = (
        "import sys\n"
        "from donebell.workers.agents.registry import agent\n"
        "codex = agent('codex')\n"
        "codex.coalescing_root({'key': 'k'}); codex.approval_answer(None)\n"
        "print(sorted(m for m in sys.modules if m.startswith('donebell.workers.agents.codex')))\n"
        "codex.evaluate\n"
        "print('donebell.workers.agents.codex.gate' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.split("\n")[:2] == ["['donebell.workers.agents.codex']", "True"]
