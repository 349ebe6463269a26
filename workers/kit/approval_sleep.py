"""The lean wait of a PermissionRequest hook: a bare interpreter asleep until something it watches changes.

A waiting hook holds one agent call and nothing else, yet fifty of them used to hold fifty full
hook interpreters (~6 MiB of private memory each) polling every 50 ms. So once the hook has made
its request durable and checked everything once, it becomes this script (``approval_lean`` exec's
``python -I -S`` on it, same process, same stdout): no site, no donebell, only builtin modules
(~2.6 MiB). It blocks in ``sigtimedwait`` on SIGIO, which the kernel sends when a watched folder
changes (dnotify, ``fcntl.F_NOTIFY``: in the standard library, where inotify is not; a write to a
file is a change of its folder). It exec's the full hook again (``resume``) when one of the watched
files differs from the signature the hook saw before its last checks, at the deadline, or when
the wake role's health file goes stale or stops saying it is subscribed. The hook then makes every
check of ``approval_wait.await_answer`` and either ends the wait or comes back here.

A missed event costs at most :data:`FALLBACK_SECONDS`: the files are compared on every wake-up and
at least that often. If this script fails, it resumes the hook with the lean wait turned off, so
the hook waits in-process as before: never a hook that hangs past its deadline or loops.

No ``from __future__`` either (a module import of its own): the annotations are 3.11's runtime
ones. The hook runs this file's byte-code when it is current (``approval_lean``): compiling the
source would leave ~0.3 MiB behind in every waiting process.

Arguments: ``DEADLINE HEALTH_PATH HEALTH_MAX_AGE MARKER -- (PATH SIGNATURE)... -- RESUME_ARGV...``.
"""

import fcntl
import os
import sys
import time

TYPE_CHECKING = False  # the lean wait imports nothing it does not run
if TYPE_CHECKING:  # typeshed knows the builtin only through the signal module
    import signal as _signal
else:
    import _signal

#: The longest sleep without looking: bounds the cost of a missed folder event, and how late a
#: stale wake role (it has no event here) is noticed.
FALLBACK_SECONDS = 10.0
#: The shortest sleep before a change other than the answer resumes the hook (a resume costs an
#: interpreter start): the old in-process wait looked at the terminal every half second too.
RESUME_GAP_SECONDS = 0.5
#: The environment variable that turns the lean wait off (``off``): a failed lean wait sets it.
LEAN_ENV = "DONEBELL_APPROVAL_LEAN"
#: Health files are small; more than this is not read (the hook then judges it itself).
HEALTH_READ_CAP = 1 << 16
#: The watched folders' descriptors: open as long as the sleep (closing one ends its watch).
WATCHING: list[int] = []


def signature(path: str) -> str:
    """What a change of ``path`` changes: inode, size and mtime, or ``-`` while it is missing."""
    try:
        st = os.stat(path)
    except OSError:
        return "-"
    return f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def watch_folders(paths: list[str]) -> list[int]:
    """Ask for SIGIO on every change in the folders of ``paths``; the open folders (keep them)."""
    changes = fcntl.DN_MODIFY | fcntl.DN_CREATE | fcntl.DN_DELETE | fcntl.DN_RENAME | fcntl.DN_ATTRIB
    fds = []
    for folder in sorted({os.path.dirname(path) for path in paths}):
        try:
            fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            continue  # a folder that is missing: its files are compared on every wake-up anyway
        fcntl.fcntl(fd, fcntl.F_NOTIFY, changes | fcntl.DN_MULTISHOT)
        fds.append(fd)
    return fds


class WakeHealth:
    """Whether the wake role still looks like it can deliver a tap, judged from its health file."""

    def __init__(self, path: str, max_age: float, marker: bytes) -> None:
        self.path, self.max_age, self.marker = path, max_age, marker
        self.seen = -1

    def gone(self) -> bool:
        """Stale (no heartbeat within ``max_age``), missing, or not saying it is subscribed."""
        try:
            st = os.stat(self.path)
        except OSError:
            return True
        if time.time() - st.st_mtime > self.max_age:
            return True
        if st.st_mtime_ns == self.seen:
            return False
        self.seen = st.st_mtime_ns
        try:
            with open(self.path, "rb") as f:
                data = f.read(HEALTH_READ_CAP)
        except OSError:
            return True
        return self.marker not in data


def sleep(deadline: float, health: WakeHealth, watched: dict[str, str]) -> str:
    """Block until a watched file differs from its signature, the deadline, or the wake role is
    gone; which of them. The answer's file comes first in ``watched``."""
    _signal.pthread_sigmask(_signal.SIG_BLOCK, {_signal.SIGIO})  # before any watch: SIGIO kills
    WATCHING.extend(watch_folders(list(watched)))
    started = time.time()
    next_health = started + FALLBACK_SECONDS
    while True:
        for index, (path, seen) in enumerate(watched.items()):
            if signature(path) != seen:
                if index:  # not the answer: an agent writing on and on resumes the hook twice a second at most
                    time.sleep(max(0.0, started + RESUME_GAP_SECONDS - time.time()))
                return f"changed {path}"
        at = time.time()
        if at >= deadline:
            return "deadline"
        if at >= next_health:
            if health.gone():
                return "wake role gone"
            next_health = at + FALLBACK_SECONDS
        _signal.sigtimedwait({_signal.SIGIO}, max(0.0, min(deadline, next_health) - at))


def main(argv: list[str]) -> None:
    """Sleep as the arguments say, then exec the resume command (with the lean wait off on failure)."""
    first = argv.index("--")
    second = argv.index("--", first + 1)
    resume = argv[second + 1 :]
    try:
        deadline, max_age = float(argv[0]), float(argv[2])
        pairs = argv[first + 1 : second]
        health = WakeHealth(argv[1], max_age, argv[3].encode())
        sleep(deadline, health, dict(zip(pairs[0::2], pairs[1::2], strict=True)))
    except Exception:  # noqa: BLE001 - any failure: the hook waits the old way, never hangs
        os.environ[LEAN_ENV] = "off"
    os.execv(resume[0], resume)


if __name__ == "__main__":
    main(sys.argv[1:])
