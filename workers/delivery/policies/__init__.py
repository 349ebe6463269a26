"""Opt-in notification policies, decided at send time from the state directory (docs/delivery.md).

Every policy is off by default and decided by the delivery role just before a record would be
POSTed, from the outbox record, the state directory and the clock of the pass, so a restart or a
crash changes no decision. Order, per outbox record (:mod:`.sweep`):

1. ``min_task_seconds``   a done task shorter than this -> ``suppressed/``, reason ``too-short``
2. ``desk_grace_seconds`` a done task waits; a new turn in its thread -> ``user-returned``
3. ``quiet_hours``        held to the window's end (one digest), or sent at once with priority 1
4. ``burst_digest_threshold``  that many ready at once -> one digest (:mod:`.digest`)

A failure is never dropped by a policy (1 and 2 apply to done tasks only, unless
``desk_grace_failures``); 3 and 4 only change how a notification is sent, never whether.
"""
