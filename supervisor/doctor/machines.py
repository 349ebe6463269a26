"""``doctor``'s checks of several machines on one topic, and of clocks (docs/wake.md, "Several machines").

* The wake identity: a state directory whose key names another machine (copied, not yet started
  here) or that was given a new identity after a copy (recently) is a warning that says what it
  means for the buttons on the phone.
* The machines the wake role heard on the reply topic: one with this machine's ``origin`` or host
  name looks the same on the phone, and with both host name and machine id alike a copied state
  directory could not be told apart (a shared machine id alone is common: containers of one image).
* Clocks: the service's clock against this machine's file system (a health file's own
  ``heartbeat_at`` against its modification time), and against the ntfy server's (what the wake
  role measured). donebell's liveness checks compare same-clock times, so skew changes nothing it
  decides; it is a warning because every timestamp the service writes is off by as much.
All read-only: files of the state directory, nothing on the network.
"""

from __future__ import annotations

import os
import time

from donebell.shared import machine
from donebell.shared.config.model import Settings
from donebell.shared.statedir import HEALTH, StateDir
from donebell.shared.statedir._wake import read_peers
from donebell.shared.wake_ticket import key_file
from donebell.workers.kit.install.checks import OK, WARN, Check
from donebell.workers.kit.labels import format_duration, origin_label

#: How long a new identity after a copy stays a warning (the buttons of before are all expired by then).
MOVED_NOTICE_SECONDS = 7 * 86400.0
#: Clock differences below this are noise (file system timestamp resolution, scheduling).
SKEW_WARN_SECONDS = 60.0


def check_identity(state: StateDir) -> Check | None:
    """The wake key's machine against this one; None when there is no key yet."""
    found = key_file(state)
    if found is None:
        return None
    here = machine.current()
    why = machine.differs(found.get("machine"), here)
    if why:
        return Check(
            "wake identity",
            WARN,
            f"this state directory belongs to another machine ({why}): donebell gives it a new wake identity "
            "and key when it next starts here, and ignores the buttons issued there",
            'nothing to do if this is a copy (a cloned VM, a restored home); see docs/wake.md, "Several machines"',
        )
    moved = found.get("moved_from")
    created = found.get("created_at")
    if isinstance(moved, dict) and isinstance(created, (int, float)) and time.time() - created < MOVED_NOTICE_SECONDS:
        before = machine.differs(moved.get("machine"), here) or "another machine"
        return Check(
            "wake identity",
            WARN,
            f"this state directory was copied from another machine ({before}) and took a new wake identity "
            f"{format_duration(time.time() - created)} ago: buttons issued before that are ignored here",
            "tap buttons of notifications sent since",
        )
    return Check("wake identity", OK, f"host id {str(found.get('host_id'))[:12]} of {here['host']}")


def check_other_machines(state: StateDir, settings: Settings) -> list[Check]:
    """A warning per machine heard on the reply topic that looks like this one on the phone."""
    here = machine.current()
    own_origin = origin_label({}, settings)
    checks = []
    for host_id, peer in sorted(read_peers(state).items()):
        host = peer.get("host") or host_id[:12]
        same = []
        if peer.get("twin"):
            same.append("this state directory's wake identity (a copy that has not started since)")
        if peer.get("origin") and peer.get("origin") == own_origin:
            same.append(f"origin '{own_origin}'")
        if peer.get("host") == here["host"]:  # (a copy of this state directory there would go unnoticed)
            same.append(f"host name '{here['host']}'")
        if same:
            checks.append(
                Check(
                    "other machines",
                    WARN,
                    f"another machine on the reply topic ('{host}') has this machine's {' and '.join(same)}: "
                    "their notifications look alike on the phone",
                    'give each machine its own `origin` (and host name); see docs/wake.md, "Several machines"',
                )
            )
    return checks


def check_service_clock(state: StateDir) -> Check | None:
    """The service's clock against this machine's file system, and against the ntfy server's."""
    problems = []
    health = state.read_health("supervisor") or {}
    beat = health.get("heartbeat_at")
    try:
        written = os.stat(state.path(HEALTH, "supervisor.json")).st_mtime
    except OSError:
        written = None
    if isinstance(beat, (int, float)) and written is not None and abs(beat - written) > SKEW_WARN_SECONDS:
        problems.append(
            f"the service's clock is {format_duration(abs(beat - written))} {'ahead of' if beat > written else 'behind'} this machine's file system"
        )
    offset = (state.read_health("wake") or {}).get("server_clock_offset_seconds")
    if isinstance(offset, (int, float)) and abs(offset) > SKEW_WARN_SECONDS:
        problems.append(
            f"the service's clock is {format_duration(abs(offset))} {'ahead of' if offset > 0 else 'behind'} the ntfy server's"
        )
    if not problems:
        return None
    return Check(
        "clock skew",
        WARN,
        "; ".join(problems) + ": its timestamps are off by as much (donebell's liveness checks do not depend on it)",
        "synchronize the clocks (NTP: `timedatectl set-ntp true`)",
    )
