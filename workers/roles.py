"""``donebell worker <role> [--once] [--debug]``: run one role in the foreground."""

from __future__ import annotations

import importlib
import sys

#: role name -> "module:RoleClass". Each module defines one Role subclass.
ROLES: dict[str, str] = {
    "delivery": "donebell.workers.delivery.role:DeliveryRole",
    "local-scanner": "donebell.workers.scanners.local:LocalScannerRole",
    "remote-scanner": "donebell.workers.scanners.remote:RemoteScannerRole",
    "maintenance": "donebell.workers.maintenance.role:MaintenanceRole",
    "wake": "donebell.workers.wake.role:WakeRole",
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ROLES:
        sys.stderr.write(
            f"usage: donebell worker {{{'|'.join(ROLES)}}} [--once] [--debug] (delivery: [--until-idle])\n"
        )
        return 2
    module_name, class_name = ROLES[argv[0]].split(":")
    module = importlib.import_module(module_name)
    from donebell.workers.role import run_role

    return run_role(getattr(module, class_name), argv[1:])
