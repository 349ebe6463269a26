"""Which modules a donebell command imported: the probe the import-budget tests run the CLI under."""

from __future__ import annotations


def imported_modules(stderr: bytes) -> set[str]:
    """Module names from ``-X importtime`` output."""
    names = set()
    for line in stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    return names


#: Runs the CLI as the ``donebell`` console script does (``main()``; ``python -m`` would add
#: runpy's own imports), and dumps ``sys.modules`` at exit as a second witness next to
#: ``-X importtime``: at the interpreter's exit, or where a hook ends its process with
#: ``os._exit`` (``supervisor/cli.py``), which skips ``atexit``.
PROBE = (
    "import atexit, os, sys\n"
    "out = sys.argv.pop(1)\n"
    "dump = lambda: open(out, 'w').write('\\n'.join(sorted(sys.modules)))\n"
    "atexit.register(dump)\n"
    "exit_now = os._exit\n"
    "os._exit = lambda code: (dump(), exit_now(code))\n"
    "from donebell.supervisor.cli import main\n"
    "sys.exit(main())\n"
)
