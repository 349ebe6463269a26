"""Drive the real `codex app-server` (JSON-RPC over stdio), the long-lived Codex of IDE extensions.

`codex exec` exits, aborting every running child, as soon as its root turn completes; only a
long-lived Codex shows a root whose turn is over while a child still works. This client speaks the
few v2 methods a scenario needs (docs/agent-facts.md, "Codex: app-server"):

    with CodexAppServer(home) as app:
        thread = app.start_thread()
        turn = app.start_turn(thread, "delegate")
        app.wait_turn_completed(thread, turn)      # the root's turn, not its children's

Hooks are NOT bypassed here (app-server has no `--dangerously-bypass-hook-trust`): trust a hook
in config.toml (`[hooks.state]`) as a user would through `/hooks`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from support import npm_clis

from e2e.harness import CodexHome

JSON = dict[str, Any]


class CodexAppServer:
    """One `codex app-server` process in the harness's clean environment."""

    def __init__(self, home: CodexHome, *, client: str = "donebell-e2e") -> None:
        self.home, self.client = home, client
        self.messages: list[tuple[float, JSON]] = []
        self._cond = threading.Condition()
        self._ids = 0
        self.proc: subprocess.Popen[str] | None = None
        self.stderr_path = home.root / "app-server.err"

    # ---- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> Self:
        self.proc = subprocess.Popen(
            [str(npm_clis.codex_binary()), "app-server"],
            cwd=self.home.workdir,
            env=self.home.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(self.stderr_path, "w"),
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=self._read, name="app-server-reader", daemon=True).start()
        self.request("initialize", {"clientInfo": {"name": self.client, "version": "1"}})
        self.notify("initialized")
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close stdin and reap the server (SIGKILL to its group if it does not leave)."""
        if self.proc is None:
            return
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict):
                with self._cond:
                    self.messages.append((time.time(), msg))
                    self._cond.notify_all()

    # ---- JSON-RPC --------------------------------------------------------------------------
    def _send(self, obj: JSON) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(obj) + "\n")
        self.proc.stdin.flush()

    def notify(self, method: str, params: JSON | None = None) -> None:
        self._send({"method": method, **({"params": params} if params is not None else {})})

    def request(self, method: str, params: JSON, timeout: float = 30.0) -> JSON:
        """Send a request and return its `result` (an `error` answer raises)."""
        with self._cond:
            self._ids += 1
            rid = self._ids
        self._send({"id": rid, "method": method, "params": params})
        answer = self._wait(
            lambda m: m.get("id") == rid and ("result" in m or "error" in m), timeout, f"the answer to {method}"
        )
        if "error" in answer:
            raise RuntimeError(f"{method}: {answer['error']}")
        return dict(answer["result"])

    def _wait(self, match: Any, timeout: float, what: str) -> JSON:
        with self._cond:
            found: list[JSON] = []

            def ready() -> bool:
                found[:] = [m for _, m in self.messages if match(m)]
                return bool(found)

            if not self._cond.wait_for(ready, timeout):
                raise TimeoutError(f"no {what} within {timeout}s; stderr:\n{self.stderr()}")
            return found[0]

    def stderr(self) -> str:
        with contextlib.suppress(OSError):
            return self.stderr_path.read_text(errors="replace")[-3000:]
        return ""

    # ---- threads and turns -----------------------------------------------------------------
    def start_thread(self, cwd: Path | None = None) -> str:
        """A new root thread (approvals off, no sandbox, like the exec runs); its id."""
        result = self.request(
            "thread/start",
            {"cwd": str(cwd or self.home.workdir), "approvalPolicy": "never", "sandbox": "danger-full-access"},
        )
        return str(result["thread"]["id"])

    def start_turn(self, thread: str, text: str) -> str:
        result = self.request("turn/start", {"threadId": thread, "input": [{"type": "text", "text": text}]})
        return str(result["turn"]["id"])

    def wait_turn_completed(self, thread: str, turn: str, timeout: float = 60.0) -> JSON:
        """The `turn/completed` notification of one turn of one thread."""
        return self._wait(
            lambda m: (
                m.get("method") == "turn/completed"
                and m["params"].get("threadId") == thread
                and m["params"].get("turn", {}).get("id") == turn
            ),
            timeout,
            f"turn/completed for {thread}/{turn}",
        )

    def turns_started(self, thread: str) -> list[str]:
        with self._cond:
            return [
                m["params"]["turn"]["id"]
                for _, m in self.messages
                if m.get("method") == "turn/started" and m["params"].get("threadId") == thread
            ]
