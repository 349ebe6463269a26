"""What every hook invocation shares: its state directory, the few config keys it reads, its log.

The hook path reads the configuration with :func:`configfile.load_light` (stdlib, never raises)
instead of the validated pydantic settings, which would triple the start-up time.
"""

from __future__ import annotations

import sys

from donebell.shared.configfile import load_light
from donebell.shared.statedir import StateDir, open_state_dir

TYPE_CHECKING = False  # typing costs the hook ~2.5 ms of start-up: annotations only
if TYPE_CHECKING:
    from typing import Any

#: The config keys a hook reads, and their defaults (the same as ``shared.config.Settings``).
HOOK_DEFAULTS: dict[str, Any] = {
    "enable_claude_code": True,
    "include_message": False,
    "chain_notify": None,
    "origin": "",
}
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

    @property
    def state(self) -> StateDir:
        if self._state is None:
            self._state = open_state_dir()
        return self._state

    @property
    def config(self) -> dict[str, Any]:
        if self._config is None:
            self._config = load_light(tuple(HOOK_DEFAULTS), HOOK_DEFAULTS)
        return self._config

    @property
    def include_message(self) -> bool:
        """Store the final message only on an explicit ``true`` (the privacy default is off)."""
        return self.config.get("include_message") is True

    def excerpt(self, text: str | None) -> str | None:
        """``text`` as a candidate may store it: only with ``include_message``, secrets redacted."""
        if text is None or not self.include_message:
            return None
        from donebell.shared.message_redaction import redact  # only when message text is kept

        return redact(text)[:STORED_MESSAGE_LIMIT]

    @property
    def claude_enabled(self) -> bool:
        """Claude hooks are on unless ``enable_claude_code`` is explicitly false."""
        return self.config.get("enable_claude_code") is not False

    @property
    def origin(self) -> str | None:
        """The configured machine label, or None (the sender then names this host)."""
        value = self.config.get("origin")
        return value if isinstance(value, str) and value else None

    def log(self, level: str, message: str, **fields: Any) -> None:
        """One line in the state directory's log; stderr only if the state dir itself is unusable."""
        try:
            state = self.state
        except Exception as exc:  # noqa: BLE001 - the state dir is unusable: say so where we can
            sys.stderr.write(f"donebell hook {self.command}: {message} (state dir unusable: {exc})\n")
            return
        state.log(level, message, hook=self.command, **fields)
