"""Every command's stdout and stderr pass through one scrubber: the configured secrets never print.

The CLI dispatcher wraps ``sys.stdout`` and ``sys.stderr`` of every command except ``hook`` (whose
output is the agent's protocol and whose start-up must stay fast) in a :class:`ScrubbedStream`.
What a command prints may quote text written long ago by another version: a dead letter's
``last_error``, a health file's error, a log line. Scrubbing at the one exit covers ``log``,
``explain``, ``status``, ``doctor``, ``test``, ``config``, ``run`` and the roles alike, whatever
path the text took. The secrets are those of :func:`secret_text.configured_secrets` (the file and
the environment, read without validation, ``wake_token`` included), every form of them
(:func:`secret_text.secret_forms`).

Text is held until a line ends (or a flush), so a secret written in two pieces is still one
line's worth of text when it is scrubbed; a configured secret never contains a newline.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, TextIO

from donebell.shared.config import secret_text


class ScrubbedStream:
    """A text stream that writes ``inner`` what it is given, minus every form of ``secrets``."""

    def __init__(self, inner: TextIO, secrets: list[str], username: str | None = None) -> None:
        self.inner = inner
        self.forms = secret_text.all_forms(secrets, username)  # computed once, not per line
        self._pending = ""
        self._lock = threading.Lock()  # a role logs from several threads

    def write(self, text: str) -> int:
        with self._lock:
            self._pending += text
            head, newline, tail = self._pending.rpartition("\n")
            if newline:
                self._pending = tail
                self.inner.write(secret_text.scrub_forms(head + newline, self.forms))
        return len(text)

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, ""
            if pending:
                self.inner.write(secret_text.scrub_forms(pending, self.forms))
        self.inner.flush()

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, buffer...: the real stream's
        return getattr(self.inner, name)


def install() -> tuple[TextIO, TextIO]:
    """Wrap ``sys.stdout`` and ``sys.stderr``; returns the originals (for :func:`uninstall`)."""
    originals = (sys.stdout, sys.stderr)
    try:
        secrets, username = secret_text.configured_secrets()
    except Exception:  # noqa: BLE001 - an unreadable config holds no secret to hide; the command says why
        return originals
    # Under pythonw (the Windows scheduled task) both are None, and print() to None is a no-op:
    # a wrapper around None would turn every print into an AttributeError.
    if secrets and sys.stdout is not None:
        sys.stdout = ScrubbedStream(sys.stdout, secrets, username)
    if secrets and sys.stderr is not None:
        sys.stderr = ScrubbedStream(sys.stderr, secrets, username)
    return originals


def uninstall(originals: tuple[TextIO, TextIO]) -> None:
    """Flush what the wrappers hold and put the original streams back."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, ScrubbedStream):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass  # a closed pipe: the caller already handles it
    sys.stdout, sys.stderr = originals
