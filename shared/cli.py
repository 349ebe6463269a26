"""The old ``python -m donebell.shared.cli`` entry point, kept for launchers written before the move.

The command line lives in :mod:`donebell.supervisor.cli`. A Windows Task Scheduler task that an
earlier ``donebell install`` registered starts ``pythonw -m donebell.shared.cli run`` (the task file
names the module; systemd and launchd name the ``donebell`` script and follow the move by
themselves), so this module must still start the program until that task is installed again.
It is the one import from ``shared/`` upward (tests/test_layering.py names it).
"""

if __name__ == "__main__":
    import sys

    from donebell.supervisor.cli import main

    sys.exit(main())
