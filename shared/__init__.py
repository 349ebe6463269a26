"""donebell.shared."""
