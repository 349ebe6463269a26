"""donebell.workers.delivery: the delivery role and what it needs to reach the phone (payload, ntfy client, retry, policies)."""
