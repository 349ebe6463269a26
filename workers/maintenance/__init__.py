"""donebell.workers.maintenance: the maintenance role and its retention rules (receipts, cursors, Claude sessions)."""
