"""Is the notification topic private? Asked of the server without publishing or reading a message.

With reply to continue or approvals on, a notification's buttons are a capability: whoever can
read the notification topic sees the Allow / Deny / Continue buttons (their ``Authorization``
header and signed ticket) and can tap them first. So the topic must be readable only by the
user's own account. ntfy's ``GET /<topic>/auth`` answers ``200`` when the caller may read the
topic, ``403`` when not, and returns no message either way (measured on ntfy 2.11 and 2.27:
tests/test_real_ntfy_wake.py); it is asked without credentials, as a stranger would.

On a server with access control an anonymously readable topic is a failure naming the one
``ntfy access`` line that closes it: an entry for everyone (``'*'``) on exactly that topic wins
over wider ones (ntfy prefers the longer topic pattern), and a user's own entry still wins over
everyone's. On a public server without accounts nothing can close it: the topic name is the only key.
"""

from __future__ import annotations

from donebell.shared.ntfy.access import may_read
from donebell.shared.ntfy.client import public_server
from donebell.workers.kit.install.checks import Check


def readable_by_anyone(server: str, topic: str) -> bool | None:
    """True when ``topic`` can be read without credentials; None when the server could not be asked.
    The URL's user-info is dropped: it would be sent as Basic auth."""
    return may_read(public_server(server), topic, None)


def fix_line(topic: str) -> str:
    """The administrator's command that makes ``topic`` unreadable for anonymous clients."""
    return f"ntfy access '*' '{topic}' deny"


def public_topic_failure(name: str, server: str, topic: str, fail: str) -> Check:
    """The check ``name`` failing because anyone can read ``topic`` on a server with accounts."""
    return Check(
        name,
        fail,
        f"anyone can read the notification topic {topic} on {public_server(server)} without an account, "
        "buttons included: whoever reads it can tap Allow / Continue before you",
        f"on the server: `{fix_line(topic)}`, and let only your own account read it "
        f"(`ntfy access <your user> '{topic}' read-only`; docs/wake.md)",
    )


NO_ACCOUNTS_NOTE = (
    "on a server without accounts the topic name is the only key: whoever learns it can read every "
    "notification and tap its buttons"
)
