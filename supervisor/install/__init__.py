"""donebell.supervisor.install: `donebell install` and `uninstall`, and every file edit they plan."""
