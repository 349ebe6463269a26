"""donebell.supervisor."""
