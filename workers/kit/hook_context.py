"""What every hook invocation shares: its state directory, the few config keys it reads, its log.

The hook path reads its few config keys with :func:`config_schema.read_keys`: the same field table
and normalizer as role processes and the CLI (so ``"include_message": 1`` means true everywhere),
but it never raises: a broken file reads as absent and an invalid value as the key's default.
"""

from __future__ import annotations

import sys

from donebell.shared.config.fields import FIELDS
from donebell.shared.config.schema import read_keys
from donebell.shared.statedir import StateDir, open_state_dir

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: The config keys a hook reads (their defaults and types come from the field table).
HOOK_KEYS = (
    "enable_claude_code",
    "include_message",
    "chain_notify",
    "origin",
    "approvals_enabled",
    "wake_enabled",
    "approval_wait_seconds",
    "approval_wait_interactive_seconds",
)
#: Longest final-message text stored in a candidate (the rendered message is 3,500 bytes at most).
STORED_MESSAGE_LIMIT = 4000
#: How much of it a hook reads: redaction runs before the cut to STORED_MESSAGE_LIMIT, so a key
#: that straddles the cut is still whole when the redactor sees it.
MESSAGE_LIMIT = 2 * STORED_MESSAGE_LIMIT
#: Longest error text stored in a candidate.
ERROR_LIMIT = 300


class HookContext:
    """One hook run: lazily opened state directory, light config, and log helpers."""

    def __init__(self, command: str) -> None:
        self.command = command
        self._state: StateDir | None = None
        self._config: dict[str, Any] | None = None
        #: Keys whose configured value the loaders refuse (read as the default), with the reason.
        self.refused_config: dict[str, str] = {}
        #: Run once the signal is durable and the hook's signals are released: what the hook then
        #: prints instead of its usual output (a PermissionRequest waiting for the phone), or None.
        self.after: Callable[[], str | None] | None = None
        #: The agent whose hook runs (the entry point sets it): the kit reads its answer evidence.
        self.agent: Any = None
        #: Another agent that runs this agent's hooks for a task of its own (its hook-host variable
        #: is set; the entry point asks the registry), or None: the hook then reports nothing.
        self.hook_host: str | None = None
        #: A record was written that the delivery role must see: the entry point starts a
        #: delivery worker once the agent's hook returned (:meth:`request_delivery`).
        self.delivery_wanted = False

    def request_delivery(self) -> None:
        """Ask the hook's entry point to make sure a delivery worker runs, after the hook returns."""
        self.delivery_wanted = True

    @property
    def state(self) -> StateDir:
        if self._state is None:
            self._state = open_state_dir()
        return self._state

    @property
    def config(self) -> dict[str, Any]:
        if self._config is None:
            self._config = read_keys(FIELDS, HOOK_KEYS, self.refused_config)
        return self._config

    @property
    def include_message(self) -> bool:
        """Store the final message only when ``include_message`` is on (the privacy default is off)."""
        return self.config["include_message"] is True

    def excerpt(self, text: str | None) -> str | None:
        """``text`` as a candidate may store it: only with ``include_message``, secrets redacted."""
        return stored_excerpt(text, self.include_message)

    @property
    def claude_enabled(self) -> bool:
        """Claude hooks are on unless ``enable_claude_code`` is off."""
        return self.config["enable_claude_code"] is True

    @property
    def origin(self) -> str | None:
        """The configured machine label, or None (the sender then names this host)."""
        value = self.config["origin"]
        return value if isinstance(value, str) and value else None

    def log(self, level: str, message: str, **fields: Any) -> None:
        """One line in the state directory's log; stderr only if the state dir itself is unusable."""
        try:
            state = self.state
        except Exception as exc:  # noqa: BLE001 - the state dir is unusable: say so where we can
            sys.stderr.write(f"donebell hook {self.command}: {message} (state dir unusable: {exc})\n")
            return
        state.log(level, message, hook=self.command, **fields)


def stored_excerpt(text: str | None, include_message: bool) -> str | None:
    """Message text as a record may store it: None unless ``include_message``, secrets redacted, cut."""
    if text is None or not include_message:
        return None
    from donebell.shared.text.redaction import redact  # only when message text is kept

    return redact(text)[:STORED_MESSAGE_LIMIT]
