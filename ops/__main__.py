"""``python -m donebell``: the command line without the console script.

For launchers that start an interpreter rather than a script: the Windows task runs
``pythonw -m donebell run`` (pythonw has no console window, a ``donebell.exe`` would open one).
This folder, ``ops/``, is the ``donebell`` package itself (setup.py maps it), beside the service
templates it shares the job of starting donebell with.
"""

import sys

from donebell.supervisor.cli import main

if __name__ == "__main__":
    sys.exit(main())
