"""donebell's benchmarks: each ``bench_<name>.py`` has ``main() -> list[dict]``; run all with
``python -m benchmarks`` (add ``--write`` to refresh docs/benchmarks.md)."""
