"""Backfills: planned, batched, checkpointed, isolated on Iceberg branches, published atomically,
reversible. `plan` is pure; `control` owns the control tables; `runner` drives dbt."""
