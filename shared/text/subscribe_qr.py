"""The phone subscription URL as a terminal QR code (``install``, ``config show``, ``test``).

The ntfy app subscribes to ``<server>/<topic>``; scanning this code with the phone's camera opens
that URL. segno (a small, dependency-free, well-kept QR encoder) renders it: two modules per
character cell with Unicode half blocks, or ANSI-inverted spaces where the output cannot encode them.
"""

from __future__ import annotations

import io
import sys
from typing import TextIO

import segno

_HALF_BLOCKS = "\u2580\u2584\u2588"


def qr_text(url: str, out: TextIO | None = None) -> str:
    """The QR code of ``url`` for ``out`` (default stdout), without a trailing newline."""
    encoding = getattr(out or sys.stdout, "encoding", None) or "utf-8"
    try:
        _HALF_BLOCKS.encode(encoding)
        compact = True
    except (LookupError, UnicodeEncodeError):
        compact = False
    buffer = io.StringIO()
    segno.make(url, error="l").terminal(out=buffer, compact=compact)
    return buffer.getvalue().rstrip("\n")
