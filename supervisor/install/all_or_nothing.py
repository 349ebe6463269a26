"""Install changes everything it planned or nothing: the writes, the service manager, a roll-back.

``install --service launchd`` on Linux once wrote the agents' hooks and the plist, then failed at
``launchctl`` (exit 1): half an install. Here every file install writes is remembered with the
backup it made; when the service cannot be set up, the launcher file goes again, and a service
asked for by name takes every other file back too (the backups and the folders install created
included), so the user is where they were. The default service falls back to hooks only (the
documented on-demand delivery), without a launcher file the manager never loaded.

The install record also keeps two facts for later commands: the folders install found missing
(``created_folders``: ``uninstall --purge`` removes them again when they are empty) and the
service kind chosen (``service``: doctor never suggests ``--service none`` to one who chose it).
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Any, TextIO

from donebell.shared import paths
from donebell.shared.process.runner import Runner
from donebell.supervisor.install.purge import deepest_first, missing_folders, remove_empty
from donebell.supervisor.install.service import ServicePlan, Step, plan_uninstall
from donebell.workers.kit.install.edits import EditError, FileChange, apply, backup_stamp

#: What install wrote, in order, with the backup each write made (for a roll-back).
Applied = list[tuple[FileChange, Path | None]]


def run_steps(steps: list[Step], runner: Runner, out: TextIO) -> bool:
    for step in steps:
        result = runner.run(list(step.argv), timeout=60)
        if not result.ok and not step.may_fail:
            out.write(f"  failed: {' '.join(step.argv)}: {result.brief()}\n")
            return False
    return True


def apply_all(
    changes: list[FileChange], out: TextIO, *, name_backups: bool = True, applied: Applied | None = None
) -> bool:
    stamp = backup_stamp()
    for change in changes:
        try:
            backup = apply(change, stamp)
        except EditError as exc:
            out.write(f"donebell: {exc}\n")
            return False
        if applied is not None and change.changed:
            applied.append((change, backup))
        if backup is not None and name_backups:
            out.write(f"  backup: {backup}\n")
    return True


def apply_service(plan: ServicePlan, runner: Runner, out: TextIO, applied: Applied | None = None) -> bool:
    if not run_steps(plan.before, runner, out):
        return False
    if plan.change is not None and not apply_all([plan.change], out, applied=applied):
        return False
    return run_steps(plan.after, runner, out)


def roll_back(applied: Applied, created_folders: list[str]) -> None:
    """Put every file install wrote back as it was (newest first), delete the backups it made and
    the folders it created: a failed install changes nothing."""
    for change, backup in reversed(applied):
        with contextlib.suppress(EditError, OSError):
            apply(dataclasses.replace(change, old=change.new, new=change.old, backup=False), backup_stamp())
        if backup is not None:
            with contextlib.suppress(OSError):
                backup.unlink()
    remove_empty(created_folders)


def install_all_or_nothing(
    changes: list[FileChange], service: ServicePlan | None, runner: Runner, out: TextIO, *, named: bool
) -> bool | None:
    """Write ``changes``, then set the service up: True (done), False (done without the service:
    the default's hooks-only fallback) or None (nothing changed; the reason is printed)."""
    service_files = [service.change] if service and service.change else []
    fresh = missing_folders(*(c.path for c in [*changes, *service_files]))
    applied: Applied = []
    if not apply_all(changes, out, applied=applied):
        roll_back(applied, fresh)
        return None
    service_applied: Applied = []
    if service is None or apply_service(service, runner, out, service_applied):
        return True
    if service.change is not None and service.change.old is None:
        # A first install may have got as far as loading it (enable, bootstrap): stop and unload
        # what it may have started, quietly, before the file goes. An older service stays as it was.
        for step in plan_uninstall(service.kind, runner).before:
            runner.run(list(step.argv), timeout=60)
    roll_back(service_applied, [])  # never a launcher file the manager did not load
    if named:
        roll_back(applied, fresh)
        out.write(
            f"donebell install: the {service.kind} service could not be set up (see above); nothing was changed\n"
        )
        return None
    return False


def remember_install(record: dict[str, Any], config_file: Path, kind: str) -> dict[str, Any]:
    """The install record with the folders this install creates and the service kind chosen."""
    created = set(record.get("created_folders") or []) | set(
        missing_folders(config_file.parent, paths.state_dir_path())
    )
    return {**record, "created_folders": sorted(created, key=deepest_first), "service": kind}


def forget_install(record: dict[str, Any], every: bool) -> list[str]:
    """The folders a purge may remove; a full uninstall drops both facts from ``record`` (in place),
    so the record goes with the agents' entries as before."""
    created = [f for f in record.get("created_folders") or [] if isinstance(f, str)]
    if every:
        record.pop("created_folders", None)
        record.pop("service", None)
    return created
