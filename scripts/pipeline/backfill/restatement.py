"""A restatement's scope: the rows late beyond their lookback window that the audit view
(audit_unreflected_changes) finds, held once in a table of their own while a restatement is
planned, shown and signed off; the late-data policy applied (rows beyond their restatement
window held back until signed off); and the plan of exactly their dates. What they reach and
cost: pipeline.backfill.impact."""

from __future__ import annotations

import json
import re
import secrets
from datetime import UTC, datetime, timedelta

from rich.console import Console
from rich.table import Table

from pipeline import iceberg
from pipeline.backfill import impact, late_policy, scope
from pipeline.backfill import plan as planning
from pipeline.backfill.control import SCHEMA, Control
from pipeline.backfill.lock import owner_gone
from pipeline.backfill.plan import BackfillRefused, Plan
from pipeline.dbt import Dbt
from pipeline.engine import Sql
from pipeline.manifest import incremental_models, unreflected_changes_relation


class Restatement:
    """The held audit of one process (at most one at a time), and what is read from it."""

    def __init__(self, dbt: Dbt, spark: Sql, console: Console, owner: str) -> None:
        self.dbt = dbt
        self.spark = spark
        self.console = console
        self.owner = owner
        # the audit's rows as plan read them (_hold_audit), for keys and impact; None when no
        # restatement is being planned
        self.held_audit: str | None = None
        # the rows of the held audit held back beyond their restatement window (late_policy)
        self.pending = late_policy.Pending()
        self.behind: list[tuple[str, str]] = []  # models over models behind their upstream (the audit)
        # reached's answer for the audit and arguments it was asked for
        self._reached_cache: tuple[tuple, list[impact.Reached]] | None = None

    def late_key_counts(self, select: str | None) -> list[dict]:
        """Per model and problem of the held audit (plan's): the late keys, their dates and a
        sha256 of the keys themselves (one key traded for another is a different scope), what a
        restatement's scope is made of."""
        wanted = {s.strip("+") for s in planning.parse_selectors(select)}
        rows = self.spark.sql(
            f"select model_name, problem, count(distinct unique_key) as keys, min(restate_date) as first_date,"
            f" max(restate_date) as last_date,"
            f" sha2(concat_ws(',', array_sort(collect_set(unique_key))), 256) as keys_sha256"
            f" from {self.audit()} group by model_name, problem order by model_name, problem"
        ).collect()
        return [
            {
                "model": r.model_name,
                "problem": r.problem,
                "keys": int(r.keys),
                "dates": f"{r.first_date} .. {r.last_date}" if r.first_date else "no event date",
                "keys_sha256": r.keys_sha256,
            }
            for r in rows
            if not wanted or r.model_name in wanted
        ]

    def _check_audit(self, audit: str, wanted: set[str]) -> None:
        """The audit view exists and covers the models asked for (each declared and in it)."""
        if not iceberg.table_exists(self.spark, audit):
            raise BackfillRefused(f"{audit} does not exist yet: build the project first (dbt build)")
        undeclared = sorted(m.name for m in incremental_models() if not m.declared and m.name in wanted)
        if undeclared:
            raise planning.PlanError(
                f"--select {undeclared[0]!r} declares no config.meta.backfill_safe (event_date, lookback, "
                "current_state): the audit cannot see its late changes, so restate cannot handle it; backfill it "
                "by dates (pipeline backfill --start --end --select) or declare it"
            )
        # the view may have been replaced (a new declared model, one not built) since this session
        # last read it: without a refresh the session keeps the definition it read first
        iceberg.refreshed(self.spark, audit)
        covered = iceberg.audited_models(self.spark, audit)
        declared = sorted(m.name for m in incremental_models() if m.declared and (not wanted or m.name in wanted))
        uncovered = [name for name in declared if name not in covered]
        if uncovered:
            raise BackfillRefused(
                f"{audit} does not cover {', '.join(uncovered)} yet (it covers:"
                f" {', '.join(sorted(covered - {''})) or 'no model'}): the view is refreshed at the end of a run"
                f" of a declared model; run it first"
                f" (dbt run --select {' '.join(uncovered)})"
            )
        if late_policy.POLICY_COLUMN not in {r.col_name for r in self.spark.sql(f"describe {audit}").collect()}:
            raise BackfillRefused(
                f"{audit} predates the late-data policy (it has no column {late_policy.POLICY_COLUMN}): the view is "
                "replaced at the end of a run of a declared model; run one first (dbt run)"
            )

    def hold_checked_audit(self, select: str | None) -> set[str]:
        """Check the audit view covers the models asked for (each declared, built and auditable),
        then hold its rows (_hold_audit) with the late-data policy applied, and note the rows held
        back beyond their restatement window (`pending`). The models asked for (none: all)."""
        selectors = planning.parse_selectors(select)
        self.dbt.invoke("parse")
        audit = unreflected_changes_relation()
        wanted = {s.strip("+") for s in selectors}
        self._check_audit(audit, wanted)
        held = self._hold_audit(audit)
        rows = self.spark.sql(
            f"select distinct model_name, problem, differing_columns from {held}"
            " where problem in ('not built', 'not auditable')"
        ).collect()
        unaudited = sorted(
            {(r.model_name, r.problem, r.differing_columns) for r in rows if not wanted or r.model_name in wanted}
        )
        if unaudited:
            self.release_audit()
            raise BackfillRefused(
                f"{'; '.join(f'{name}: declared but {problem} ({why})' for name, problem, why in unaudited)}, so its"
                f" late changes cannot be audited: build it and what it reads first"
                f" (dbt build --select {' '.join('+' + name for name, _, _ in unaudited)})"
            )
        self.pending = late_policy.pending(self.spark, held, wanted)
        self.behind = [
            (r.model_name, f"{r.keys} keys since {r.since} on {r.dates}")
            for r in self.spark.sql(
                f"select model_name, count(*) as keys, min(source_updated_at) as since,"
                f" array_join(array_sort(collect_set(cast(restate_date as string))), ', ') as dates"
                f" from {held} where problem = 'behind' group by model_name order by 1"
            ).collect()
        ]
        for name, why in self.behind:
            self.console.print(
                f"[yellow]behind[/] {name}: {why}: it did not run after its upstream (skipped,"
                f" failed or not selected); a restatement that reaches it fails its gate on its"
                f" other dates: run it first (dbt run --select {name})"
            )
        return wanted

    def plan(self, select: str | None, batch_days: int) -> Plan | None:
        """A backfill of exactly the order dates of the rows that arrived after their lookback
        window (audit_unreflected_changes) and that the late-data policy lets a restatement
        restate (within their model's restatement window, or signed off), for the facts that miss
        them and what is downstream of those; None when there are none. The rows held back
        beyond their window are left in `pending`."""
        wanted = self.hold_checked_audit(select)
        rows = self.spark.sql(
            f"select distinct model_name, restate_date, loaded_event_date, signoff_id from {self.audit()}"
        ).collect()
        rows = [r for r in rows if not wanted or r.model_name in wanted]
        if not rows:
            self.release_audit()
            return None
        dates = sorted({d for r in rows for d in (r.restate_date, r.loaded_event_date) if d is not None})
        # only models with no event date (restated by key on the first window): one day carries them
        windows = planning.windows_for_dates(dates or [datetime.now(UTC).date()], batch_days, scope.max_batch_days())
        try:
            models = scope.models_in_scope(self.dbt, self.spark, sorted({r.model_name for r in rows}))
        except (planning.PlanError, BackfillRefused):
            self.release_audit()
            raise
        signoffs = tuple(sorted({(r.signoff_id, r.model_name) for r in rows if r.signoff_id is not None}))
        held_dates = tuple(
            sorted(
                {
                    d
                    for r in self.spark.sql(
                        f"select distinct restate_date, loaded_event_date from {self.audit(held=True)}"
                    ).collect()
                    for d in r
                    if d is not None
                }
            )
        )
        return Plan(
            windows[0].start,
            windows[-1].end,
            batch_days,
            "restate " + " ".join(sorted({r.model_name for r in rows})),
            models,
            windows,
            signoffs,
            held_dates,
        )

    def check_approval(self, approve: str) -> late_policy.Pending:
        """The rows held now (hold_checked_audit's), when `approve` is their hash or its first 12
        characters or more; else refused, naming the hash of now."""
        pending = self.pending
        if not pending.rows:
            raise BackfillRefused("nothing is held beyond its restatement window: there is nothing to sign off")
        if len(approve) < 12 or not pending.hash.startswith(approve.lower()):
            raise BackfillRefused(
                f"--approve {approve}: the rows held now hash to {pending.hash[:16]} ({pending.keys} keys of "
                f"{', '.join(m.name for m in pending.models)}): they are not the rows approved (they changed since, "
                "or the hash is mistyped); review them again (pipeline signoff) and approve what is shown"
            )
        return pending

    def sign_off(self, signed_by: str, reason: str, approve: str, impacts: list[impact.DateImpact]) -> str:
        """Record a sign-off of the rows held now (`approve`: the hash, or its first 12 characters
        or more, of the rows the signer reviewed, refused when they changed) with the impact
        shown to them; the next restatement restates them. Returns its id."""
        pending = self.check_approval(approve)
        signed_by, reason = planning.check_reason(signed_by, "--by"), planning.check_reason(reason)
        signoff_id = f"so_{datetime.now(UTC):%Y%m%d_%H%M%S}_{secrets.token_hex(3)}"
        entries = impact.impact_entries(impacts)
        recorded = json.dumps(
            [{**entry, "via": list(i.via)} for entry, i in zip(entries, impacts)], sort_keys=True, default=str
        )
        Control(self.spark).record_signoff(signoff_id, signed_by, reason, pending.hash, pending.rows, recorded)
        return signoff_id

    def _hold_audit(self, audit: str) -> str:
        """The audit view's rows, read once into a table (control.restate_audit_<token>) that
        plan, keys and impact all read: each read of the view compares every declared model's
        table with its current state computed from scratch (aggregates summed again), and a
        restatement read it six times or more (the impact's query alone 19-23 s a model under
        the test suite's load). A cached temporary view would not do: Spark finds no cached
        plan equal to a read of Iceberg views, and computes it again (measured). One read also
        makes the keys, the dates and the cost shown the same rows. Dropped when a backfill
        starts, the restatement finds nothing or is refused, or its caller is done with a dry
        run (release_audit). Read a few models' audits at a time (iceberg.audit_chunks): one
        read of 200 models' ran the driver out of memory."""
        self.release_audit()
        self._drop_orphaned_audits()
        held = iceberg.checked_table(f"{SCHEMA}.restate_audit_{secrets.token_hex(4)}")
        # literals (DDL takes no parameter markers), of characters a property value may hold as is
        owner = re.sub(r"[^A-Za-z0-9._:-]", "_", self.owner)
        at = datetime.now(UTC).isoformat(timespec="seconds")
        signoffs = late_policy.signoffs_recorded(self.spark)
        for at_chunk, chunk in enumerate(iceberg.audit_chunks(self.spark, audit)):
            rows = late_policy.held_select(chunk, signoffs)
            if at_chunk == 0:
                self.spark.sql(
                    f"create table {held} using iceberg tblproperties ('backfill_safe.held_by' = '{owner}',"
                    f" 'backfill_safe.held_at' = '{at}') as {rows}"
                )
            else:
                self.spark.sql(f"insert into {held} {rows}")
        self.held_audit = held
        return held

    def _drop_orphaned_audits(self, older_than: timedelta = timedelta(days=1)) -> list[str]:
        """Drop the audit rows a restatement held and never dropped (its process was killed):
        those whose holder (host:pid, table property backfill_safe.held_by) is a process of this
        host that no longer runs, or held longer than `older_than` ago (a holder on another host,
        or one held before holders were recorded). Another live restatement's are kept."""
        dropped = []
        for row in self.spark.sql(f"show tables in {SCHEMA} like 'restate_audit_*'").collect():
            if getattr(row, "isTemporary", False):
                continue
            table = iceberg.checked_table(f"{SCHEMA}.{row.tableName}")
            if table == self.held_audit:
                continue
            properties = {r.key: r.value for r in self.spark.sql(f"show tblproperties {table}").collect()}
            owner, at = properties.get("backfill_safe.held_by"), properties.get("backfill_safe.held_at")
            try:
                held_at = datetime.fromisoformat(at) if at else None
            except ValueError:
                held_at = None
            if (owner and owner_gone(owner)) or held_at is None or datetime.now(UTC) - held_at > older_than:
                self.spark.sql(f"drop table if exists {table} purge")
                dropped.append(table)
        if dropped:
            self.console.print(
                f"dropped the audit rows of restatements that did not end: {', '.join(dropped)}",
                markup=False,
                highlight=False,
            )
        return dropped

    def release_audit(self) -> None:
        """Drop the audit rows plan held (a dry run's caller, once it printed them)."""
        if self.held_audit is not None:
            self.spark.sql(f"drop table if exists {self.held_audit} purge")
            self.held_audit = None

    def audit(self, held: bool = False) -> str:
        """What keys and impact read, as a subquery: the rows plan held that a restatement
        restates (`held`: those held back beyond their restatement window); without a held audit
        the view's, by its flag alone (a sign-off is not seen)."""
        # a model 'behind' its upstream is no late key to restate (hold_checked_audit notes it)
        if self.held_audit is not None:
            return (
                f"(select * from {self.held_audit} where {'' if held else 'not '}held_back"
                " and problem <> 'behind') as audit"
            )
        view = iceberg.refreshed(self.spark, unreflected_changes_relation())
        return (
            f"(select * from {view} where {'' if held else 'not '}{late_policy.POLICY_COLUMN}"
            " and problem <> 'behind') as audit"
        )

    def keys(self, select: str | None, sample: int = 5, held: bool = False) -> Table:
        """Per model, the keys a restatement will rewrite and why, from audit_unreflected_changes:
        how many of each problem ('missing', 'not deleted', 'stale'), the columns that differ, the
        dates, and a sample of keys; then the models over models it reaches (reached). Call after
        plan (which parses and checks the view); `held`: the keys held back beyond their
        restatement window, which a sign-off would release."""
        wanted = {s.strip("+") for s in planning.parse_selectors(select)}
        rows = self.spark.sql(
            f"select model_name, problem, coalesce(differing_columns, '') as differing_columns,"
            f" count(*) as keys, min(restate_date) as first_date, max(restate_date) as last_date,"
            f" count(distinct restate_date) as dates,"
            f" slice(array_sort(collect_list(unique_key)), 1, {int(sample)}) as sample"
            f" from {self.audit(held)} group by model_name, problem, coalesce(differing_columns, '')"
            f" order by model_name, problem, differing_columns"
        ).collect()
        table = Table(
            title=("keys held beyond their restatement window, pending sign-off" if held else "keys to restate")
            + " (audit_unreflected_changes): each differs from the current state "
            "and the next daily run will not pick it up; then the keys of the models over them "
            "that the restatement reaches, recomputed in the same publish"
        )
        for column in ("model", "keys", "why", "columns that differ", "dates", "sample of keys"):
            table.add_column(column, justify="right" if column == "keys" else "left")
        for row in rows:
            if wanted and row.model_name not in wanted:
                continue
            table.add_row(
                row.model_name,
                str(row.keys),
                row.problem,
                row.differing_columns or "-",
                impact.span(row.first_date, row.last_date, row.dates),
                ", ".join(row.sample) + (" ..." if row.keys > len(row.sample) else ""),
            )
        for one in self.reached(select, sample, held):
            table.add_row(
                one.model.name,
                str(one.keys),
                f"reached through {', '.join(one.via)}",
                "(recomputed)",
                impact.span(one.first_date, one.last_date, one.dates),
                ", ".join(one.sample) + (" ..." if one.keys > len(one.sample) else ""),
            )
        return table

    def reached(self, select: str | None, sample: int = 5, held: bool = False) -> list[impact.Reached]:
        """impact.reached of the held audit's late keys (`held`: of those held back beyond their
        restatement window), read once per held audit and arguments. Call after plan."""
        audit = self.audit(held)
        cache_key = (audit, select, sample)
        if self._reached_cache is not None and self._reached_cache[0] == cache_key:
            return self._reached_cache[1]
        found = impact.reached(self.spark, audit, select, sample)
        self._reached_cache = (cache_key, found)
        return found

    def impacts(self, select: str | None, sample: int = 5, held: bool = False) -> list[impact.DateImpact]:
        """impact.impact of the held audit's late keys and the models they reach (`held`: of
        those held back beyond their restatement window, what restating them once signed off
        would do). Call after plan (which parses and checks the view)."""
        return impact.impact(self.spark, self.audit(held), select, sample, self.reached(select, sample, held))

    def record_figures(self, run_id: str, impacts: list[impact.DateImpact]) -> None:
        """Once a restatement is published: each late date's figures as held before it, as
        announced (`impacts`, shown before it started), and as the table holds them now, in
        control.backfill_date_figures (shown by `pipeline status RUN_ID`)."""
        rows = []
        for model in {i.model: i for i in impacts}.values():
            mine = [i for i in impacts if i.model == model.model]
            after = impact.date_figures(self.spark, model.model, model.figures, [i.event_date for i in mine])
            for one in mine:
                held_now = after.get(one.event_date, (0,) * len(one.figures))
                announced_figures = one.restated or (None,) * len(one.figures)
                rows += [
                    (one.model, one.event_date, name, one.keys, before, announced, now)
                    for name, before, announced, now in zip(one.figures, one.held, announced_figures, held_now)
                ]
        Control(self.spark).record_date_figures(run_id, rows)
