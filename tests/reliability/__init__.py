"""Reliability: crash points, kill storms, hostile input, network faults, secrets (docs/reliability.md)."""
