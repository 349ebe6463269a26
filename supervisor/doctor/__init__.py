"""donebell.supervisor.doctor: the checks of `donebell doctor` (and the preflight of `donebell run`)."""
