"""`pipeline package-dir`: where the framework's dbt package is, for a project's packages.yml;
`pipeline dags-dir`: where its Airflow DAGs are, to copy into an Airflow's DAG folder."""

from __future__ import annotations

import click

from pipeline.cli import command


def register(group: click.Group) -> None:
    @command(group, "package-dir", short_help="Print the folder of the framework's dbt package.")
    def package_dir() -> int:
        """Print the folder of the framework's dbt package, for the `local:` entry of a project's
        packages.yml: installed by pip, site-packages/backfill_safe of the environment (its macros,
        audit models and jars/); in a checkout, the repository."""
        from pipeline.paths import FRAMEWORK_DIR

        click.echo(str(FRAMEWORK_DIR))
        return 0

    @command(group, "dags-dir", short_help="Print the folder of the framework's Airflow DAGs.")
    def dags_dir() -> int:
        """Print the folder of the framework's Airflow DAGs (the daily run, a backfill, the
        restatement policy), to copy into an Airflow's DAG folder:
        docs/guides/orchestrate-with-airflow.md."""
        from pipeline.paths import DAGS_DIR

        click.echo(str(DAGS_DIR))
        return 0
