"""Between its checks a waiting PermissionRequest hook sleeps as a bare interpreter (Linux's
``approval_wait`` mechanism, ``dnotify-sleep``; the portable one, ``poll``, waits in-process).

``approval_wait.await_answer`` checks the answer, the terminal and the wake role, then calls
:meth:`LeanWait.sleep`: the hook process exec's ``approval_sleep.py`` under ``python -I -S``
(same pid, same stdout the agent reads), which blocks without CPU until one of the files this
module names changes and then exec's the hook again (the same command line, ``sys.orig_argv``);
the hook's entry point sees :data:`RESUME_ENV` and goes straight back to ``await_answer``. What
the wait needs crosses the two execs in that variable: the request's key, its deadline and its
call's digest (no secret). Fifty waiting hooks cost fifty bare interpreters, and no CPU.

The files: the request's answer (``wake/answers/``), its record in every pipeline folder (the
delivery role moving it to ``suppressed/`` or ``dead/`` is evidence of a desk answer), and the
agent's file the record names (``answer_path``: the agent going on writes there). The wake role's
health file is looked at by age and subscription every few seconds. Anything else the terminal
check reads changes one of those too, or is seen at the latest when the deadline resumes the hook.
"""

from __future__ import annotations

import os
import sys

from donebell.shared import lean_json as json
from donebell.shared.statedir import PIPELINE, encode
from donebell.workers.kit.hook_context import HookContext

#: The environment variable a resumed hook finds its wait in (``{"key", "until", "digest"}``).
RESUME_ENV = "DONEBELL_APPROVAL_RESUME"
SLEEP_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "approval_sleep.py")
#: The environment variable that turns the lean wait off (``off``; ``approval_sleep.LEAN_ENV``,
#: which a failed sleep sets).
LEAN_ENV = "DONEBELL_APPROVAL_LEAN"
#: The bytes a subscribed wake role's health file holds (the state directory's own encoding).
SUBSCRIBED = encode({"subscription": "subscribed"})[1:-1].decode()


def sleep_program() -> str:
    """The sleep's byte-code file when it is current for the source (what the import system
    validated or wrote), else the source: running byte-code saves every sleeping process the
    compiler's leftovers."""
    from donebell.workers.kit import approval_sleep

    cached = getattr(approval_sleep, "__cached__", None)
    try:
        source = os.stat(SLEEP_SCRIPT)
        with open(cached, "rb") as f:  # type: ignore[arg-type]  # None raises TypeError
            header = f.read(16)
    except (OSError, TypeError):
        return SLEEP_SCRIPT
    flags, mtime, size = (int.from_bytes(header[i : i + 4], "little") for i in (4, 8, 12))
    current = flags == 0 and mtime == int(source.st_mtime) & 0xFFFFFFFF and size == source.st_size & 0xFFFFFFFF
    return cached if current and isinstance(cached, str) else SLEEP_SCRIPT


def available() -> bool:
    """The lean wait works here: the platform's ``approval_wait`` (Linux's dnotify; the portable
    one polls in-process), the hook's own command line, not turned off."""
    from donebell.shared import platform

    if platform.mechanism("approval_wait") != "dnotify-sleep" or os.environ.get(LEAN_ENV) == "off":
        return False
    import fcntl  # POSIX only: imported once the platform said Linux

    return hasattr(fcntl, "F_NOTIFY") and bool(getattr(sys, "orig_argv", None))


def resumed() -> tuple[str, float, str] | None:
    """``(key, until, digest)`` when this process is a waiting hook resumed from its sleep, or None.

    The variable is removed: nothing the hook starts inherits it."""
    text = os.environ.pop(RESUME_ENV, None)
    if text is None:
        return None
    try:
        wait = json.loads(text)
        return str(wait["key"]), float(wait["until"]), str(wait["digest"])
    except (ValueError, KeyError, TypeError):
        return None


class LeanWait:
    """The files one request's wait watches, and the sleep between two rounds of checks."""

    def __init__(self, ctx: HookContext, key: str, until: float, digest: str) -> None:
        state = ctx.state
        self.state = state
        self.key, self.until, self.digest = key, until, digest
        # The answer first: the sleep resumes at once for it, for any other change after a short gap.
        self.watched = [state.answer_box().path(key), *(state.path(f, f"{key}.json") for f in PIPELINE)]
        try:
            folder = state.locate(key)
            record = state.read(folder, key) if folder is not None else None
        except Exception:  # noqa: BLE001 - a damaged record names no file: the other watches remain
            record = None
        agent_file = (record or {}).get("answer_path")
        if isinstance(agent_file, str) and agent_file:
            self.watched.append(agent_file)
        self.seen: list[str] = []

    def look(self) -> None:
        """Note the watched files' signatures before a round of checks: a change after this wakes
        the sleep, so nothing that lands while the hook checks is missed."""
        from donebell.workers.kit.approval_sleep import signature

        self.seen = [signature(path) for path in self.watched]

    def sleep(self) -> None:
        """Exec the lean sleep; returns only if that failed (the caller then waits in-process)."""
        from donebell.shared import health  # psutil: not before the checks found nothing

        max_age = health.stale_after(self.state.read_health("wake"))
        pairs = [item for pair in zip(self.watched, self.seen, strict=True) for item in pair]
        argv = [sys.executable, "-I", "-S", sleep_program(), repr(self.until), self.state.health_file("wake")]
        argv += [repr(max_age), SUBSCRIBED, "--", *pairs, "--", *sys.orig_argv]
        os.environ[RESUME_ENV] = json.dumps({"key": self.key, "until": self.until, "digest": self.digest})
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            os.execv(sys.executable, argv)
        except OSError:
            del os.environ[RESUME_ENV]
