"""Rewrite the old module paths of issue 35 (the house step) to the new ones, in any checkout.

``python tools/house_moves.py [ROOT]`` (default: the current directory) rewrites, in every
``.py``, ``.md``, ``.toml``, ``.cfg``, ``.txt``, ``.json`` and ``.sh`` file under ROOT (``.git``
and virtual environments skipped):

* dotted module paths (``donebell.workers.hooks.context`` -> ``donebell.workers.kit.hook_context``),
  wherever they stand: imports, ``monkeypatch`` targets, strings, docs;
* ``from donebell.<package> import <module>`` of a moved module (aliased when the name changed,
  so the code that uses the name stays as it is);
* names that moved between modules (:data:`NAME_MOVES`): ``from old import Name`` is split so
  each name comes from where it now lives;
* file paths (``workers/hooks/context.py``, also without the top folder: ``hooks/context.py``).

It is idempotent: a tree already rewritten is left as it is. It prints each file it changed.
Branches written against the old layout are merged by running it on the branch, committing,
then merging (or: merge, then run it on the result and commit the fix-up).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

#: old module -> new module (every module of the tree that moved; packages too).
MODULE_MOVES: dict[str, str] = {
    # the kit: role-neutral pieces agents and roles share (imports shared/ only)
    "donebell.workers.hooks.context": "donebell.workers.kit.hook_context",
    "donebell.workers.hooks.stdin": "donebell.workers.kit.hook_context",
    "donebell.workers.hooks.needs_you": "donebell.workers.kit.needs_you",
    "donebell.workers.hooks.approval_wait": "donebell.workers.kit.approval_wait",
    "donebell.workers.hooks.kick": "donebell.workers.hooks",
    "donebell.workers.delivery.policies.needs_answered": "donebell.workers.kit.needs_answered",
    "donebell.workers.gate.context": "donebell.workers.kit.gate_context",
    "donebell.workers.gate.verdict": "donebell.workers.kit.verdict",
    "donebell.workers.gate.ladder": "donebell.workers.kit.ladder",
    "donebell.workers.gate.probe_schedule": "donebell.workers.kit.probe_schedule",
    "donebell.workers.gate.weak_merge": "donebell.workers.kit.weak_merge",
    "donebell.workers.scanners.rollout_tail": "donebell.workers.kit.jsonl_tail",
    "donebell.workers.wake.thread_view": "donebell.workers.kit.thread_view",
    # Codex's previous notifier is Codex's business
    "donebell.workers.hooks.chain": "donebell.workers.agents.codex.chain_notify",
    # the ntfy transport, used by delivery, wake and the CLI
    "donebell.workers.delivery.ntfy_client": "donebell.shared.ntfy.client",
    "donebell.workers.delivery.proxy_policy": "donebell.shared.ntfy.proxy",
    "donebell.workers.delivery.publish_access": "donebell.shared.ntfy.access",
    "donebell.workers.delivery.retry_policy": "donebell.shared.ntfy.retry",
    "donebell.workers.delivery.refusal_reason": "donebell.shared.ntfy.refusal",
    "donebell.workers.delivery.attempt_deadline": "donebell.shared.ntfy.deadline",
    "donebell.workers.wake.subscription": "donebell.shared.ntfy.subscribe",
    # shared/config <-> shared/text was a circle: the secret rules are the configuration's
    "donebell.shared.text.secret_text": "donebell.shared.config.secret_text",
    # the command runner install, doctor and the agents' version checks share
    "donebell.supervisor.runner": "donebell.shared.process.runner",
    # install and doctor: the agent-neutral tools into the kit, each agent's wiring into its folder
    "donebell.supervisor.install.edits": "donebell.workers.kit.install.edits",
    "donebell.supervisor.install.jsonedit": "donebell.workers.kit.install.jsonedit",
    "donebell.supervisor.install.hookjson": "donebell.workers.kit.install.hookjson",
    "donebell.supervisor.install.plans": "donebell.workers.kit.install.plans",
    "donebell.supervisor.install.tidy": "donebell.workers.kit.install.tidy",
    "donebell.supervisor.install.managed": "donebell.workers.kit.install.managed",
    "donebell.supervisor.install.codex": "donebell.workers.agents.codex.install",
    "donebell.supervisor.install.claude": "donebell.workers.agents.claude.install",
    "donebell.supervisor.install.trust_hash": "donebell.workers.agents.codex.trust_hash",
    "donebell.supervisor.install.chain_check": "donebell.workers.agents.codex.chain_check",
    "donebell.supervisor.doctor.chain_notify": "donebell.workers.agents.codex.doctor",
    # status and doctor both use these; doctor stands on the commands (supervisor/{commands,doctor,install}
    # were a circle)
    "donebell.supervisor.doctor.agent_versions": "donebell.supervisor.commands.agent_versions",
    "donebell.supervisor.doctor.no_service": "donebell.supervisor.commands.no_service",
    # the inotify / stat-poll waker of the role loop is not "wake" (reply to continue, workers/wake/)
    "donebell.shared.wake": "donebell.shared.waker",
    # plain-text rules every card uses (delivery, the wake role's notices)
    "donebell.workers.delivery.markdown_text": "donebell.shared.text.markdown_text",
    # an agent is the AGENT its package declares (item 5): the forwarding modules are gone
    "donebell.workers.agents.codex.agent": "donebell.workers.agents.codex",
    "donebell.workers.agents.claude.agent": "donebell.workers.agents.claude",
    "donebell.workers.agents.copilot.agent": "donebell.workers.agents.copilot",
    # the hook path's module count (issue 35: it may not grow): a platform choice's implementation
    # lives in the one module whose job it is, and the hook's input is part of its context
    "donebell.workers.kit.hook_input": "donebell.workers.kit.hook_context",
    "donebell.shared.platform.identity": "donebell.shared.process.liveness",
    "donebell.shared.platform.locations": "donebell.shared.paths",
    "donebell.shared.config.raw_file": "donebell.shared.config.schema",
}

#: (old module, name) -> new module: a name that moved out of a module that stays.
NAME_MOVES: dict[tuple[str, str], str] = {
    # how a machine and a time span read on a card: no one outside delivery imports delivery
    **{
        ("donebell.workers.delivery.payload", name): "donebell.workers.kit.labels"
        for name in ("origin_label", "format_duration", "short_host_name")
    },
    # the ntfy server's clock is the transport's knowledge
    **{
        ("donebell.workers.wake.machines", name): "donebell.shared.ntfy.server_clock"
        for name in ("ServerClock", "SERVER_NOW", "tap_age")
    },
    # an agent's home is the agent's business: its package says where it lives
    ("donebell.shared.paths", "codex_home"): "donebell.workers.agents.codex",
    ("donebell.shared.paths", "codex_home_str"): "donebell.workers.agents.codex",
    ("donebell.shared.paths", "codex_sqlite_home"): "donebell.workers.agents.codex",
    ("donebell.shared.paths", "codex_sqlite_home_str"): "donebell.workers.agents.codex",
    ("donebell.shared.paths", "claude_config_dir"): "donebell.workers.agents.claude",
    ("donebell.shared.paths", "claude_config_dir_str"): "donebell.workers.agents.claude",
    # what donebell writes into each agent's files, and the doctor's per-agent checks
    **{
        ("donebell.supervisor.install.managed", name): "donebell.workers.agents.codex.managed"
        for name in (
            "CODEX_STOP_ARGS",
            "CODEX_PERMISSION_ARGS",
            "CODEX_NOTIFY_ARGS",
            "CODEX_HOOK_LABEL",
            "CODEX_PERMISSION_LABEL",
            "codex_stop_group",
            "codex_permission_group",
            "codex_notify",
        )
    },
    **{
        ("donebell.supervisor.install.managed", name): "donebell.workers.agents.claude.install"
        for name in ("CLAUDE_ARGS", "CLAUDE_EVENTS", "claude_group")
    },
    **{
        ("donebell.supervisor.doctor.local", name): "donebell.workers.kit.install.checks"
        for name in ("Check", "OK", "WARN", "FAIL", "UNKNOWN", "SKIP")
    },
    ("donebell.supervisor.doctor.local", "check_codex"): "donebell.workers.agents.codex.doctor",
    ("donebell.supervisor.doctor.local", "check_codex_trust"): "donebell.workers.agents.codex.doctor",
    ("donebell.supervisor.doctor.local", "check_claude"): "donebell.workers.agents.claude.doctor",
    ("donebell.supervisor.install.own_config", "KEEP"): "donebell.workers.kit.install.plans",
    ("donebell.supervisor.doctor.agent_versions", "parse_version"): "donebell.workers.kit.install.checks",
    ("donebell.workers.role", "PassResult"): "donebell.workers.kit.pass_result",
    # the state vocabulary, in one module (health.py still re-exports these names)
    **{
        ("donebell.shared.health", name): "donebell.shared.states"
        for name in ("RoleState", "ROLE_NAMES", "READY_STATES", "FAILED_STATES", "RESTARTING_STATES")
    },
    ("donebell.workers.gate.commit", "first_seen"): "donebell.workers.kit.probe_schedule",
    ("donebell.workers.agents.claude.goal_status", "parse_record"): "donebell.shared.bounded_read",
}

#: module name used as ``<alias>.<name>`` -> (the module it names, the alias the new home gets):
#: ``paths.codex_home()`` after ``from donebell.shared import paths`` becomes
#: ``codex_folder.codex_home()`` with ``from donebell.workers.agents import codex as codex_folder``.
ATTRIBUTE_ALIASES: dict[str, str] = {
    "donebell.workers.agents.codex": "codex_folder",
    "donebell.workers.agents.claude": "claude_folder",
}

#: A name moved out of a module that itself moved is found under either of the module's names.
NAME_MOVES.update(
    {(MODULE_MOVES[old], name): new for (old, name), new in list(NAME_MOVES.items()) if old in MODULE_MOVES}
)

SUFFIXES = (".py", ".md", ".toml", ".cfg", ".txt", ".json", ".sh", ".yml", ".yaml", ".ini", ".rst")
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", "build", "dist"}
#: Files that name the old paths on purpose (this tool, and the tests of it and of stale doc paths).
KEEP_AS_IS = ("tools/house_moves.py", "tests/test_house_moves.py", "tests/test_docs_paths.py", "CHANGELOG.md")


def _path_of(module: str, package: bool = False) -> str:
    parts = module.split(".")[1:]
    return "/".join(parts) + ("/__init__.py" if package else ".py")


def _packages() -> set[str]:
    """New targets that are packages (their file is ``__init__.py``)."""
    return {"donebell.workers.hooks", *(f"donebell.workers.agents.{name}" for name in ("codex", "claude", "copilot"))}


def _dotted_pattern() -> re.Pattern[str]:
    names = sorted(MODULE_MOVES, key=len, reverse=True)
    return re.compile(r"(?<![\w.])(" + "|".join(re.escape(n) for n in names) + r")(?![\w])")


def _path_pattern() -> tuple[re.Pattern[str], dict[str, str]]:
    table: dict[str, str] = {}
    for old, new in MODULE_MOVES.items():
        old_path, new_path = _path_of(old), _path_of(new, new in _packages())
        table[old_path] = new_path
        short_old, short_new = old_path.split("/", 1)[1], new_path.split("/", 1)[1]
        if old_path.split("/")[0] == new_path.split("/")[0]:
            table[short_old] = short_new
    names = sorted(table, key=len, reverse=True)
    return re.compile(r"(?<![\w./])(" + "|".join(re.escape(n) for n in names) + r")(?![\w])"), table


_FROM_IMPORT = re.compile(
    r"^(?P<indent>[ \t]*)from (?P<module>donebell(?:\.\w+)*) import (?P<names>\([^)]*\)|[^\n]*?)(?P<comment>[ \t]*#[^\n]*)?$",
    re.MULTILINE,
)


def _split_names(raw: str) -> list[tuple[str, str | None]]:
    inner = raw.strip()
    if inner.startswith("("):
        inner = inner[1:-1]
    inner = re.sub(r"#[^\n]*", "", inner)
    found: list[tuple[str, str | None]] = []
    for item in inner.replace("\n", " ").split(","):
        words = item.split()
        if not words:
            continue
        found.append((words[0], words[2] if len(words) == 3 and words[1] == "as" else None))
    return found


def _render(indent: str, module: str, names: list[tuple[str, str | None]], comment: str) -> str:
    text = ", ".join(name if alias is None else f"{name} as {alias}" for name, alias in names)
    line = f"{indent}from {module} import {text}{comment}"
    if len(line) <= 120:
        return line
    body = "".join(f"{indent}    {n if a is None else f'{n} as {a}'},\n" for n, a in names)
    return f"{indent}from {module} import (\n{body}{indent}){comment}"


def _rewrite_from(match: re.Match[str]) -> str:
    """``from package import module`` of a moved module, and names moved between modules."""
    indent, module, comment = match["indent"], match["module"], match["comment"] or ""
    names = _split_names(match["names"])
    if not names or any(name == "*" for name, _ in names):
        return match.group(0)
    groups: dict[str, list[tuple[str, str | None]]] = {}
    changed = False
    for name, alias in names:
        target_module, target_name = module, name
        child = f"{module}.{name}"
        if child in MODULE_MOVES:
            new_child = MODULE_MOVES[child]
            target_module, target_name = new_child.rsplit(".", 1)
            changed = True
        elif (module, name) in NAME_MOVES:
            target_module = NAME_MOVES[(module, name)]
            changed = True
        if target_name != name and alias is None:
            alias = name
        if alias == target_name:
            alias = None
        groups.setdefault(target_module, []).append((target_name, alias))
    if not changed:
        return match.group(0)
    lines = [
        _render(indent, target, group, comment if i == 0 else "") for i, (target, group) in enumerate(groups.items())
    ]
    return "\n".join(lines)


def _rewrite_attributes(text: str) -> str:
    """``paths.codex_home()`` (``paths`` imported from ``donebell.shared``) -> the new home's alias."""
    for (old_module, name), new_module in NAME_MOVES.items():
        package, _, short = old_module.rpartition(".")
        importer = re.compile(rf"^([ \t]*)from {re.escape(package)} import {short}\b[^\n]*$", re.MULTILINE)
        use = re.compile(rf"(?<![\w.]){short}\.{name}\b")
        if new_module not in ATTRIBUTE_ALIASES or not use.search(text) or not importer.search(text):
            continue
        alias = ATTRIBUTE_ALIASES[new_module]
        text = use.sub(f"{alias}.{name}", text)
        parent, _, leaf = new_module.rpartition(".")
        line = f"from {parent} import {leaf} as {alias}"
        if line not in text:
            match = importer.search(text)
            assert match is not None
            text = text[: match.end()] + f"\n{match[1]}{line}" + text[match.end() :]
        if not re.search(rf"(?<![\w.]){short}\.", text):  # the old module is no longer used here
            text = importer.sub("", text, count=1).replace("\n\n\n\n", "\n\n\n")
    return text


def rewrite(text: str, python: bool) -> str:
    """``text`` with every old path made new (``python``: also rewrite ``from ... import`` forms)."""
    if python:
        text = _FROM_IMPORT.sub(_rewrite_from, text)
        text = _rewrite_attributes(text)
    text = _dotted_pattern().sub(lambda m: MODULE_MOVES[m.group(1)], text)
    pattern, table = _path_pattern()
    text = pattern.sub(lambda m: table[m.group(1)], text)
    return text


def files(root: Path) -> list[Path]:
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")]
        for name in names:
            if name.endswith(SUFFIXES):
                found.append(Path(folder) / name)
    return sorted(found)


def main(argv: list[str]) -> int:
    root = Path(argv[0] if argv else ".").resolve()
    for path in files(root):
        if path.relative_to(root).as_posix() in KEEP_AS_IS:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        new = rewrite(text, path.suffix == ".py")
        if new != text:
            path.write_text(new, encoding="utf-8")
            print(path.relative_to(root).as_posix())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
