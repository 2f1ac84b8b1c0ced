"""The late-data policy: rows late beyond their lookback and within their model's restatement
window are restated by `pipeline restate` (the scheduled deep restatement); older ones are held
until someone signs them off (`pipeline signoff`), then the next restatement restates them.

The audit view flags each row `beyond_restatement_window` (macro restatement_window_days gives
each declared model's window); a restatement holds the view's rows once (Restatement._hold_audit,
held_select below) with `held_back`: beyond the window and not covered by an unspent sign-off.
A sign-off covers the keys it lists (control.restatement_signoffs) until a restatement that used
it is published (control.restatement_signoff_uses, backfill_runs).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date

from pipeline import iceberg
from pipeline.backfill.control import SCHEMA
from pipeline.engine import Sql, collected_at_once

# the keys of each model with a sign-off no published restatement has used yet
VALID_SIGNOFFS = f"""
    select s.model_name, s.unique_key, min(s.signoff_id) as signoff_id
    from {SCHEMA}.restatement_signoffs as s
    left anti join (
        select u.signoff_id, u.model_name
        from {SCHEMA}.restatement_signoff_uses as u
        inner join {SCHEMA}.backfill_runs as r on r.run_id = u.run_id and r.status = 'published'
    ) as spent on spent.signoff_id = s.signoff_id and spent.model_name = s.model_name
    group by s.model_name, s.unique_key"""

POLICY_COLUMN = "beyond_restatement_window"
# late_by_model's reads of the audit, two queries at once (engine.collected_at_once): at 100
# audited models, 5 models' audits a query took 42 s, 20 a query one at a time 60 s, all in one
# query ran out of memory (issue 81)
AUDITS_TOGETHER = 5


def held_select(audit: str, signoffs: bool = True) -> str:
    """The audit view's rows with `held_back` (beyond the window, no unspent sign-off) and the
    sign-off that releases a row beyond the window (`signoff_id`, else null). `signoffs` false:
    no sign-off was ever recorded (control.restatement_signoffs does not exist yet), so every
    row beyond the window is held back."""
    if not signoffs:
        return (
            f"select audit.*, coalesce(audit.{POLICY_COLUMN}, false) as held_back,"
            f" cast(null as string) as signoff_id from {audit} as audit"
        )
    return (
        f"select audit.*, coalesce(audit.{POLICY_COLUMN}, false) and signed.signoff_id is null as held_back,"
        f" case when audit.{POLICY_COLUMN} then signed.signoff_id end as signoff_id"
        f" from {audit} as audit left join ({VALID_SIGNOFFS}) as signed"
        " on signed.model_name = audit.model_name and signed.unique_key = audit.unique_key"
    )


def signoffs_recorded(spark: Sql) -> bool:
    """Whether any sign-off can exist: control.restatement_signoffs (created with the other
    control tables, by Control, when a sign-off or a backfill first runs)."""
    return (
        iceberg.table_exists(spark, f"{SCHEMA}.restatement_signoffs")
        and iceberg.table_exists(spark, f"{SCHEMA}.restatement_signoff_uses")
        and iceberg.table_exists(spark, f"{SCHEMA}.backfill_runs")
    )


def rows_hash(rows: list[tuple[str, str, str, object]]) -> str:
    """sha256 of (model, unique key, problem, restate date) rows, in any order: what a sign-off
    approves. `pipeline signoff --approve` must name the rows held when it runs."""
    lines = sorted("|".join("" if v is None else str(v) for v in row) for row in rows)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@dataclass(frozen=True)
class HeldModel:
    """A model's keys held beyond its restatement window, pending sign-off."""

    name: str
    keys: int
    first_date: date | None
    last_date: date | None
    dates: int
    window_days: int | None
    sample: list[str]


@dataclass(frozen=True)
class Pending:
    """The rows held beyond their restatement window (of the models asked for), and the hash of
    them a sign-off names."""

    models: list[HeldModel] = field(default_factory=list)
    rows: list[tuple[str, str, str, object]] = field(default_factory=list)

    @property
    def keys(self) -> int:
        return sum(m.keys for m in self.models)

    @property
    def hash(self) -> str:
        return rows_hash(self.rows)


def pending(spark: Sql, held: str, wanted: set[str], sample: int = 5) -> Pending:
    """The held-back rows of the held audit `held` (held_select's), of the `wanted` models (all
    when empty)."""
    found = [
        r
        for r in spark.sql(
            f"select distinct model_name, unique_key, problem, restate_date, restatement_window_days from {held}"
            " where held_back and problem <> 'behind'"
        ).collect()
        if not wanted or r.model_name in wanted
    ]
    rows = sorted({(r.model_name, r.unique_key, r.problem, r.restate_date) for r in found}, key=str)
    models = []
    for name in sorted({r.model_name for r in found}):
        mine = [r for r in found if r.model_name == name]
        days = sorted({r.restate_date for r in mine if r.restate_date is not None})
        windows = [r.restatement_window_days for r in mine if r.restatement_window_days is not None]
        keys = sorted({r.unique_key for r in mine})
        models.append(
            HeldModel(
                name,
                len(keys),
                days[0] if days else None,
                days[-1] if days else None,
                len(days),
                max(windows) if windows else None,
                keys[:sample],
            )
        )
    return Pending(models, rows)


@dataclass(frozen=True)
class LateModel:
    """A declared model's rows in the audit view, by what the policy does with them."""

    model_name: str
    not_built: str | None  # 'not built: ...' / 'not auditable: ...', when the audit cannot see it
    restatable: int  # keys the next `pipeline restate` restates (within the window, or signed off)
    restatable_dates: list[str]
    held: int  # keys beyond the window that no sign-off covers
    held_dates: list[str]
    window_days: int | None
    behind: str | None = None  # a model over models its upstream's recorded changes are ahead of


def late_by_model(spark: Sql, view: str) -> list[LateModel]:
    """Per declared model of the audit view `view`: what `pipeline restate` would restate now and
    what waits for a sign-off. Reads the view (every declared model's current state) once, a few
    models' audits a query, two queries at once (iceberg.audit_chunks), and the sign-offs; a view from before the
    policy (no beyond_restatement_window) counts every late key as restatable."""
    columns = {r.col_name for r in spark.sql(f"describe {view}").collect()}
    signoffs = POLICY_COLUMN in columns and signoffs_recorded(spark)

    def held(relation: str) -> str:
        if POLICY_COLUMN in columns:
            return held_select(relation, signoffs)
        return f"select *, false as held_back, cast(null as int) as restatement_window_days from {relation}"

    found = collected_at_once(
        spark,
        [
            f"{LATE_BY_MODEL} from ({held(chunk)}) as late group by model_name"
            for chunk in iceberg.audit_chunks(spark, view, AUDITS_TOGETHER)
        ],
    )
    return sorted(
        (
            LateModel(
                r.model_name,
                r.not_built,
                int(r.restatable),
                sorted(r.restatable_dates),
                int(r.held),
                sorted(r.held_dates),
                r.window_days,
                r.behind_text if r.behind_keys else None,
            )
            for r in found
        ),
        key=lambda late: late.model_name or "",
    )


# per model of a held audit (held_select's rows), what the policy does with them
LATE_BY_MODEL = (
    "select model_name,"
    " max(case when problem in ('not built', 'not auditable') then concat(problem, ': ', differing_columns) end)"
    " as not_built,"
    " count(distinct case when not held_back and unique_key is not null and problem <> 'behind'"
    " then unique_key end) as restatable,"
    " collect_set(case when not held_back and problem <> 'behind' then cast(restate_date as string) end)"
    " as restatable_dates,"
    " count(distinct case when held_back and problem <> 'behind' then unique_key end) as held,"
    " collect_set(case when held_back and problem <> 'behind' then cast(restate_date as string) end)"
    " as held_dates,"
    " max(restatement_window_days) as window_days,"
    " concat(cast(count(case when problem = 'behind' then 1 end) as string), ' keys since ',"
    " cast(min(case when problem = 'behind' then source_updated_at end) as string), ' on ',"
    " array_join(array_sort(collect_set(case when problem = 'behind' then cast(restate_date as string) end)),"
    " ', ')) as behind_text,"
    " count(case when problem = 'behind' then 1 end) as behind_keys"
)
