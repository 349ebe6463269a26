"""Queue folder names are spelled once (issue 35), in the state-directory package, as Postfix names
its queues once (``MAIL_QUEUE_*``): code outside ``shared/statedir/`` writes ``PENDING``, never
``"pending"``, where a folder is meant.

"Where a folder is meant" is read with ``ast``, narrowly, so that the same words used as something
else (a receipt's ``status="sent"``, the provider ``"claude"``, the role ``"wake"``, a key of
``status --json``) stay free. A string literal equal to a queue folder name is flagged when it is

* a folder argument of a :class:`StateDir` method (``read``, ``create``, ``finish``, ``path``, ...:
  :data:`FOLDER_ARGS`), positional or by keyword;
* the argument right after the state directory in a helper's call: ``_records(state, "outbox", 5)``
  (an argument whose name contains ``state``);
* a path joined onto the state directory (``state.root / "dead"``);
* compared with a folder: ``state.locate(key) == "pending"``, ``folder in ("sent", "dead")``,
  ``item["folder"] == "outbox"`` (an operand named ``folder``, ``where`` or ``*_folder``);
* bound to a name meant as a folder: ``FOLDER = "claude"``, ``cursor_folder="watch/local"``,
  ``for folder in ("pending", "outbox")`` (a target or keyword whose name contains ``folder``).
"""

from __future__ import annotations

import ast
from pathlib import Path

from donebell.shared.statedir import _base

ROOT = Path(__file__).resolve().parents[1]
PRODUCTION = ("shared", "workers", "supervisor")
#: The package that defines the names (and the only place that may spell them).
OWNER = ROOT / "shared" / "statedir"

#: Every queue folder name the package defines.
QUEUE_NAMES = frozenset(
    {
        _base.PENDING,
        _base.OUTBOX,
        _base.SENT,
        _base.SUPPRESSED,
        _base.DEAD,
        _base.WATCH,
        _base.WATCH_LOCAL,
        _base.WATCH_REMOTE,
        _base.WATCH_CLAUDE,
        _base.CLAUDE,
        _base.HEALTH,
        _base.LOCKS,
        _base.TMP,
        _base.MUTATION_LOCKS,
        _base.WAKE,
        _base.WAKE_REPLIES,
        _base.WAKE_CLAIMS,
        _base.WAKE_ANSWERS,
        _base.WAKE_SPAWN,
    }
)

#: StateDir methods -> (how many leading positional arguments are folders, the fewest positional
#: arguments the StateDir method is called with). The arity keeps ``list.remove("claude")`` out
#: (StateDir's takes a key too); ``None``: every argument is a path part (``path``).
FOLDER_ARGS: dict[str, tuple[int | None, int]] = {
    "create": (1, 2),
    "replace": (1, 2),
    "read": (1, 2),
    "exists": (1, 2),
    "remove": (1, 2),
    "record_path": (1, 2),
    "changed_since": (1, 2),
    "expire": (1, 2),
    "dead_letter_invalid": (1, 3),
    "move": (2, 3),
    "finish": (2, 3),
    "keys": (1, 1),
    "stamped_keys": (1, 1),
    "listing": (1, 1),
    "count": (1, 1),
    "sync_folder": (1, 1),
    "folder": (1, 1),
    "ensure_folder": (1, 1),
    "group_commit": (1, 1),
    "path": (None, 1),
}
#: Keyword arguments of those methods that take a folder.
FOLDER_KEYWORDS = frozenset({"folder", "src", "dst", "receipt_folder"})
#: Methods ``str`` has too, with the same arity (``text.count("dead")``, ``s.replace("sent", x)``):
#: a folder argument only when called on something named ``*state*``.
STR_METHODS = frozenset({"count", "replace"})


def _literals(node: ast.AST) -> list[ast.Constant]:
    """The string constants ``node`` spells as a value: itself, a tuple/list/set of them, either
    branch of ``a if c else b``, or the argument of ``frozenset(...)`` / ``set(...)`` / ``tuple(...)``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [c for e in node.elts for c in _literals(e)]
    if isinstance(node, ast.IfExp):
        return _literals(node.body) + _literals(node.orelse)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set", "tuple"):
        return [c for a in node.args for c in _literals(a)]
    return []


def _name_of(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    return ""


def _means_folder(name: str) -> bool:
    return "folder" in name.lower()


def _is_state(node: ast.AST) -> bool:
    """``state``, ``self.state``, ``ctx.state``, ``self._state``: the state directory, by name."""
    return "state" in _name_of(node).lower()


def _is_folder_operand(node: ast.AST) -> bool:
    """A comparison operand that holds a folder name: ``x.locate(key)``, ``folder``, ``where``,
    ``item["folder"]``, ``self.cursor_folder``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "locate":
        return True
    name = _name_of(node)
    return name == "where" or _means_folder(name)


def _folder_literals(node: ast.AST) -> list[ast.Constant]:
    """The literals of ``node`` (one AST node) that stand where a folder is meant."""
    found: list[ast.Constant] = []
    method = node.func if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) else None
    if isinstance(node, ast.Call) and method is not None and method.attr in FOLDER_ARGS:
        leading, fewest = FOLDER_ARGS[method.attr]
        if len(node.args) >= fewest and (method.attr not in STR_METHODS or _is_state(method.value)):
            args = node.args if leading is None else node.args[:leading]
            found += [c for a in args for c in _literals(a)]
        found += [c for k in node.keywords if k.arg in FOLDER_KEYWORDS for c in _literals(k.value)]
    if isinstance(node, ast.Call):
        found += [c for k in node.keywords if k.arg and _means_folder(k.arg) for c in _literals(k.value)]
        found += [c for a, b in zip(node.args, node.args[1:], strict=False) if _is_state(a) for c in _literals(b)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and _name_of(node.left) in ("root", "root_dir"):
        found += _literals(node.right)
    if isinstance(node, ast.Compare):
        operands = [node.left, *node.comparators]
        if any(_is_folder_operand(o) for o in operands):
            found += [c for o in operands for c in _literals(o)]
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if node.value is not None and any(_means_folder(_name_of(t)) for t in targets):
            found += _literals(node.value)
    if isinstance(node, ast.For) and _means_folder(_name_of(node.target)):
        found += _literals(node.iter)
    return [c for c in found if c.value in QUEUE_NAMES]


def spelled_queue_names(source: str) -> list[tuple[int, str]]:
    """``(line, name)`` of each queue folder name spelled as a literal where a folder is meant."""
    return sorted({(c.lineno, str(c.value)) for node in ast.walk(ast.parse(source)) for c in _folder_literals(node)})


def test_production_code_names_queue_folders_by_their_constants() -> None:
    """No module outside ``shared/statedir/`` spells a queue folder's name where a folder is meant."""
    offenders = []
    for folder in PRODUCTION:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.is_relative_to(OWNER):
                continue
            for line, name in spelled_queue_names(path.read_text(encoding="utf-8")):
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {name!r}")
    assert offenders == [], "write the statedir constant (PENDING, OUTBOX, ...) instead:\n" + "\n".join(offenders)


def test_the_rule_sees_each_form_of_a_folder() -> None:
    source = """
state.read("pending", key)
state.finish("outbox", "sent", receipt)
state.path("wake", "answers")
state.keys("claude")
state.dead_letter_invalid(folder="outbox", name=n, reason=r)
state.root / "dead"
if state.locate(key) == "pending": pass
if where in ("sent", "dead"): pass
if item["folder"] == "suppressed": pass
INDEX_FOLDER = "watch/claude"
folder = "sent" if ok else "dead"
Scan(cursor_folder="watch/local")
for folder in ("pending", "outbox"): pass
SERVICE_FOLDERS = frozenset({"health", "locks"})
_records(ctx.state, "sent", 5)
state.replace("outbox", record)
"""
    assert [name for _, name in spelled_queue_names(source)] == [
        "pending",
        "outbox",
        "sent",
        "wake",
        "claude",
        "outbox",
        "dead",
        "pending",
        "dead",
        "sent",
        "suppressed",
        "watch/claude",
        "dead",
        "sent",
        "watch/local",
        "outbox",
        "pending",
        "health",
        "locks",
        "sent",
        "outbox",
    ]


def test_the_rule_leaves_the_same_words_used_as_something_else() -> None:
    """A receipt status, a provider, a role, a JSON key and a one-argument list or str method are no folders."""
    source = """
new_receipt(record, status="suppressed", reason="sent")
event_key("claude", session_id, prompt_id)
state.read_health("wake")
queue = {"pending": n, "dead": m}
names.remove("claude")
text.count("dead")
line.replace("sent", "delivered")
event_key(state_of(x), "claude")
if decision.verdict == "sent": pass
if status in ("sent", "dead"): pass
state.read(PENDING, key)
"""
    assert spelled_queue_names(source) == []
