"""Whether this user has a service manager that ``install --service systemd`` can talk to.

``systemctl --user`` needs the user's systemd instance and its D-Bus socket. A container, a
plain ``su``/SSH session without ``pam_systemd``, or WSL without systemd has none: every
``systemctl --user`` call then fails with "Failed to connect to bus" (or "No medium found").
``systemctl --user show-environment`` is the cheapest call that succeeds exactly when a user
manager answers (``is-system-running`` exits 1 for a merely "degraded" manager, so it is not used).
Install checks this before writing anything; doctor and uninstall use it to say what is true.
"""

from __future__ import annotations

from donebell.shared.process.runner import Runner

#: The two ways on without a reachable user manager (install's refusal, doctor's next step).
WAYS_ON = (
    "`donebell install --service none`, then keep `donebell run` running under your own "
    "supervisor (a container's init, supervisord, runit, tmux)",
    "or give your user a systemd manager that runs without a login session: "
    "`sudo loginctl enable-linger $USER`, log in again, then `donebell install`",
)


def systemd_user_problem(runner: Runner) -> str | None:
    """Why ``systemctl --user`` cannot manage a service for this user, or None if it can."""
    if runner.which("systemctl") is None:
        return "systemctl is not installed"
    result = runner.run(["systemctl", "--user", "show-environment"], timeout=10)
    if result.ok:
        return None
    return f"no systemd user manager is reachable (systemctl --user: {result.brief()})"


def ways_on_text() -> str:
    return "; ".join(WAYS_ON)
