"""What the very first ``donebell run`` says after writing the default configuration.

That first start is often the first thing a new user runs (the README's set-up line ends in
``donebell run``), so it names the three steps that make a notification reach a phone. Later
starts (the config exists) print nothing of this: the service's log stays quiet.
"""

from __future__ import annotations


def next_steps(config_path: object, subscribe_url: object) -> str:
    return (
        f"donebell: wrote a default configuration to {config_path}\n"
        "donebell: next steps:\n"
        f"  1. subscribe on your phone: in the ntfy app, subscribe to {subscribe_url}\n"
        "     (`donebell config show` prints it again, with a QR code to scan)\n"
        "  2. wire your agents and the background service: donebell install\n"
        "     (`donebell install --dry-run` first shows the exact change to every file)\n"
        "  3. check it: donebell test   (and `donebell doctor` if nothing arrives)\n"
    )
