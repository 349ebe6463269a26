"""donebell.supervisor.commands: the commands a user types (status, explain, test, log, config)."""
