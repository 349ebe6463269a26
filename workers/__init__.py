"""donebell.workers."""
