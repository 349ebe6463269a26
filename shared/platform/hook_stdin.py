"""How a hook's payload bytes become text.

* ``utf-8`` (Linux, macOS): strict UTF-8, a leading UTF-8 BOM skipped. The agents write UTF-8.
* ``utf-8-or-utf-16`` (Windows, and portable mode anywhere): the same, and a payload that starts
  with a UTF-16 BOM is decoded as UTF-16: on Windows a payload file saved by an editor as
  "Unicode" and piped in by hand (``type payload.json | donebell hook claude``) arrives that way.
  Without a BOM nothing is guessed: UTF-8 it is.

Invalid bytes refuse the payload (``UnicodeDecodeError``) instead of being replaced: a replacement
character could turn into different JSON text. Standard library only: the hook path imports it.
"""

from __future__ import annotations

from donebell.shared import platform

_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def decode(raw: bytes) -> str:
    """The payload's text; ``UnicodeDecodeError`` (``.start``: the bad byte) for invalid bytes."""
    if raw.startswith(_UTF8_BOM):
        return raw[len(_UTF8_BOM) :].decode("utf-8")
    if raw[:2] in _UTF16_BOMS and platform.mechanism("hook_stdin") == "utf-8-or-utf-16":
        return raw.decode("utf-16")  # the BOM says the byte order, and is dropped
    return raw.decode("utf-8")
