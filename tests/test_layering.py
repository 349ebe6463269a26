"""The folders import one way only: supervisor -> workers -> shared (design.md, the map), and
inside workers/: roles -> agents -> kit -> shared, roles reaching agents only through the registry.

``shared/`` is the floor every process stands on (the hook path included), ``workers/`` holds the
role processes and ``supervisor/`` supervision and the commands a user types. An import against
that direction is how a folder starts to lie about what it holds (the maintenance role once
imported the supervisor's health module), so every import of every module is read here with
``ast``: function-level and ``TYPE_CHECKING`` imports count too. ``tools/`` (the generators of
checked-in files) is never imported at run time.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import donebell.shared
import donebell.supervisor
import donebell.workers
from donebell.workers.agents.registry import names

#: Which top-level folders each folder may import from (besides itself).
MAY_IMPORT = {
    "shared": set(),
    "workers": {"shared"},
    "supervisor": {"workers", "shared"},
}
#: Named exceptions: (importing module, imported module) -> why.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def module_name(folder: str, path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("donebell", folder, *parts))


def imported_names(source: str) -> set[str]:
    """Every module name an ``import`` or ``from ... import`` statement in ``source`` names."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def violations(folder: str, module: str, source: str) -> list[str]:
    """The imports of one module against the allowed direction, as ``module -> imported`` lines."""
    found = []
    for name in sorted(imported_names(source)):
        parts = name.split(".")
        if parts[0] == "tools":
            found.append(f"{module} -> {name} (a dev tool)")
            continue
        if parts[0] != "donebell" or len(parts) < 2 or parts[1] == folder:
            continue
        if parts[1] not in MAY_IMPORT[folder] and (module, name) not in EXCEPTIONS:
            found.append(f"{module} -> {name}")
    return found


def all_modules() -> list[tuple[str, str, str]]:
    modules = []
    for package in (donebell.shared, donebell.workers, donebell.supervisor):
        folder = package.__name__.rsplit(".", 1)[1]
        root = Path(list(package.__path__)[0])
        for path in sorted(root.rglob("*.py")):
            modules.append((folder, module_name(folder, path, root), path.read_text(encoding="utf-8")))
    return modules


def test_imports_point_only_downward() -> None:
    """No module of shared/ imports workers/ or supervisor/, and no module of workers/ imports supervisor/."""
    modules = all_modules()
    assert len(modules) > 100  # the walk really found the code
    bad = [line for folder, module, source in modules for line in violations(folder, module, source)]
    assert not bad, "imports against supervisor -> workers -> shared:\n" + "\n".join(bad)


def test_every_named_exception_is_still_needed() -> None:
    """An exception whose import is gone is removed from the list, so the list stays the truth."""
    imports = {module: imported_names(source) for _folder, module, source in all_modules()}
    stale = [pair for pair in EXCEPTIONS if pair[1] not in imports.get(pair[0], set())]
    assert not stale


def test_the_check_sees_upward_and_hidden_imports() -> None:
    """A function-level, a TYPE_CHECKING and a from-import against the direction are all caught."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from donebell.supervisor import health\n"
        "def f():\n    import donebell.workers.role\n"
        "from donebell.shared import keys\n"
        "import tools.generated\n"
    )
    assert violations("shared", "donebell.shared.x", source) == [
        "donebell.shared.x -> donebell.supervisor",
        "donebell.shared.x -> donebell.workers.role",
        "donebell.shared.x -> tools.generated (a dev tool)",
    ]
    assert violations("workers", "donebell.workers.x", source) == [
        "donebell.workers.x -> donebell.supervisor",
        "donebell.workers.x -> tools.generated (a dev tool)",
    ]
    assert violations("supervisor", "donebell.supervisor.x", source) == [
        "donebell.supervisor.x -> tools.generated (a dev tool)"
    ]


#: The role folders: agent-neutral, they reach an agent through ``workers/agents/registry.py``.
ROLES = ("hooks", "scanners", "gate", "delivery", "maintenance", "wake")
#: The agent folders no role may import by name: every package under ``workers/agents/``.
AGENT_FOLDERS = tuple(
    f"donebell.workers.agents.{path.parent.name}"
    for path in sorted((Path(list(donebell.workers.__path__)[0]) / "agents").glob("*/__init__.py"))
)
#: Named exceptions: (role module, agent module) -> why it still imports the agent by name.
ROLE_AGENT_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("donebell.workers.scanners.remote_scan_child", "donebell.workers.agents.codex.scan_engine"): (
        "a watch root is a Codex home: the remote scanner exists for Codex only"
    ),
    ("donebell.workers.scanners.remote_root_summary", "donebell.workers.agents.codex.rollout_files"): (
        "the remote quick check stats Codex's hot folders (remote roots are Codex homes)"
    ),
}


def role_agent_imports(module: str, source: str) -> list[str]:
    """A role module's imports of an agent folder by name, as ``module -> imported`` lines."""
    found = []
    for name in sorted(imported_names(source)):
        if any(name == folder or name.startswith(folder + ".") for folder in AGENT_FOLDERS):
            if (module, name) not in ROLE_AGENT_EXCEPTIONS:
                found.append(f"{module} -> {name}")
    return found


def role_modules() -> dict[str, str]:
    """Every module that must reach agents through the registry: the roles, the kit, the
    workers' shared modules and the supervisor (its install and doctor name no agent)."""
    prefixes = (*(f"donebell.workers.{role}" for role in (*ROLES, "kit")), "donebell.supervisor")
    return {
        module: source
        for _folder, module, source in all_modules()
        if any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)
    }


def test_roles_reach_agents_only_through_the_registry() -> None:
    """No module of hooks/, scanners/, gate/, delivery/, maintenance/, wake/, kit/ or supervisor/
    imports an agent's folder by name (issues 25, 35): they ask ``workers.agents.registry`` for the
    record's agent (``installer`` for install and doctor), so a new agent is one folder and one line."""
    modules = role_modules()
    assert len(modules) > 100  # the walk really found the roles and the supervisor
    bad = [line for module, source in modules.items() for line in role_agent_imports(module, source)]
    assert not bad, "roles importing an agent folder by name:\n" + "\n".join(bad)
    imports = {module: imported_names(source) for module, source in modules.items()}
    stale = [pair for pair in ROLE_AGENT_EXCEPTIONS if pair[1] not in imports.get(pair[0], set())]
    assert not stale, f"exceptions no longer needed: {stale}"


def test_the_role_check_sees_a_hidden_agent_import() -> None:
    """A function-level import of an agent's part, or of its package, is caught; the registry is not."""
    source = (
        "def f():\n    from donebell.workers.agents.codex.gate import evaluate\n"
        "import donebell.workers.agents.claude\n"
        "from donebell.workers.agents.registry import agent\n"
    )
    assert role_agent_imports("donebell.workers.gate.x", source) == [
        "donebell.workers.gate.x -> donebell.workers.agents.claude",
        "donebell.workers.gate.x -> donebell.workers.agents.codex.gate",
    ]


#: Import circles allowed to stay: none (issue 25). A circle is two modules that each need the
#: other to load, which makes either one's import order, and so its start-up, depend on the other.
#: Role modules that may still name an agent in a string literal, each with its reason.
ROLE_AGENT_LITERALS: dict[str, str] = {
    "workers/scanners/remote_root_summary.py": "the remote scanner: a watch root is a Codex home (see above)",
}
REPO = Path(__file__).resolve().parents[1]
_AGENT_LITERAL = re.compile("[\"'](" + "|".join(map(re.escape, names())) + ")[\"']")  # every registered agent


def test_roles_name_no_agent_in_their_logic() -> None:
    """No module outside ``workers/agents/`` (roles, the kit, install and doctor) decides by an
    agent's name (``provider == "claude"``, a per-agent table): it asks the record's agent through
    the registry (issues 25, 35)."""
    found = []
    paths = [*(REPO / "workers").rglob("*.py"), *(REPO / "supervisor" / "install").rglob("*.py")]
    paths += (REPO / "supervisor" / "doctor").rglob("*.py")
    for path in sorted(paths):
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith("workers/agents/") or rel in ROLE_AGENT_LITERALS:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _AGENT_LITERAL.search(line):
                found.append(f"{rel}:{number}: {line.strip()}")
    assert found == [], "\n".join(found)
    stale = [rel for rel in ROLE_AGENT_LITERALS if not _AGENT_LITERAL.search((REPO / rel).read_text(encoding="utf-8"))]
    assert stale == [], f"exceptions no longer needed: {stale}"


ALLOWED_CIRCLES: list[set[str]] = []


def import_graph(modules: dict[str, str]) -> dict[str, set[str]]:
    """module -> the project modules it imports (``from p import m`` counts as importing ``p.m``).

    A package's ``__init__`` importing one of its own parts is left out: that is how a package
    exposes its parts (``statedir`` loads ``_roles`` on first use), and the parts importing the
    package's shared names is the one direction that remains.
    """
    graph: dict[str, set[str]] = {}
    for module, source in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    child = f"{node.module}.{alias.name}"
                    found.add(child if child in modules else node.module)
        graph[module] = {
            name for name in found if name in modules and name != module and not name.startswith(module + ".")
        }
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.add(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(group)
    return found


def test_no_import_circles() -> None:
    """No two modules need each other, TYPE_CHECKING and function-level imports included."""
    graph = import_graph({module: source for _folder, module, source in all_modules()})
    found = [sorted(group) for group in circles(graph) if group not in ALLOWED_CIRCLES]
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(group) for group in found)


def test_the_circle_check_sees_a_hidden_circle() -> None:
    """A TYPE_CHECKING import closing a loop of three is a circle; a package loading its part is not."""
    modules = {
        "donebell.a": "from donebell.b import x\n",
        "donebell.b": "def f():\n    import donebell.c\n",
        "donebell.c": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from donebell import a\n",
        "donebell.p": "def f():\n    from donebell.p import part\n",
        "donebell.p.part": "from donebell.p import NAME\n",
    }
    assert circles(import_graph(modules)) == [{"donebell.a", "donebell.b", "donebell.c"}]
