"""A run's branches, from cut to publish: every table in scope gets a branch named after the run
when it starts (cut again from main if main moved while the run was paused or down); at the
publish every table is fast-forwarded to its branch, after checking that no table's main moved
meanwhile: all published, or none. The snapshot each had before is recorded, so a rollback
restores it."""

from __future__ import annotations

from rich.console import Console

from pipeline import iceberg
from pipeline.backfill import plan as planning
from pipeline.backfill.control import Control
from pipeline.backfill.plan import BackfillRefused
from pipeline.engine import Sql


def cut_branches(spark: Sql, tables: list, run_id: str) -> None:
    """The run's branch on each of its tables not yet published (cut at start; again after a
    crash that came before the branches)."""
    for table in tables:
        if table.published_snapshot_id is None:
            spark.sql(f"alter table {table.table_name} create branch if not exists {run_id}")


def drop_branches(spark: Sql, control: Control, run_id: str) -> None:
    for table in control.tables(run_id):
        spark.sql(f"alter table {table.table_name} drop branch if exists {run_id}")


def main_moved(spark: Sql, tables: list, run_id: str) -> tuple[list[str], list[str]]:
    """The tables whose main moved since their branch was cut, and those whose main carries
    this run already (at its published snapshot or its branch's head: fast-forwarded by this
    run's own publish, which a crash interrupted before it finished or was recorded)."""
    moved, carried = [], []
    for t in tables:
        current = iceberg.current_snapshot_id(spark, t.table_name)
        if current != t.base_snapshot_id:
            if current in (t.published_snapshot_id, iceberg.branch_head(spark, t.table_name, run_id)):
                carried.append(t.table_name)
            else:
                moved.append(t.table_name)
    return moved, carried


def refuse_if_main_moved(spark: Sql, control: Control, run_id: str) -> None:
    """A daily run committed to a table since its branch was cut: its branch would overwrite that.
    A main already at the branch's head was fast-forwarded by this run's own publish, which a
    crash interrupted before it finished the other tables: not moved."""
    moved, carried = main_moved(spark, control.tables(run_id), run_id)
    if moved:
        published = (
            "nothing was published"
            if not carried
            else f"{', '.join(carried)} already carry this backfill (a publish interrupted before it "
            "finished); the others were not published"
        )
        message = (
            f"main of {', '.join(moved)} moved after the backfill started (a daily run committed); "
            f"{published}. Start the backfill again for the same range "
            f"(this run's branches stay for inspection; `pipeline backfill --abandon {run_id}` drops them)"
        )
        control.set_status(run_id, "publish_refused", message, finished=True)
        raise BackfillRefused(message)


def rebase_if_main_moved(spark: Sql, console: Console, control: Control, run_id: str) -> None:
    """A daily run (or anything else) committed to a table while the run was paused or down:
    its branch would overwrite that at the publish. Its branch is cut again from main as it is
    now, and every finished window is run again (a window MERGEs what its dates should hold
    from the sources: the same answer, on the new base). Not once a publish has begun."""
    tables = control.tables(run_id)
    if any(t.published_snapshot_id is not None for t in tables):
        return  # a publish under way: the run finishes it, or refuses
    moved, _ = main_moved(spark, tables, run_id)  # a main that carries this run is not moved
    if not moved:
        return
    for table in moved:
        spark.sql(f"alter table {table} drop branch if exists `{run_id}`")
        control.rebase_table(run_id, table, iceberg.current_snapshot_id(spark, table))
    done = [
        planning.Window(w.window_index, w.window_start, w.window_end)
        for w in control.windows(run_id)
        if w.status in ("done", "loaded")
    ]
    if done:
        control.add_windows(run_id, done)
    console.print(
        f"[yellow]note:[/] main of {', '.join(moved)} moved since the "
        f"branches were cut: cut again from main, and the {len(done)} finished windows run again"
    )


def publish(spark: Sql, console: Console, control: Control, run_id: str) -> None:
    """Fast-forward every table's main to the run's branch (those a crash left published are
    kept); if any fails, the ones published are rolled back and the run is failed."""
    refuse_if_main_moved(spark, control, run_id)
    tables = control.tables(run_id)
    published = []
    try:
        for table in tables:
            # main is at the base snapshot, or already at the branch head if a publish that a
            # crash interrupted got this far: either way the snapshot to restore is the base
            pre = table.base_snapshot_id
            current = iceberg.current_snapshot_id(spark, table.table_name)
            if table.published_snapshot_id is not None and current == table.published_snapshot_id:
                published.append((table.table_name, pre))  # published before the crash
                continue
            if iceberg.branch_head(spark, table.table_name, run_id) != current:
                spark.sql(f"call spark_catalog.system.fast_forward('{table.table_name}', 'main', '{run_id}')")
            published.append((table.table_name, pre))
            now = iceberg.current_snapshot_id(spark, table.table_name)
            assert now is not None  # a table with a branch has a snapshot
            control.table_published(run_id, table.table_name, pre, now)
    except Exception as error:
        for name, pre in published:
            spark.sql(f"call spark_catalog.system.rollback_to_snapshot('{name}', {int(pre)})")
        control.set_status(
            run_id, "failed", f"publish failed, published tables rolled back: {error}"[:2000], finished=True
        )
        raise
    drop_branches(spark, control, run_id)
    control.set_status(run_id, "published", finished=True)
    console.print(f"[green]published[/] {run_id}: {', '.join(t.table_name for t in tables)}")


def roll_back(spark: Sql, control: Control, run_id: str, by: str) -> None:
    """Restore every table of a published run to the snapshot it had before the publish;
    refused when a table's main changed since (other than by compaction)."""
    tables = control.tables(run_id)
    moved = [
        t.table_name for t in tables if not iceberg.only_compactions_since(spark, t.table_name, t.published_snapshot_id)
    ]
    if moved:
        raise BackfillRefused(
            f"main of {', '.join(moved)} changed after {run_id} was published; rolling back "
            "would also undo those later commits. Restate the range with a new backfill instead"
        )
    for table in tables:
        if table.pre_publish_snapshot_id != table.published_snapshot_id:
            spark.sql(
                f"call spark_catalog.system.rollback_to_snapshot('{table.table_name}', "
                f"{int(table.pre_publish_snapshot_id)})"
            )
        control.table_rolled_back(run_id, table.table_name)
    control.set_status(run_id, "rolled_back", f"rolled back by {by}", finished=True)
