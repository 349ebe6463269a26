"""The whole state vocabulary of supervision, in one place (as supervisord's ``states.py``).

A role writes its :data:`RoleState` to its own health file; the supervisor keeps a
:data:`SlotState` per role (its view: spawned, running, waiting to restart, given up) and a
:data:`Phase` for itself, in ``health/supervisor.json``; ``status`` and ``doctor`` read both and
show a :data:`StatusState`. Two roles report a state of their own parts: the delivery role its
remote probe workers', the wake role its subscription's. Imports nothing of donebell;
``tests/test_state_words.py`` holds the code's state words to these lists.
"""

from __future__ import annotations

from typing import Literal

#: Every state a role writes to its own health file.
RoleState = Literal["starting", "waiting-lock", "scanning", "ready", "degraded", "error", "stopped"]
#: The supervisor's state of one role's slot.
SlotState = Literal["starting", "running", "backoff", "throttled", "fatal", "stopping", "stopped", "disabled"]
#: After a failed run: how the supervisor waits before the next start (``policy.RestartPolicy``).
RestartState = Literal["backoff", "throttled", "fatal"]
#: The supervisor's own phase.
Phase = Literal["starting", "running", "stopping", "stopped"]
#: What ``status`` shows for a role or the supervisor: the state it wrote, or the supervisor's
#: view of it, or what ``status`` concludes (its heartbeat too old; no process at all).
StatusState = RoleState | SlotState | Literal["stale", "not-running"]
#: A remote root's probe worker, in the delivery role's health (``gate_remote``).
ProbeWorkerState = Literal["probing", "ready", "unresponsive", "error"]
#: The wake role's subscription to the reply topic (its health's ``subscription``).
SubscriptionState = Literal["connecting", "polling", "subscribed", "unauthorized", "unreachable"]

#: The role names ``donebell run`` supervises, in start order.
ROLE_NAMES = ("delivery", "local-scanner", "remote-scanner", "maintenance", "wake")

#: Role health states that mean "up and has done its first unit of work".
READY_STATES: frozenset[RoleState] = frozenset({"ready", "degraded"})
#: Role health states that mean "will not become ready by waiting" (still counts as settled).
FAILED_STATES: frozenset[RoleState] = frozenset({"error", "stopped"})
#: Supervisor-side role states after a failed run.
RESTARTING_STATES: frozenset[RestartState] = frozenset({"backoff", "throttled", "fatal"})
