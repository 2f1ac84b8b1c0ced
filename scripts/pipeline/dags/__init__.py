"""The framework's Airflow DAGs, shipped with the package as files for an Airflow to parse
(`pipeline dags-dir` prints this folder): `backfill_safe_daily.py`, `backfill_safe_backfill.py`,
`backfill_safe_restatement.py` and the settings they share, `backfill_safe_tasks.py`. They import
Airflow and nothing of the framework: each task runs the team's project's own `pipeline` or `dbt`.
docs/guides/orchestrate-with-airflow.md."""
