"""Measure one command's peak memory: ``python peak_rss.py OUT.json CMD [ARG ...]``.

Linux keeps a process's resident-set high-water mark across ``fork`` and ``exec``, so a command
started straight from the test process (hundreds of MB after the 100 MB inputs) would report the
test's own size. This tiny launcher forks the command from a ~10 MB interpreter instead and writes
``{"rc", "maxrss_kb"}`` (``wait4``'s ``ru_maxrss``) to OUT.json.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    out, argv = sys.argv[1], sys.argv[2:]
    pid = os.fork()
    if pid == 0:
        try:
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    _, status, usage = os.wait4(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"rc": rc, "maxrss_kb": usage.ru_maxrss}, f)
    return rc if rc >= 0 else 1


if __name__ == "__main__":
    sys.exit(main())
