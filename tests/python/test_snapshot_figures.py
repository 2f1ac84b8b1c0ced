"""The rows a commit removed from a table, from its Iceberg snapshot summary (the
`deleted_records` of run records, restate and backfill output): one row each, on a real
merge-on-read table, also when a commit rewrites the delete file of a data file that has one
(its summary then counts the old file's deletes again among the added: issue 78, where a
restatement of one row printed -2)."""

from __future__ import annotations

import jinja2

from pipeline import iceberg, paths

TABLE = "scratch.snapshot_figures"


def _macro_sql(summary: str) -> str:
    """macro deleted_records_figure rendered (it is plain Jinja), for a summary column."""
    text = (paths.FRAMEWORK_DIR / "macros" / "control" / "deleted_records_figure.sql").read_text()
    return jinja2.Environment().from_string(text + "{{ deleted_records_figure('" + summary + "') }}").render().strip()


def test_each_deleted_row_counts_once_when_a_delete_file_is_rewritten(spark):
    spark.sql("create schema if not exists scratch")
    spark.sql(f"drop table if exists {TABLE}")
    spark.sql(f"create table {TABLE} (k int, v int) using iceberg tblproperties ('format-version' = '2',"
              " 'write.delete.mode' = 'merge-on-read', 'write.merge.mode' = 'merge-on-read',"
              " 'write.update.mode' = 'merge-on-read')")  # the marts' modes (dbt_project.yml)
    try:
        spark.sql(f"insert into {TABLE} select id, id from range(10)").collect()
        for key in (1, 2):  # the second delete rewrites the first one's delete file
            spark.sql(f"merge into {TABLE} t using (select {key} as k) s on t.k = s.k when matched then delete")
        spark.sql(f"update {TABLE} set v = 99 where k = 3")  # an update: one row out, one in
        snapshots = spark.sql(f"select summary, {_macro_sql('summary')} as by_sql from {TABLE}.snapshots"
                              " order by committed_at").collect()
        rewritten = snapshots[2].summary
        assert (rewritten["added-position-deletes"], rewritten["removed-position-deletes"]) == ("2", "1")
        assert [iceberg.deleted_records(s.summary) for s in snapshots] == [0, 1, 1, 1]
        assert [s.by_sql for s in snapshots] == [0, 1, 1, 1]
        assert spark.sql(f"select count(*) from {TABLE}").collect()[0][0] == 8
    finally:
        spark.sql(f"drop table if exists {TABLE}")
