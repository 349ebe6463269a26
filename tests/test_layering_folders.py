"""Between folders, one direction (issue 35): roles -> agents -> kit -> shared, no folder circles.

The import reading (``ast``: function-level and ``TYPE_CHECKING`` imports count) and the circle
search are ``test_layering.py``'s; this file applies them to folders: the kit below agents and
roles, an agent folder importing only the kit and ``shared/``, nobody importing the delivery role,
and no two folders (sub-folders of ``workers/``, ``supervisor/`` and ``shared/`` included) needing
each other.
"""

from __future__ import annotations

from pathlib import Path

import donebell.shared
import donebell.supervisor
import donebell.workers
from test_layering import AGENT_FOLDERS, all_modules, circles, import_graph, imported_names, module_name

#: What a module of an agent folder may import besides its own folder: the kit, ``shared/`` and
#: the agents' package's own modules (the protocols, the turn-status contract). Never a role, never
#: another agent, never the supervisor.
AGENT_MAY_IMPORT = ("donebell.shared", "donebell.workers.kit", "donebell.workers.agents")


def _is_under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _agent_folder(module: str) -> str | None:
    return next((folder for folder in AGENT_FOLDERS if _is_under(module, folder)), None)


def agent_imports_against_the_layers(module: str, source: str) -> list[str]:
    """An agent module's imports of a role, another agent, ``workers/`` loose modules or the supervisor."""
    own = _agent_folder(module)
    found = []
    for name in sorted(imported_names(source)):
        if not name.startswith("donebell.") or (own is not None and _is_under(name, own)):
            continue
        other_agent = _agent_folder(name)
        allowed = other_agent is None and any(_is_under(name, prefix) for prefix in AGENT_MAY_IMPORT)
        if not allowed or name in ("donebell.workers", "donebell.workers.agents.registry"):
            found.append(f"{module} -> {name}")
    return found


def test_agents_import_only_the_kit_and_shared() -> None:
    """An agent folder stands on the kit and ``shared/``: no module of it imports a role (gate,
    hooks, scanners, wake, delivery, maintenance, ``workers/role.py``), another agent, the registry
    or the supervisor, function-level and TYPE_CHECKING imports included."""
    modules = {m: s for _f, m, s in all_modules() if _agent_folder(m) is not None}
    assert len(modules) > 50  # the walk really found both agents
    bad = [line for module, source in modules.items() for line in agent_imports_against_the_layers(module, source)]
    assert not bad, "agent modules importing above the kit:\n" + "\n".join(bad)


def test_the_agent_check_sees_a_role_import() -> None:
    source = (
        "def f():\n    from donebell.workers.gate.commit import apply\n"
        "from donebell.workers.kit.verdict import Verdict\n"
        "from donebell.workers.agents.protocols import Agent\n"
        "import donebell.workers.agents.claude.tail\n"
        "from donebell.workers.role import Role\n"
    )
    assert agent_imports_against_the_layers("donebell.workers.agents.codex.x", source) == [
        "donebell.workers.agents.codex.x -> donebell.workers.agents.claude.tail",
        "donebell.workers.agents.codex.x -> donebell.workers.gate.commit",
        "donebell.workers.agents.codex.x -> donebell.workers.role",
    ]


def kit_imports_against_the_layers(module: str, source: str) -> list[str]:
    found = []
    for name in sorted(imported_names(source)):
        if name.startswith("donebell.") and not any(
            _is_under(name, prefix) for prefix in ("donebell.shared", "donebell.workers.kit")
        ):
            found.append(f"{module} -> {name}")
    return found


def test_the_kit_imports_only_shared() -> None:
    """``workers/kit/`` is below agents and roles: it imports ``shared/`` and itself, nothing else."""
    modules = {m: s for _f, m, s in all_modules() if _is_under(m, "donebell.workers.kit")}
    assert len(modules) > 15
    bad = [line for module, source in modules.items() for line in kit_imports_against_the_layers(module, source)]
    assert not bad, "kit modules importing above the kit:\n" + "\n".join(bad)


def test_nobody_imports_the_delivery_role_from_outside() -> None:
    """The delivery role is reached by name through ``workers/role.py``'s table only: the ntfy
    transport is ``shared/ntfy/``, the answered-evidence is the kit's."""
    inside = "donebell.workers.delivery"
    bad = [
        f"{module} -> {name}"
        for _folder, module, source in all_modules()
        if not _is_under(module, inside)
        for name in sorted(imported_names(source))
        if _is_under(name, inside)
    ]
    assert not bad, "imports of the delivery role from outside it:\n" + "\n".join(bad)


def folder_of(module: str, packages: set[str]) -> str:
    """The folder (package) a module belongs to; a module loose in ``shared/``, ``workers/`` or
    ``supervisor/`` is its own unit (those three are the top layers, checked above)."""
    if module in packages and module.count(".") >= 2:
        return module
    parent = module.rsplit(".", 1)[0]
    return parent if parent.count(".") >= 2 else module


def folder_graph(modules: dict[str, str], packages: set[str]) -> dict[str, set[str]]:
    """folder -> the folders its modules import. A folder loading one of its own sub-folders (the
    registry loading an agent, a package's ``__init__`` its parts) is left out, as for modules."""
    graph: dict[str, set[str]] = {}
    for module, imports in import_graph(modules).items():
        source = folder_of(module, packages)
        targets = graph.setdefault(source, set())
        for name in imports:
            target = folder_of(name, packages)
            if target != source and not target.startswith(source + "."):
                targets.add(target)
    for targets in list(graph.values()):
        for target in targets:
            graph.setdefault(target, set())
    return graph


def _packages(modules: list[tuple[str, str, str]]) -> set[str]:
    found: set[str] = set()
    for package in (donebell.shared, donebell.workers, donebell.supervisor):
        folder = package.__name__.rsplit(".", 1)[1]
        root = Path(list(package.__path__)[0])
        found.update(module_name(folder, p, root) for p in root.rglob("__init__.py"))
    return found


def test_no_circles_between_folders() -> None:
    """No two folders (sub-folders of ``workers/``, ``supervisor/`` and ``shared/`` included) need
    each other: the seven ``workers/`` folders were one circle, and ``supervisor/{commands,doctor,
    install}`` and ``shared/{config,text}`` were circles, before issue 35."""
    modules = all_modules()
    graph = folder_graph({m: s for _f, m, s in modules}, _packages(modules))
    assert {"donebell.workers.kit", "donebell.workers.gate", "donebell.supervisor.doctor"} <= set(graph)
    found = [sorted(group) for group in circles(graph)]
    assert not found, "folder circles:\n" + "\n".join(" <-> ".join(group) for group in found)


def test_the_folder_check_sees_a_circle() -> None:
    """Two role folders importing each other through one module each are a circle; a package
    loading its own part, or a loose module of ``workers/``, is not."""
    modules = {
        "donebell.workers.gate.a": "from donebell.workers.wake import b\n",
        "donebell.workers.wake.b": "def f():\n    import donebell.workers.gate.a\n",
        "donebell.workers.agents.registry": "def f():\n    import donebell.workers.agents.toy.gate\n",
        "donebell.workers.agents.toy.gate": "from donebell.workers.agents.protocols import X\n",
        "donebell.workers.agents.protocols": "",
    }
    packages = {
        "donebell.workers.gate",
        "donebell.workers.wake",
        "donebell.workers.agents",
        "donebell.workers.agents.toy",
    }
    graph = folder_graph(modules, packages)
    assert circles(graph) == [{"donebell.workers.gate", "donebell.workers.wake"}]
