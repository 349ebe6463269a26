"""Which machine this is: what a state directory's wake identity belongs to (docs/wake.md, "Several machines").

Two facts, read fresh each time (cheap): the **machine id** (systemd's ``/etc/machine-id``, else
D-Bus's ``/var/lib/dbus/machine-id``; none elsewhere), kept only as a salted SHA-256 prefix so
the raw id (which systemd asks never to expose) leaves no file and no message, and the **host
name** (``uname -n``: a UTS namespace, a container, a cloned VM each have their own). A state
directory copied to another machine (a cloned VM or image, a restored home) keeps its files but
not these two: the wake key records them, and a key whose machine differs is replaced.

Cloned VMs and containers built from one image often share the machine id, which is why the host
name counts too; renaming a host therefore also gives it a new wake identity (said in the log).
Standard library only.
"""

from __future__ import annotations

import hashlib
import socket
from typing import Any

MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")


def machine_id_digest() -> str | None:
    """A salted SHA-256 prefix of the machine id, or None where the system has none."""
    for path in MACHINE_ID_FILES:
        try:
            with open(path, "rb") as f:
                raw = f.read(256).strip()
        except OSError:
            continue
        if raw:
            return hashlib.sha256(b"donebell/machine|" + raw).hexdigest()[:32]
    return None


def host_name() -> str:
    return socket.gethostname() or "localhost"


def current() -> dict[str, Any]:
    """``{"machine_id": <digest or None>, "host": <host name>}`` of the machine running now."""
    return {"machine_id": machine_id_digest(), "host": host_name()}


def differs(recorded: object, now: dict[str, Any]) -> str | None:
    """Why ``recorded`` (a key file's ``machine``) is not this machine, or None when it is."""
    if not isinstance(recorded, dict):
        return None  # a key from before machines were recorded: adopted, not replaced
    if recorded.get("host") != now["host"]:
        return f"host name {recorded.get('host')!r}, now {now['host']!r}"
    if recorded.get("machine_id") != now["machine_id"]:
        return "another machine id"
    return None
