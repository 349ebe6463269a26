"""Where a configured secret must never appear: a reusable checker.

:class:`SecretScan` knows the token and the password in every form donebell could put on the wire
or on disk (raw, Base64 of ``user:password`` as in a Basic header, URL-encoded, JSON-escaped) and
looks for them in files (every file under the state dir: records, receipts, dead letters and
their ``.raw`` bytes, ``notify.log``, health, locks, temp files), in command output (``status
--json``, ``doctor --json``) and in the argv of running processes (``/proc/<pid>/cmdline``).
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class SecretScan:
    """Secrets to look for, and the hits found so far (``where: what``)."""

    secrets: dict[str, str]  # label -> value, e.g. {"token": "tk_...", "password": "..."}
    username: str | None = None
    hits: list[str] = field(default_factory=list)
    scanned: dict[str, int] = field(default_factory=dict)  # kind -> how many files/texts/processes

    def needles(self) -> dict[bytes, str]:
        """Every encoding of every secret, as bytes -> label."""
        out: dict[bytes, str] = {}
        for label, value in self.secrets.items():
            forms = {value, urllib.parse.quote(value, safe=""), json.dumps(value)[1:-1]}
            if self.username is not None:
                forms.add(base64.b64encode(f"{self.username}:{value}".encode()).decode())
            forms.add(base64.b64encode(f":{value}".encode()).decode())
            for form in forms:
                out[form.encode()] = label
        return out

    def _check(self, where: str, data: bytes) -> None:
        for needle, label in self.needles().items():
            if needle in data:
                self.hits.append(f"{where}: {label}")

    def scan_text(self, where: str, text: str | bytes) -> None:
        self._check(where, text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text)
        self.scanned["texts"] = self.scanned.get("texts", 0) + 1

    def scan_tree(self, root: Path) -> None:
        """Every regular file under ``root`` (symlinks are not followed)."""
        for path in sorted(root.rglob("*")):
            if path.is_symlink() or not path.is_file():
                continue
            try:
                data = path.read_bytes()
            except OSError:
                continue
            self._check(str(path.relative_to(root)), data)
            self.scanned["files"] = self.scanned.get("files", 0) + 1
            self.scanned["bytes"] = self.scanned.get("bytes", 0) + len(data)

    def scan_cmdlines(self, cmdlines: Iterable[str]) -> None:
        for cmd in cmdlines:
            self._check(f"argv {cmd[:80]!r}", cmd.encode("utf-8", "surrogateescape"))
            self.scanned["processes"] = self.scanned.get("processes", 0) + 1
