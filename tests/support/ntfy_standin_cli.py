"""The ntfy stand-in as a process: `python -m support.ntfy_standin` runs `main` (the flags are in
`ntfy_standin`'s docstring). Writes the port file once listening, prints `listening <url>`, and
exits 0 on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path

from .ntfy_standin import NtfyStandin, RateLimit


def _split(values: list[str], parts: int, flag: str) -> list[list[str]]:
    out = [v.split(":", parts - 1) for v in values]
    for value, split in zip(values, out, strict=True):
        if len(split) != parts:
            raise SystemExit(f"{flag} {value!r}: expected {parts} parts separated by ':'")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m support.ntfy_standin", description="A stand-in ntfy server.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", help="written (write, then rename) with the port once listening")
    ap.add_argument("--record-file", help="every accepted message/event is appended as one JSON line")
    ap.add_argument("--user", action="append", default=[], metavar="NAME:PASSWORD")
    ap.add_argument("--admin", action="append", default=[], metavar="NAME:PASSWORD")
    ap.add_argument("--token", action="append", default=[], metavar="TOKEN:NAME")
    ap.add_argument("--access", action="append", default=[], metavar="NAME:TOPIC_PATTERN:PERMISSION")
    ap.add_argument("--default-access", help="read-write (ntfy's default) or deny-all...; turns auth on")
    ap.add_argument("--request-limit", metavar="BURST:SECONDS", help="e.g. 60:5 as in ntfy; off if not given")
    ap.add_argument("--daily-message-limit", type=int)
    ap.add_argument("--verbose", action="store_true", help="one line per request on stderr")
    a = ap.parse_args(argv)
    access: dict[str, dict[str, str]] = {}
    for name, pattern, permission in _split(a.access, 3, "--access"):
        access.setdefault(name, {})[pattern] = permission
    request = None
    if a.request_limit:
        burst, seconds = _split([a.request_limit], 2, "--request-limit")[0]
        request = RateLimit(int(burst), float(seconds))
    srv = NtfyStandin(
        a.host,
        a.port,
        users={name: password for name, password in _split(a.user + a.admin, 2, "--user/--admin")},
        admins=tuple(name for name, _ in _split(a.admin, 2, "--admin")),
        tokens={token: name for token, name in _split(a.token, 2, "--token")},
        access=access,
        default_access=a.default_access,
        request_limit=request,
        daily_message_limit=a.daily_message_limit,
        record_file=a.record_file,
        verbose=a.verbose,
    )
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    srv.start()
    if a.port_file:  # write, then rename: a reader never sees a half-written port
        tmp = Path(a.port_file + ".tmp")
        tmp.write_text(f"{srv.port}\n")
        tmp.replace(a.port_file)
    print(f"listening {srv.url}", flush=True)
    done.wait()
    srv.stop()
    return 0
