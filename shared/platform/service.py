"""The service manager that starts donebell's supervisor at login, and restarts it.

A convention of the host (portable mode keeps it: there is no manager every platform has):
``systemd`` (a user unit), ``launchd`` (a LaunchAgent), ``task-scheduler`` (a task at logon), or
``none`` (the user's own supervisor). Every platform's files are rendered, parsed back and checked
on any platform (``tests/test_service_files.py``); ``donebell install --service launchd --dry-run``
shows them without a Mac.
"""

from __future__ import annotations

from donebell.shared import platform

#: Every manager ``donebell install --service`` knows.
MANAGERS = ("systemd", "launchd", "task-scheduler", "none")


def platform_manager() -> str:
    """This platform's manager (``none`` where donebell knows none)."""
    return platform.mechanism("service_manager")


def default_manager(*, systemctl_found: bool) -> str:
    """What ``donebell install`` uses without ``--service``: the platform's, or ``none`` on a
    systemd platform without ``systemctl``."""
    manager = platform_manager()
    return "none" if manager == "systemd" and not systemctl_found else manager
