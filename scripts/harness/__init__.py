"""Harnesses around the product, kept out of the installed `pipeline` package: the performance
benchmarks (`bench_*`) and the fault-injection harness (`chaos`). They import the product,
never the reverse: `python -m harness.bench_incremental`, `python -m harness.chaos`."""
