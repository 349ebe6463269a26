"""A hook survives the agent's SIGTERM and SIGHUP until its record is durable, then exits promptly.

Claude Code 2.1.332 in print mode starts the StopFailure hook as it exits and sends it SIGTERM
22–29 ms later (SIGKILL about 1.5 s after that), well before a Python hook has written its
candidate (50–80 ms). So every ``donebell hook …`` call holds both signals from its first lines
(:func:`hold`, before the hook modules are imported) until the hook's work is done
(:func:`release`). A signal that arrives meanwhile is only noted; the hook finishes its write
(milliseconds) and returns at once. Programs the hook starts (the kicked delivery worker, a
chained notifier) get the default actions back: a handled signal is reset on ``exec``, and a
forked child calls :func:`release` itself.

The Python handler is installed only once the interpreter runs this module; a signal sent during
interpreter start-up (~20 ms, more on a loaded machine) would still kill the hook. The installed
Claude hook therefore starts with both signals already ignored (``workers/kit/install/managed.py``: a
``/bin/sh`` ``trap '' TERM HUP; exec`` in front of the exec form); ignored dispositions survive
``exec``, and :func:`hold` replaces them with the noting handler.

Only the builtin ``_signal`` module is imported: the ``signal`` module pulls in ``enum`` (~5 ms
of the hook's start-up budget, ``tests/test_import_cost.py``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # typeshed knows the builtin only through the signal module
    import signal as _signal
else:
    import _signal

#: SIGTERM and SIGHUP where they exist (Windows has SIGTERM only as a number nobody sends).
HELD = tuple(getattr(_signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(_signal, name))
_received: list[int] = []


def _note(signum: int, frame: object) -> None:
    _received.append(signum)


def hold() -> None:
    """From now on SIGTERM and SIGHUP are noted, not acted upon (never raises)."""
    for signum in HELD:
        try:
            _signal.signal(signum, _note)
        except (OSError, ValueError):  # not the main thread, or a platform without it
            pass


def release() -> list[int]:
    """Give both signals their default action back; returns the signals noted while held."""
    for signum in HELD:
        try:
            _signal.signal(signum, _signal.SIG_DFL)
        except (OSError, ValueError):
            pass
    noted = list(_received)
    _received.clear()
    return noted
