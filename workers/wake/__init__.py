"""Reply to continue: signed action buttons and the ``wake`` role that honours them (docs/wake.md)."""
