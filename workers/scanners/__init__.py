"""donebell.workers.scanners: the local and remote scanner roles, their shared scan engine and the rollout/transcript tailers."""
