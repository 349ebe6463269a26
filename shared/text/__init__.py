"""Text donebell shows, stores or sends: what it may contain and how it is cut.

* :mod:`.redaction`: secrets cut out of agent text before it is stored or sent (one redactor).
* :mod:`.secret_text` and :mod:`.scrubbed_output`: the configured secrets never print, never
  reach a stored record or a shown URL; every command's output passes one scrubber.
* :mod:`.short_id`: the ``#a14a99c3`` a notification and ``explain`` show.
* :mod:`.subscribe_qr`: the phone subscription URL as a terminal QR code.

The contract: pure functions of their inputs (no state directory, no network), so any role, hook
or command can call them. This ``__init__`` imports nothing.
"""
