"""The real ntfy servers (Debian's packages, fetched by `support.get_ntfy`) as a test fixture.

Two versions, the ends of the supported range: Debian trixie's 2.11.0 (the default) and sid's
2.27.0 (card updates by ``sequence_id``, ``PUT /<topic>/<sequence_id>/clear``). A real-server test
whose outcome depends on the version runs on both: its module-scoped fixture takes
``params=SERVER_SUITES`` (``ids`` name the version) and passes ``suite=request.param``.

One `ntfy serve` per test module on a free loopback port, with its own cache and auth files;
users, tokens and ACLs are made with the server's own `ntfy user|access|token` commands against
that auth file (``NTFY_AUTH_FILE``, ``NTFY_PASSWORD``), exactly as an administrator would. The
process is stopped by its pid. Where the binary could not be fetched the tests skip with the
reason, unless ``DONEBELL_REQUIRE_REAL_NTFY=1`` (set by `.ci/run`) makes that a failure.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx
import pytest

from .get_ntfy import SUITE, SUITES, NtfyUnavailable, ensure_ntfy

TOKEN_RE = re.compile(r"\btk_[a-z0-9]{29}\b")
REQUIRE_ENV = "DONEBELL_REQUIRE_REAL_NTFY"
#: As the run started (`no_outside_config` drops DONEBELL_* variables inside a test); a value set
#: in the test itself wins.
_REQUIRED_AT_START = os.environ.get(REQUIRE_ENV, "")
#: The suites a version-dependent real-server test runs on, and the version each ships.
SERVER_SUITES = SUITES
SERVER_VERSIONS = {"trixie": "2.11", "sid": "2.27"}
#: For ``@pytest.fixture(params=SERVER_SUITES, ids=SERVER_IDS)``: the test names say the version.
SERVER_IDS = [f"ntfy{SERVER_VERSIONS[s]}" for s in SERVER_SUITES]


def ntfy_binary(suite: str = SUITE) -> Path:
    """The fetched binary of Debian ``suite``; skips the test (or fails it, in CI) where it could not be had."""
    try:
        return ensure_ntfy(suite)
    except NtfyUnavailable as exc:
        if os.environ.get(REQUIRE_ENV, _REQUIRED_AT_START) == "1":
            pytest.fail(f"the real ntfy server is required here ({REQUIRE_ENV}=1): {exc}")
        pytest.skip(f"the real ntfy server is not available: {exc}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RealNtfy:
    """A running `ntfy serve` in ``root`` (Debian ``suite``'s version); ``options`` are extra `serve`
    flags (without the ``--``)."""

    def __init__(
        self,
        root: Path,
        *,
        default_access: str | None = "deny-all",
        binary: Path | None = None,
        suite: str = SUITE,
        **options: Any,
    ) -> None:
        self.suite = suite
        self.version = SERVER_VERSIONS[suite]
        self.binary = binary or ntfy_binary(suite)
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.auth_file = root / "auth.db" if default_access else None
        self.default_access = default_access
        self.options = options
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = root / "serve.log"

    # -- the process ------------------------------------------------------------------------------

    def argv(self) -> list[str]:
        argv = [str(self.binary), "serve", "--listen-http", f"127.0.0.1:{self.port}"]
        argv += ["--cache-file", str(self.root / "cache.db")]
        if self.auth_file is not None:
            argv += ["--auth-file", str(self.auth_file), "--auth-default-access", str(self.default_access)]
        for name, value in self.options.items():
            argv += [f"--{name.replace('_', '-')}", str(value)]
        return argv

    def start(self) -> Self:
        env = {k: v for k, v in os.environ.items() if not k.startswith("NTFY_")}
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.argv(), stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, start_new_session=True
            )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ntfy serve exited {self.proc.returncode}: {self.log_path.read_text()[-800:]}")
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=1).json().get("healthy"):
                    return self
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"ntfy serve did not answer on {self.url}: {self.log_path.read_text()[-800:]}")

    def stop(self) -> None:
        """SIGTERM by pid, then SIGKILL if it lingers; waits for the exit."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def restart(self) -> None:
        """Stop and start again on the same port with the same files (the cache survives)."""
        self.stop()
        self.start()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()

    # -- the administrator's commands -------------------------------------------------------------

    def admin(self, *args: str, password: str | None = None) -> str:
        """Run ``ntfy <args>`` against this server's auth file; its combined output."""
        assert self.auth_file is not None, "this server runs without an auth file"
        env = {k: v for k, v in os.environ.items() if not k.startswith("NTFY_")}
        env["NTFY_AUTH_FILE"] = str(self.auth_file)
        if password is not None:
            env["NTFY_PASSWORD"] = password
        run = subprocess.run(
            [str(self.binary), *args], env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30
        )
        if run.returncode != 0:
            raise RuntimeError(f"ntfy {' '.join(args)} exited {run.returncode}: {run.stderr}{run.stdout}")
        return run.stderr + run.stdout

    def user_add(self, name: str, password: str) -> None:
        self.admin("user", "add", name, password=password)

    def access(self, who: str, topic: str, permission: str) -> None:
        self.admin("access", who, topic, permission)

    def token_add(self, user: str) -> str:
        out = self.admin("token", "add", user)
        match = TOKEN_RE.search(out)
        assert match, f"no token in `ntfy token add` output: {out!r}"
        return match.group(0)

    def token_remove(self, user: str, token: str) -> None:
        self.admin("token", "remove", user, token)

    # -- reading back -----------------------------------------------------------------------------

    def poll(self, topic: str, *, token: str | None = None, since: str = "all") -> list[dict[str, Any]]:
        """Every cached message of ``topic`` (``?poll=1``), as the server stores them."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        reply = httpx.get(f"{self.url}/{topic}/json", params={"poll": "1", "since": since}, headers=headers, timeout=10)
        reply.raise_for_status()
        return [dict(m) for m in map(_json_line, reply.text.splitlines()) if m and m.get("event") == "message"]

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


def _json_line(line: str) -> dict[str, Any] | None:
    return dict(json.loads(line)) if line.strip() else None


def serve_with_donebell(root: Path, suite: str) -> Iterator[tuple[RealNtfy, str]]:
    """The body of a module-scoped fixture: a deny-all server of Debian ``suite`` where user
    `donebell` may read and write `donebell-*` (docs/wake.md), and that user's token."""
    for server in serve_module(root, default_access="deny-all", suite=suite):
        server.user_add("donebell", "pw-donebell")
        server.access("donebell", "donebell-*", "rw")
        yield server, server.token_add("donebell")


def serve_module(root: Path, **kwargs: Any) -> Iterator[RealNtfy]:
    """The body of a module-scoped fixture: one server for the module, stopped by pid at its end."""
    with RealNtfy(root, **kwargs) as server:
        yield server
