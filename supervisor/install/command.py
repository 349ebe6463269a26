"""``donebell install`` and ``donebell uninstall``.

Both plan every file change first (agents' files, donebell's config and install record, the
service launcher), then either print the exact diffs (``--dry-run``) or apply them with a
timestamped backup of each edited user file. Writing order keeps the user's notify program
recoverable at every step: install writes ``chain_notify`` before it replaces ``notify``, uninstall
restores ``notify`` before it drops ``chain_notify``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, TextIO

from donebell.shared import paths
from donebell.shared.process.runner import Runner, SubprocessRunner
from donebell.shared.statedir import StateDir
from donebell.supervisor.install import service as install_service
from donebell.supervisor.install import service_manager, stop_running
from donebell.supervisor.install.all_or_nothing import (
    apply_all,
    apply_service,
    forget_install,
    install_all_or_nothing,
    remember_install,
)
from donebell.supervisor.install.own_config import current_chain, plan_config, plan_record, read_record
from donebell.supervisor.install.purge import PurgeRefused, config_backups, purge, remove_empty
from donebell.supervisor.install.service import SERVICES, ServicePlan
from donebell.supervisor.install.summary import print_install_summary
from donebell.workers.agents.protocols import Install
from donebell.workers.agents.registry import installer, names
from donebell.workers.kit.install.edits import EditError, FileChange
from donebell.workers.kit.install.managed import ExecutableNotFound, donebell_executable
from donebell.workers.kit.install.plans import KEEP, AgentPlan
from donebell.workers.kit.install.tidy import prune_backups


def _parser(command: str) -> argparse.ArgumentParser:
    what = "Wire" if command == "install" else "Unwire"
    parser = argparse.ArgumentParser(
        prog=f"donebell {command}",
        description=f"{what} the agents' hooks and the background service (default: every agent found).",
    )
    for name, agent in _installers():
        parser.add_argument(f"--{name}", action="store_true", help=agent.INSTALL_HELP)
    parser.add_argument("--service", choices=SERVICES, help="service manager (default: this platform's)")
    parser.add_argument("--dry-run", action="store_true", help="print the exact diff of each file; change nothing")
    if command == "uninstall":
        parser.add_argument("--purge", action="store_true", help="also delete donebell's state and config")
        parser.add_argument("--yes", action="store_true", help="do not ask before --purge deletes")
    return parser


def _installers() -> list[tuple[str, Install]]:
    """Every registered agent's wiring, in registration order."""
    found = []
    for name in names():
        agent = installer(name)
        if agent is not None:
            found.append((name, agent))
    return found


def _chosen(args: argparse.Namespace) -> list[tuple[str, Install]]:
    """The agents named by their ``--<name>`` flags (none: every agent)."""
    return [(name, agent) for name, agent in _installers() if getattr(args, name)]


def _agents(args: argparse.Namespace, runner: Runner) -> list[Install]:
    """Which agents to wire: the flags, else every agent whose home exists or whose CLI is on PATH."""
    chosen = _chosen(args)
    if chosen:
        return [agent for _name, agent in chosen]
    return [agent for _name, agent in _installers() if agent.present(runner)]


def _nothing_found() -> str:
    agents = _installers()
    who = _either([agent.DISPLAY_NAME for _name, agent in agents])
    flags = _either([f"--{name}" for name, _agent in agents])
    return f"donebell install: no {who} found; pass {flags} to wire one anyway\n"


def _either(words: list[str]) -> str:
    """``a, b or c`` (``a or b``; ``a``)."""
    return " or ".join([", ".join(words[:-1]), words[-1]]) if len(words) > 1 else "".join(words)


def _chain_of(plans: list[AgentPlan]) -> Any:
    """The ``chain_notify`` a plan sets or drops (an agent whose previous notifier donebell runs), else KEEP."""
    return next((plan.chain for plan in plans if plan.chain is not KEEP), KEEP)


def _show_plan(changes: list[FileChange], service: ServicePlan | None, out: TextIO) -> None:
    for change in changes:
        if change.changed:
            out.write(change.diff())
            if change.secret and change.old is None:
                out.write("# (the real run picks its own unguessable topic)\n")
        else:
            out.write(f"# {change.path}: unchanged\n")
    if service is not None:
        for step in [*service.before, *service.after]:
            out.write(f"# would run: {' '.join(step.argv)}\n")


def main_install(argv: list[str], *, runner: Runner | None = None, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    runner = runner or SubprocessRunner()
    args = _parser("install").parse_args(argv)
    problem = _wake_problem()
    if problem:
        out.write(f"donebell install: {problem} (see docs/wake.md)\n")
        return 1
    try:
        executable = donebell_executable()
        agents = _agents(args, runner)
        config_file = paths.config_path()
        kind = args.service or install_service.default_service(runner)
        record: dict[str, Any] = remember_install(read_record(config_file), config_file, kind)
        plans: list[AgentPlan] = []
        for agent in agents:
            plans.append(agent.plan_install(executable, record, runner))
            record = plans[-1].record
        chain = _chain_of(plans)
        # chain_notify and the record first: the user's notify is saved before it is replaced.
        own = [plan_record(config_file, record), plan_config(config_file, chain=chain)]
        service = install_service.plan_install(kind, executable, runner) if kind != "none" else None
    except (EditError, ExecutableNotFound, ValueError) as exc:
        out.write(f"donebell install: {exc}\n")
        return 1
    manager_problem = _service_manager_problem(kind, runner)
    if manager_problem and not args.dry_run:
        out.write(manager_problem)
        return 1
    if not plans:
        out.write(_nothing_found())
    changes = own + [c for plan in plans for c in plan.changes]
    service_files = [service.change] if service and service.change else []
    if args.dry_run:
        _show_plan([*changes, *service_files], service, out)
        out.write(manager_problem.replace("nothing was changed", "a real run would change nothing"))
        return 1 if manager_problem else 0
    service_ok = install_all_or_nothing(changes, service, runner, out, named=args.service is not None)
    if service_ok is None:
        return 1
    print_install_summary(plans, service, service_ok=service_ok, kind=kind, out=out)
    return 0


def _wake_problem() -> str | None:
    """Refuse to install a configuration whose wake_enabled the wake role would refuse."""
    from donebell.shared.config import model
    from donebell.workers.wake.policy import config_problem

    try:
        settings = model.load().settings
    except model.ConfigError:
        return None  # install goes on and reports the config as it always has
    return config_problem(settings) if settings.wake_enabled else None


def main_uninstall(
    argv: list[str], *, runner: Runner | None = None, out: TextIO | None = None, stdin: TextIO | None = None
) -> int:
    out = out or sys.stdout
    stdin = stdin or sys.stdin
    runner = runner or SubprocessRunner()
    args = _parser("uninstall").parse_args(argv)
    chosen = _chosen(args)
    every = not chosen
    config_file = paths.config_path()
    try:
        record = read_record(config_file)
        created_folders = forget_install(record, every)
        plans: list[AgentPlan] = []
        for _name, agent in chosen or _installers():
            plans.append(agent.plan_uninstall(record, current_chain(config_file)))
            record = plans[-1].record
        chain = _chain_of(plans)
        # Agents' files first: notify is restored before chain_notify is dropped.
        own = [plan_config(config_file, chain=chain, create=False), plan_record(config_file, record)]
        kind = args.service or _platform_service()
        service = install_service.plan_uninstall(kind, runner) if kind != "none" else None
    except EditError as exc:
        out.write(f"donebell uninstall: {exc}\n")
        return 1
    changes = [c for plan in plans for c in plan.changes] + own
    if args.dry_run:
        _show_plan([*([service.change] if service and service.change else []), *changes], service, out)
        for proc in stop_running.running(StateDir(paths.state_dir_path())) if every or args.purge else []:
            out.write(f"# would stop: {proc}\n")
        if args.purge:
            out.write(f"# would delete: {paths.state_dir_path()} and {config_file}\n")
        return 0
    purge_confirmed = _confirm_purge(args.yes, config_file, out, stdin) if args.purge else False
    if purge_confirmed is None:
        return 1
    ok = service is None or apply_service(service, runner, out)
    # Unwiring one agent leaves donebell serving the other: only a full uninstall stops it.
    still_running = _stop_donebell_processes(out) if every or args.purge else []
    ok = apply_all(changes, out, name_backups=False) and ok  # the ones kept are named below
    for plan in plans:
        remove_empty(plan.empty_folders_after)
    for plan in plans:
        for message in plan.messages:
            out.write(f"  {plan.agent}: {message}\n")
    for message in service.messages if service else []:
        out.write(f"  service: {message}\n")
    edited = [c.path for c in changes] + ([service.change.path] if service and service.change else [])
    if purge_confirmed:  # the config goes with its backups (they may hold the token): none is "kept"
        edited = [path for path in edited if path != config_file]
    _keep_oldest_backups(edited, out, {c.path for c in changes if c.created_by_donebell})
    if purge_confirmed and still_running:
        out.write(
            f"donebell uninstall: --purge refused: {', '.join(map(str, still_running))} still runs on "
            f"{paths.state_dir_path()} and could not be stopped; stop it, then run the command again\n"
        )
        ok = False
    elif purge_confirmed:
        ok = _purge(config_file, created_folders, out) and ok
    return 0 if ok else 1


def _stop_donebell_processes(out: TextIO) -> list[stop_running.Running]:
    """Stop every donebell process of the state directory; returns those that still run."""
    stopped, still = stop_running.stop_all(StateDir(paths.state_dir_path()))
    for proc in stopped:
        out.write(f"  stopped: {proc}\n")
    for proc in still:
        out.write(f"  still running: {proc}: could not stop it\n")
    return still


def _service_manager_problem(kind: str, runner: Runner) -> str:
    """The refusal text when the chosen service manager cannot be used ("" when it can)."""
    problem = service_manager.systemd_user_problem(runner) if kind == "systemd" else None
    if problem is None:
        return ""
    ways = "".join(f"  {n}. {way}\n" for n, way in enumerate(service_manager.WAYS_ON, 1))
    return f"donebell install: {problem}; nothing was changed. Two ways on:\n{ways}"


def _keep_oldest_backups(files: list[Path], out: TextIO, created: set[Path]) -> None:
    """One backup per edited file survives uninstall: the oldest, named in the output; none of a
    file donebell ``created`` (its backups all hold donebell's own entries)."""
    for path in dict.fromkeys(files):
        kept, removed = prune_backups(path, keep=path not in created)
        if path in created and removed:
            out.write(f"  {path}: donebell created it; its {len(removed)} backup(s) deleted\n")
        if kept is not None:
            extra = f" (removed {len(removed)} newer)" if removed else ""
            out.write(f"  backup kept: {kept}{extra}\n")


def _platform_service() -> str:
    from donebell.shared.platform import service

    return service.platform_manager()


def _confirm_purge(assume_yes: bool, config_file: Path, out: TextIO, stdin: TextIO) -> bool | None:
    """Ask before anything is changed: True = purge, False = uninstall only, None = refuse."""
    if assume_yes:
        return True
    if not stdin.isatty():
        out.write("donebell uninstall: --purge needs confirmation; pass --yes to delete without asking\n")
        return None
    out.write(f"Delete donebell's state ({paths.state_dir_path()}) and config ({config_file.parent})? [y/N] ")
    out.flush()
    if stdin.readline().strip().lower() in ("y", "yes"):
        return True
    out.write("  purge skipped; uninstalling only\n")
    return False


def _purge(config_file: Path, created_folders: list[str], out: TextIO) -> bool:
    state = paths.state_dir_path()
    backups = config_backups(config_file)
    try:
        also_created = purge(state, config_file)
    except PurgeRefused as exc:
        out.write(f"donebell uninstall: {exc}\n")
        return False
    with_backups = f" (with its {len(backups)} backup(s): they may hold the token)" if backups else ""
    out.write(f"  purged {state} and {config_file}{with_backups}\n")
    removed = remove_empty([*created_folders, *also_created])
    if removed:
        out.write(f"  removed the empty folders donebell had created: {', '.join(removed)}\n")
    return True
