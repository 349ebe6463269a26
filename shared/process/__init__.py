"""Processes: identity, groups, lifetimes and signals.

* :mod:`.liveness`: is a recorded process still the same process (pid + start time)? How a
  start time, a command line or a pid's existence is read (``/proc`` or psutil).
* :mod:`.groups`: start a process as the leader of its own group, and kill that group.
* :mod:`.orphans`: helpers that must not outlive the process that started them.
* :mod:`.hook_signals`: a hook survives the agent's SIGTERM/SIGHUP until its record is durable.

The contract: the only code that spawns, identifies or signals processes; the hook path may import
``liveness``, ``groups`` and ``hook_signals`` (stdlib only). This ``__init__`` imports nothing.
"""
