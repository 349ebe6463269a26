"""Supervision's state words come from one module (issue 35): ``shared/states.py``, as supervisord
keeps its ``states.py``. A role's health state, the supervisor's slot and phase, a restart state,
a probe worker's state in the delivery role's health, and what ``status`` shows: each is a
``Literal`` type there, so mypy reads a word where it is typed, and this test reads the rest.

Read with ``ast`` in the modules that write or judge those states (:data:`SCOPE`): a string literal
standing for a state must be a word of one of ``states.py``'s vocabularies. A literal stands for a
state when it is

* the value of a ``state=`` or ``phase=`` keyword, or of a ``"state"`` / ``"phase"`` key in a dict
  display;
* assigned to a name or attribute in :data:`HOLDERS` (``slot.state``, ``role_state``; in a tuple
  assignment, the value in its position);
* compared with one of those, or with ``x.get("state")`` / ``x["state"]``;
* an element of a collection bound to a name ending in ``STATES``.

Other vocabularies that happen to use a field called ``state`` stay out of :data:`SCOPE`
(:data:`OTHER_VOCABULARIES`, and the Codex thread states of ``workers/agents``).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

from donebell.shared import states

ROOT = Path(__file__).resolve().parents[1]
#: Modules of ``supervisor/`` whose ``state`` is another thing's, with what it is.
OTHER_VOCABULARIES = {
    "supervisor/commands/agent_versions.py": "an agent CLI's install state (found, not-found, ...)",
    "supervisor/doctor/agents.py": "an agent CLI's install state, as doctor words it",
    "supervisor/commands/config_wait_note.py": "whether a setting is on",
    "supervisor/commands/sendtest.py": "where a `donebell test` record is (a queue folder), or config-error",
}
#: The modules that write or judge supervision states.
SCOPE = (
    *(p for p in sorted((ROOT / "supervisor").rglob("*.py")) if str(p.relative_to(ROOT)) not in OTHER_VOCABULARIES),
    ROOT / "shared" / "health.py",
    ROOT / "shared" / "ntfy" / "subscribe.py",
    ROOT / "workers" / "role.py",
    *sorted((ROOT / "workers").glob("*/role.py")),
    ROOT / "workers" / "gate" / "remote_pool.py",
)
#: Keys and keywords that carry a state.
STATE_NAMES = frozenset({"state", "phase"})
#: Names and attributes that hold one (``gate_state`` is free text: "ok" or the error).
HOLDERS = STATE_NAMES | {"role_state", "subscription_state"}


def _words(alias: object) -> set[str]:
    """Every string of a ``Literal`` alias (unions of them included)."""
    found: set[str] = set()
    for arg in get_args(alias):
        found |= {arg} if isinstance(arg, str) else _words(arg)
    return found


VOCABULARY = frozenset().union(
    *(
        _words(getattr(states, name))
        for name in (
            "RoleState",
            "SlotState",
            "RestartState",
            "Phase",
            "StatusState",
            "ProbeWorkerState",
            "SubscriptionState",
        )
    )
)


def _strings(node: ast.AST | None) -> list[ast.Constant]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [c for e in node.elts for c in _strings(e)]
    if isinstance(node, ast.IfExp):
        return _strings(node.body) + _strings(node.orelse)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set"):
        return [c for a in node.args for c in _strings(a)]
    return []


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def _holds_state(node: ast.AST) -> bool:
    """``state``, ``slot.state``, ``role_state``, ``x.get("state")``, ``x["state"]``."""
    if _name(node) in HOLDERS:
        return True
    key: ast.AST | None = None
    if isinstance(node, ast.Call) and _name(node.func) == "get" and node.args:
        key = node.args[0]
    elif isinstance(node, ast.Subscript):
        key = node.slice
    return isinstance(key, ast.Constant) and key.value in STATE_NAMES


def _assigned(targets: list[ast.expr], value: ast.AST | None) -> list[ast.Constant]:
    found: list[ast.Constant] = []
    for target in targets:
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            found += [c for t, v in zip(target.elts, value.elts, strict=True) if _holds_state(t) for c in _strings(v)]
        elif _holds_state(target):
            found += _strings(value)
        elif _name(target).endswith("STATES"):
            found += _strings(value)
    return found


def state_literals(source: str) -> list[ast.Constant]:
    """The string literals of ``source`` that stand for a supervision state."""
    found: list[ast.Constant] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            found += [c for k in node.keywords if k.arg in STATE_NAMES for c in _strings(k.value)]
        elif isinstance(node, ast.Dict):
            found += [
                c
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and k.value in STATE_NAMES
                for c in _strings(v)
            ]
        elif isinstance(node, ast.Assign):
            found += _assigned(node.targets, node.value)
        elif isinstance(node, ast.AnnAssign):
            found += _assigned([node.target], node.value)
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_holds_state(o) for o in operands):
                found += [c for o in operands for c in _strings(o)]
    return found


def unknown_state_words(source: str) -> list[tuple[int, str]]:
    return sorted({(c.lineno, str(c.value)) for c in state_literals(source) if c.value not in VOCABULARY})


def test_every_state_word_is_one_of_the_vocabularies() -> None:
    """No module that writes or judges supervision states spells a state outside ``states.py``."""
    assert len(SCOPE) > 40  # the walk found the supervisor's modules
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {word!r}"
        for path in SCOPE
        for line, word in unknown_state_words(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "add the word to a vocabulary of shared/states.py (or fix it):\n" + "\n".join(offenders)


def test_the_rule_reads_each_place_a_state_is_spelled() -> None:
    source = """
health.update(state="redy")
doc = {"state": "runing", "phase": "strating"}
slot.state, slot.reason = "bakoff", "why"
role_state = "stail"
if entry.get("state") == "fatl": pass
if record["state"] in ("eror", "ready"): pass
_PROBLEM_STATES = frozenset({"degarded"})
other = "free text"
doc = {"status": "anything"}
"""
    assert [word for _, word in unknown_state_words(source)] == [
        "redy",
        "runing",
        "strating",
        "bakoff",
        "stail",
        "fatl",
        "eror",
        "degarded",
    ]
