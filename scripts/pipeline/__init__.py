"""Python tooling around the dbt project: data generation, landing, dbt invocation, reporting."""
