"""The backfill control tables (schema `control`), written only through bound parameters.

- backfill_runs: one row per run: parameters, reason, git commit, status, owner, heartbeat.
  A row in status 'running' or 'paused' is the lock on its models.
- backfill_window_events: append-only, one row per window state: 'pending' for every window
  when the run is created (one statement), 'done' when its dbt run finished, with its start and
  end times and rows added/deleted per table (JSON, from the Iceberg snapshot summaries of the
  branch), 'failed' when its dbt run failed (the error, as JSON {"error": ...}, in the same
  column); in a run of parallel windows, 'loaded' when the models that run their windows at once
  are done and those that run theirs one at a time after them are not yet (the same stats, of
  the first). A window's state is its latest row. Appending (one fast-append commit per window)
  costs half an UPDATE's copy-on-write rewrite, and appends never conflict with each other.
- backfill_tables: per table of a run: the branch, main's snapshot when the branch was cut,
  main's snapshot just before publishing (what `rollback` restores) and after.
- backfill_date_figures: per restatement (`pipeline restate`), model, event date and figure
  (rows, each declared measure): the value before, the value its dry run announced, and the
  value the published table holds: what the missed window cost and what the restatement changed.
- backfill_plans: per run applied from a plan file (`pipeline apply`): the plan's hash, its path
  and its whole text, so the run's scope, code and estimate as reviewed stay with the run.
- backfill_gate_results: per run and data test of the gate (run on the branches before
  publishing): the model it tests, its status and failing rows; the reconciliation's failures are
  the run's mismatch count (pipeline.metrics).
- restatement_signoffs: per key late beyond its model's restatement window that someone signed
  off (`pipeline signoff`): who, why, the hash of the held rows they reviewed, the key's model,
  problem and date, and the impact they approved (JSON), when.
- backfill_gate_exclusions: per restatement and event date its gate leaves out of the framework's
  data tests: the dates of the late rows it held beyond their restatement window (pending
  sign-off), which it does not restate.
- restatement_signoff_uses: per restatement (run) and sign-off of a model it restated: a sign-off
  is spent once a run that used it is published (late_policy.VALID_SIGNOFFS).
- backfill_downstream: per run, event (its publish, its rollback) and node downstream of its
  models that it did not write: each model (how it stands: current, stale, rebuilt, or its
  rebuild failed; the command that refreshes it), each exposure (a consumer to refresh: its
  type, owner and url), and each data test of those models run after the event (status,
  failing rows); `pipeline status RUN_ID` and `pipeline changelog` show them.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import datetime

from pipeline import iceberg
from pipeline.engine import Sql

SCHEMA = "control"
ACTIVE = ("running", "paused")  # a run that holds its models (and its branches)
RESUMABLE = ("running", "failed", "paused")  # a run `resume` continues (a running one once its owner is gone)

_DDL = {
    "backfill_runs": """
        run_id string, status string, start_date date, end_date date, batch_days int,
        selection string, models string, reason string, git_commit string, owner string,
        created_at timestamp, heartbeat_at timestamp, finished_at timestamp, message string""",
    "backfill_window_events": """
        run_id string, window_index int, window_start date, window_end date, status string,
        started_at timestamp, finished_at timestamp, table_stats string, recorded_at timestamp""",
    "backfill_tables": """
        run_id string, table_name string, branch string, base_snapshot_id bigint,
        pre_publish_snapshot_id bigint, published_snapshot_id bigint, rolled_back_at timestamp""",
    "backfill_date_figures": """
        run_id string, model_name string, event_date date, figure string, late_keys int,
        before_value decimal(38, 6), announced_value decimal(38, 6), after_value decimal(38, 6),
        recorded_at timestamp""",
    "backfill_plans": """
        run_id string, plan_hash string, plan_file string, plan string, recorded_at timestamp""",
    "backfill_gate_results": """
        run_id string, data_test string, generic_test string, model_name string, status string, failures bigint,
        recorded_at timestamp""",
    "restatement_signoffs": """
        signoff_id string, signed_by string, reason string, approved_hash string, model_name string,
        unique_key string, problem string, restate_date date, impact string, signed_at timestamp""",
    "backfill_gate_exclusions": """
        run_id string, event_date date, reason string, recorded_at timestamp""",
    "restatement_signoff_uses": """
        run_id string, signoff_id string, model_name string, recorded_at timestamp""",
    "backfill_downstream": """
        run_id string, event string, resource_type string, name string, model_name string,
        materialized string, status string, detail string, failures bigint, recorded_at timestamp""",
}


@dataclass(frozen=True)
class Run:
    run_id: str
    status: str
    start_date: object
    end_date: object
    batch_days: int
    selection: str
    models: list[str]
    reason: str
    git_commit: str
    owner: str
    created_at: datetime | None  # set by the engine on insert
    heartbeat_at: datetime | None
    finished_at: datetime | None
    message: str | None


class Control:
    def __init__(self, spark: Sql) -> None:
        self.spark = spark
        # the runner's heartbeat thread and its main thread both update backfill_runs: one at a
        # time, or their copy-on-write commits would conflict
        self._runs_lock = threading.Lock()
        spark.sql(f"create schema if not exists {SCHEMA}")
        for table, columns in _DDL.items():
            spark.sql(f"create table if not exists {SCHEMA}.{table} ({columns}) using iceberg")

    def _sql(self, text: str, **args):
        return self.spark.sql(text, args=args)

    def _read(self, table: str, text: str, **args) -> list:
        """Rows of a query on a control table, read fresh: through a Thrift Server the runner's
        threads are separate sessions, each with its own Iceberg table cache."""
        iceberg.refreshed(self.spark, f"{SCHEMA}.{table}")
        return self._sql(text, **args).collect()

    # -- runs --------------------------------------------------------------------------------
    def create_run(self, run: Run) -> None:
        self._sql(
            f"insert into {SCHEMA}.backfill_runs values (:run_id, :status, :start_date, :end_date, :batch_days,"
            " :selection, :models, :reason, :git_commit, :owner, current_timestamp(), current_timestamp(), null, null)",
            run_id=run.run_id,
            status=run.status,
            start_date=run.start_date,
            end_date=run.end_date,
            batch_days=run.batch_days,
            selection=run.selection,
            models=json.dumps(run.models),
            reason=run.reason,
            git_commit=run.git_commit,
            owner=run.owner,
        )

    def set_status(self, run_id: str, status: str, message: str | None = None, finished: bool = False) -> None:
        finished_sql = "current_timestamp()" if finished else "finished_at"
        with self._runs_lock:
            self._sql(
                f"update {SCHEMA}.backfill_runs set status = :status, message = :message,"
                f" heartbeat_at = current_timestamp(), finished_at = {finished_sql} where run_id = :run_id",
                status=status,
                message=message,
                run_id=run_id,
            )

    def heartbeat(self, run_id: str, owner: str) -> None:
        with self._runs_lock:
            self._sql(
                f"update {SCHEMA}.backfill_runs set heartbeat_at = current_timestamp(), owner = :owner"
                " where run_id = :run_id",
                owner=owner,
                run_id=run_id,
            )

    def runs(self, run_id: str | None = None) -> list[Run]:
        where = "where run_id = :run_id" if run_id else ""
        rows = self._read(
            "backfill_runs", f"select * from {SCHEMA}.backfill_runs {where} order by created_at", run_id=run_id or ""
        )
        return [Run(**{**row.asDict(), "models": json.loads(row.models)}) for row in rows]

    def runs_of_plan(self, plan_hash: str) -> list[Run]:
        """The runs applied from the plan whose hash is `plan_hash` (backfill_plans), oldest first."""
        applied = {
            row.run_id
            for row in self._read(
                "backfill_plans", f"select run_id from {SCHEMA}.backfill_plans where plan_hash = :h", h=plan_hash
            )
        }
        return [run for run in self.runs() if run.run_id in applied]

    def active_runs(self) -> list[Run]:
        return [run for run in self.runs() if run.status in ACTIVE]

    # -- windows -----------------------------------------------------------------------------
    def add_windows(self, run_id: str, windows) -> None:
        """Every window of a run as 'pending', in one commit."""
        rows, args = [], {"run_id": run_id}
        for n, window in enumerate(windows):
            rows.append(f"(:run_id, :i{n}, :s{n}, :e{n}, 'pending', null, null, null, current_timestamp())")
            args.update({f"i{n}": window.index, f"s{n}": window.start, f"e{n}": window.end})
        self._sql(f"insert into {SCHEMA}.backfill_window_events values {', '.join(rows)}", **args)

    def windows(self, run_id: str) -> list:
        """Each window of a run in its latest state ('done' wins a tie)."""
        return self._read(
            "backfill_window_events",
            "select run_id, window_index, window_start, window_end, status, started_at, finished_at, table_stats,"
            " recorded_at from ("
            " select *, row_number() over (partition by window_index"
            "  order by recorded_at desc, case status when 'done' then 0 else 1 end) as _latest"
            f" from {SCHEMA}.backfill_window_events where run_id = :run_id"
            ") where _latest = 1 order by window_index",
            run_id=run_id,
        )

    def window_done(self, run_id: str, window, started_at: datetime, finished_at: datetime, stats: dict) -> None:
        self._window_ended(run_id, window, "done", started_at, finished_at, stats)

    def window_loaded(self, run_id: str, window, started_at: datetime, finished_at: datetime, stats: dict) -> None:
        """A window of parallel windows whose models that run at once are done (Backfill's parallel
        windows), the models run one at a time after them not yet."""
        self._window_ended(run_id, window, "loaded", started_at, finished_at, stats)

    def window_failed(self, run_id: str, window, started_at: datetime, finished_at: datetime, error: str) -> None:
        self._window_ended(run_id, window, "failed", started_at, finished_at, {"error": error})

    def _window_ended(
        self, run_id: str, window, status: str, started_at: datetime, finished_at: datetime, stats: dict
    ) -> None:
        self._sql(
            f"insert into {SCHEMA}.backfill_window_events values (:run_id, :i, :s, :e, :status, :started,"
            " :finished, :stats, current_timestamp())",
            run_id=run_id,
            i=window.index,
            s=window.start,
            e=window.end,
            status=status,
            started=started_at,
            finished=finished_at,
            stats=json.dumps(stats, sort_keys=True),
        )

    def record_window_runs(
        self, run_id: str, window, invocation_id: str, started_at: datetime, finished_at: datetime, stats: dict
    ) -> None:
        """One row per table of a finished window in control.run_records (the table record_runs
        fills for daily runs; created by the ensure_control_tables macro), in one commit. The
        watermark is the daily pipeline's, which a backfill never moves: before = after."""
        selects, args = (
            [],
            {
                "run_id": run_id,
                "inv": invocation_id,
                "started": started_at,
                "finished": finished_at,
                "ws": window.start,
                "we": window.end,
                "message": f"backfill {run_id} window {window.index + 1}",
            },
        )
        for n, (table, figures) in enumerate(sorted(stats.items())):
            selects.append(
                f"select :inv as invocation_id, :m{n} as model_name, :t{n} as relation_name, :started as started_at,"
                f" :finished as finished_at, :ws as window_start, :we as window_end, cast(:s{n} as int) as snapshots,"
                f" cast(:a{n} as bigint) as added, cast(:d{n} as bigint) as deleted,"
                f" cast(:af{n} as bigint) as added_files,"
                f" cast(:rf{n} as bigint) as removed_files, cast(:p{n} as bigint) as partitions"
            )
            args.update(
                {
                    f"m{n}": table.split(".")[-1],
                    f"t{n}": table,
                    f"s{n}": figures["snapshots"],
                    f"a{n}": figures["added"],
                    f"d{n}": figures["deleted"],
                    f"af{n}": figures["added_files"],
                    f"rf{n}": figures["removed_files"],
                    f"p{n}": figures["changed_partitions"],
                }
            )
        self._sql(
            f"insert into {SCHEMA}.run_records select r.invocation_id, r.model_name, r.relation_name, 'success',"
            " r.started_at, r.finished_at, r.window_start, r.window_end, w.watermark_ts, w.watermark_ts,"
            " unix_timestamp(current_timestamp()) - unix_timestamp(w.watermark_ts), r.snapshots, r.added, r.deleted,"
            " r.added_files, r.removed_files, r.partitions, :message, current_timestamp()"
            f" from ({' union all '.join(selects)}) as r left join {SCHEMA}.etl_watermark as w"
            " on r.model_name = w.pipeline_name",
            **args,
        )

    # -- tables ------------------------------------------------------------------------------
    def add_tables(self, run_id: str, branch: str, base_snapshot_ids: dict[str, int | None]) -> None:
        """The tables of a run with main's snapshot when their branch was cut, in one commit."""
        rows: list[str] = []
        args: dict[str, object] = {"run_id": run_id, "b": branch}
        for n, (table, base) in enumerate(sorted(base_snapshot_ids.items())):
            rows.append(f"(:run_id, :t{n}, :b, cast(:base{n} as bigint), null, null, null)")
            args.update({f"t{n}": table, f"base{n}": base})
        self._sql(f"insert into {SCHEMA}.backfill_tables values {', '.join(rows)}", **args)

    def tables(self, run_id: str) -> list:
        return self._read(
            "backfill_tables",
            f"select * from {SCHEMA}.backfill_tables where run_id = :run_id order by table_name",
            run_id=run_id,
        )

    def rebase_table(self, run_id: str, table: str, base: int | None) -> None:
        """The table's branch was cut again, from main at `base`."""
        self._sql(
            f"update {SCHEMA}.backfill_tables set base_snapshot_id = cast(:base as bigint)"
            " where run_id = :run_id and table_name = :t",
            base=base,
            run_id=run_id,
            t=table,
        )

    def table_published(self, run_id: str, table: str, pre: int, published: int) -> None:
        self._sql(
            f"update {SCHEMA}.backfill_tables set pre_publish_snapshot_id = :pre, published_snapshot_id = :pub"
            " where run_id = :run_id and table_name = :t",
            pre=pre,
            pub=published,
            run_id=run_id,
            t=table,
        )

    # -- the plan a run was applied from -------------------------------------------------------
    def record_plan(self, run_id: str, plan_hash: str, plan_file: str, plan: str) -> None:
        self._sql(
            f"insert into {SCHEMA}.backfill_plans values (:run_id, :hash, :file, :plan, current_timestamp())",
            run_id=run_id,
            hash=plan_hash,
            file=plan_file,
            plan=plan,
        )

    def plan(self, run_id: str):
        """The plan a run was applied from (plan_hash, plan_file, plan), or None."""
        rows = self._read(
            "backfill_plans", f"select * from {SCHEMA}.backfill_plans where run_id = :run_id", run_id=run_id
        )
        return rows[0] if rows else None

    # -- a restatement's figures per date ---------------------------------------------------------
    def record_date_figures(self, run_id: str, rows: list[tuple]) -> None:
        """(model, event_date, figure, late_keys, before, announced, after) rows, in one commit;
        None (null) for the date of a model with no event date (its whole table's figures) and
        for what was not announced (a model over models: recomputed by the restatement)."""

        def text(value) -> str | None:
            return None if value is None else str(value)

        self._append(
            "backfill_date_figures",
            run_id,
            [
                (model, text(day), figure, int(keys), text(before), text(announced), text(after))
                for model, day, figure, keys, before, announced, after in rows
            ],
            (None, "date", None, None, "decimal(38, 6)", "decimal(38, 6)", "decimal(38, 6)"),
        )

    def date_figures(self, run_id: str) -> list:
        return self._read(
            "backfill_date_figures",
            f"select * from {SCHEMA}.backfill_date_figures"
            " where run_id = :run_id order by model_name, event_date, figure",
            run_id=run_id,
        )

    # -- the gate's results ----------------------------------------------------------------------
    def record_gate(self, run_id: str, rows: list[tuple[str, str | None, str | None, str, int | None]]) -> None:
        """(test name, generic test (its macro's name) or None, model name, status, failures) rows,
        in one commit."""
        self._append(
            "backfill_gate_results",
            run_id,
            [
                (test, kind, model, status, None if failures is None else int(failures))
                for test, kind, model, status, failures in rows
            ],
            (None, None, None, None, "bigint"),
        )

    # -- what stands downstream after a publish or a rollback -----------------------------------
    def record_downstream(
        self, run_id: str, event: str, rows: list[tuple[str, str, str | None, str | None, str, str | None, int | None]]
    ) -> None:
        """(resource type, name, model name, materialization, status, detail, failures) rows of
        one event ('published', 'rolled_back') of a run, in one commit."""
        self._append(
            "backfill_downstream",
            run_id,
            [
                (event, kind, name, model, materialized, status, detail, None if failures is None else int(failures))
                for kind, name, model, materialized, status, detail, failures in rows
            ],
            (None, None, None, None, None, None, None, "bigint"),
        )

    def downstream(self, run_id: str, event: str | None = None) -> list:
        """What a run recorded downstream, for one event or all, in order of event and node."""
        return self._read(
            "backfill_downstream",
            f"select * from {SCHEMA}.backfill_downstream where run_id = :run_id"
            " and (:event = '' or event = :event) order by recorded_at, case resource_type when 'exposure' then 0"
            " when 'model' then 1 else 2 end, name",
            run_id=run_id,
            event=event or "",
        )

    # -- sign-offs of rows held beyond their restatement window ---------------------------------
    def record_signoff(
        self,
        signoff_id: str,
        signed_by: str,
        reason: str,
        approved_hash: str,
        keys: list[tuple[str, str, str, object]],
        impact: str,
    ) -> None:
        """(model, unique key, problem, restate date) rows of one sign-off, in one commit."""
        self._append(
            "restatement_signoffs",
            signoff_id,
            [
                (signed_by, reason, approved_hash, model, key, problem, None if day is None else str(day), impact)
                for model, key, problem, day in keys
            ],
            (None, None, None, None, None, None, "date", None),
        )

    def record_signoff_uses(self, run_id: str, uses: list[tuple[str, str]]) -> None:
        """(sign-off id, model) pairs a restatement run restates, in one commit."""
        self._append("restatement_signoff_uses", run_id, sorted(set(uses)), (None, None))

    def record_gate_exclusions(self, run_id: str, dates: list, reason: str) -> None:
        """The event dates a run's gate leaves out, in one commit."""
        self._append(
            "backfill_gate_exclusions", run_id, [(str(day), reason) for day in sorted(set(dates))], ("date", None)
        )

    def gate_exclusions(self, run_id: str) -> list:
        """The event dates a run's gate leaves out (date objects), in order."""
        return [
            r.event_date
            for r in self._read(
                "backfill_gate_exclusions",
                f"select distinct event_date from {SCHEMA}.backfill_gate_exclusions"
                " where run_id = :run_id order by event_date",
                run_id=run_id,
            )
        ]

    def signoffs(self) -> list:
        """Every sign-off, one row each: who, when, why, the hash approved, its keys, models and
        dates, and the published runs that restated it (spent when there is one)."""
        iceberg.refreshed(self.spark, f"{SCHEMA}.restatement_signoff_uses")
        return self._read(
            "restatement_signoffs",
            "select s.signoff_id, first(s.signed_by) as signed_by, first(s.reason) as reason,"
            " first(s.approved_hash) as approved_hash, min(s.signed_at) as signed_at,"
            " count(distinct s.model_name, s.unique_key) as keys,"
            " concat_ws(', ', array_sort(collect_set(s.model_name))) as models,"
            " min(s.restate_date) as first_date, max(s.restate_date) as last_date,"
            " count(distinct s.restate_date) as dates,"
            " concat_ws(', ', array_sort(collect_set(r.run_id))) as restated_by"
            f" from {SCHEMA}.restatement_signoffs as s"
            f" left join {SCHEMA}.restatement_signoff_uses as u on u.signoff_id = s.signoff_id"
            " and u.model_name = s.model_name"
            f" left join {SCHEMA}.backfill_runs as r on r.run_id = u.run_id and r.status = 'published'"
            " group by s.signoff_id order by signed_at",
        )

    def _append(self, table: str, run_id: str, rows: list[tuple], casts: tuple[str | None, ...]) -> None:
        """Rows of `table` in one commit: the run id, each row's values as bound parameters (cast
        to the column's type where `casts` names one), then the insert time."""
        if not rows:
            return
        values, args = [], {"run_id": run_id}
        for n, row in enumerate(rows):
            cells = []
            for i, (value, cast) in enumerate(zip(row, casts, strict=True)):
                args[f"v{n}_{i}"] = value
                cells.append(f"cast(:v{n}_{i} as {cast})" if cast else f":v{n}_{i}")
            values.append(f"(:run_id, {', '.join(cells)}, current_timestamp())")
        self._sql(f"insert into {SCHEMA}.{table} values {', '.join(values)}", **args)

    def table_rolled_back(self, run_id: str, table: str) -> None:
        self._sql(
            f"update {SCHEMA}.backfill_tables set rolled_back_at = current_timestamp()"
            " where run_id = :run_id and table_name = :t",
            run_id=run_id,
            t=table,
        )
