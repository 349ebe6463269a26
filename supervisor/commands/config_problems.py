"""What makes a valid configuration still unusable: the one list ``config check`` and ``config set`` share.

The schema (:class:`donebell.shared.config.model.Settings`) refuses a value that is wrong on its own; a
file can still be useless as a whole: no topic (nothing can be delivered), or ``wake_enabled``
without what the wake role needs. ``config check`` fails on these; ``config set`` refuses a change
that would introduce one, so a value it accepted is never one that ``check`` then rejects.
"""

from __future__ import annotations

from donebell.shared.config.model import Settings


def blocking_problems(settings: Settings) -> list[str]:
    """Why notifications (or the wake role) cannot work with ``settings``; empty when they can."""
    problems = []
    if not settings.topic:
        problems.append("no topic set: notifications cannot be delivered")
    if settings.wake_enabled:
        from donebell.workers.wake.policy import config_problem

        problem = config_problem(settings)
        if problem:
            problems.append(f"{problem} (see docs/wake.md)")
    if settings.approvals_enabled and not settings.wake_enabled:
        from donebell.workers.wake.policy import approvals_problem

        problems.append(f"{approvals_problem(settings)} (see docs/approvals.md)")
    return problems
