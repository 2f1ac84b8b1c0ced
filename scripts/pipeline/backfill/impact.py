"""What a late change reaches and what it costs: for a restatement, the models over models its
late keys reach (`reached`), and per model and event date the figures (rows and declared
measures) as the tables hold them and as the restatement will leave them (`impact`: the
postmortem's cost of the missed window); after it, as the tables hold them (`date_figures`).
Reads the held audit (restatement.Restatement) and the late dates' rows; writes nothing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from rich.table import Table

from pipeline import iceberg
from pipeline.backfill import plan as planning
from pipeline.backfill.plan import BackfillRefused
from pipeline.engine import Sql
from pipeline.manifest import IncrementalModel, incremental_models, models_read


@dataclass(frozen=True)
class DateImpact:
    """One event date of a model with keys late beyond their window: its row count and declared
    measures (`figures`) as the table holds them, and as the restatement will leave them. For a
    model over models the restatement reaches (`via`: the upstream models it reaches it
    through), and for a late model whose current state reads another restated model's table
    (`via`: those), `restated` is None: its rows are recomputed from the restated upstream rows,
    which only the restatement computes (recorded with the run, `pipeline status RUN_ID`); its
    `event_date` is None when it has none, and the figures are then the whole table's."""

    model: str
    event_date: date | None
    keys: int  # late keys on this date (current or held); reached keys for a model over models
    sample: list[str]
    figures: tuple[str, ...]  # "rows", then the declared measures
    held: tuple
    restated: tuple | None
    via: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reached:
    """A model over models (scope.changes: {model}) that restating the audit's late keys reaches
    through `via` (its upstream models among the restated and the reached): its scope keys that
    those keys' rows hold, before or after the restatement (`scope_keys`, a select of them), and
    its own keys (unique keys) on them: how many, the event dates they are on, a sample."""

    model: IncrementalModel
    via: tuple[str, ...]
    scope_keys: str
    keys: int
    first_date: date | None
    last_date: date | None
    dates: int
    sample: list[str]
    # per event date its keys are on: (date, how many keys, a sample), dates in order
    by_date: tuple[tuple[date, int, list[str]], ...] = ()


def span(first: date | None, last: date | None, count: int) -> str:
    """A span of event dates, with how many: `2025-01-01 (1)`, `2025-01-01 .. 2025-01-03 (2)`."""
    if first is None:
        return "-"
    return (str(first) if first == last else f"{first} .. {last}") + f" ({count})"


def plain(value: object) -> object:
    """A figure as a plan file holds it: a Decimal as its text, the rest as is."""
    return f"{value.normalize():f}" if isinstance(value, Decimal) else value


def impact_entries(impacts: list[DateImpact]) -> list[dict]:
    """The cost of the missed window as a plan file and a sign-off record it: per model and
    date, the late keys and each figure as held and as restated (None: a model over models,
    which only the restatement computes)."""
    return [
        {
            "model": i.model,
            "date": None if i.event_date is None else str(i.event_date),
            "late_keys": i.keys,
            "figures": {
                name: {"held": plain(held), "restated": None if i.restated is None else plain(after)}
                for name, held, after in zip(i.figures, i.held, i.restated or (None,) * len(i.held))
            },
        }
        for i in impacts
    ]


def impact_table(impacts: list[DateImpact]) -> Table:
    """restate_impact as a table: per model and date, each figure held -> after the restate."""
    table = Table(
        title="the cost of the missed window: each date's figures as the table holds them -> "
        "as they will be after the restatement"
    )
    for column in ("model", "date", "late keys", "figures (held -> restated, difference)", "sample of keys"):
        table.add_column(column, justify="right" if column == "late keys" else "left")
    for impact in impacts:
        if impact.restated is None:
            figures = "; ".join(f"{name} {held}" for name, held in zip(impact.figures, impact.held)) + (
                f" -> recomputed from the restated {', '.join(impact.via)} (recorded with the run)"
            )
        else:
            figures = "; ".join(
                f"{name} {held} -> {after} ({'+' if after - held >= 0 else ''}{after - held})"
                for name, held, after in zip(impact.figures, impact.held, impact.restated)
            )
        table.add_row(
            impact.model,
            "all dates" if impact.event_date is None else str(impact.event_date),
            str(impact.keys),
            figures,
            ", ".join(impact.sample) + (" ..." if impact.keys > len(impact.sample) else ""),
        )
    return table


def reached(spark: Sql, audit: str, select: str | None, sample: int = 5) -> list[Reached]:
    """The models over models (scope.changes: {model}) a restatement of the late keys of
    `audit` (a subquery of the held audit's rows) reaches, upstream first: those whose upstream
    has keys late beyond its window or is itself reached. A model's scope keys reached are
    those its upstream's rows of the late (or reached) keys hold in the column that ties them
    (scope.changes' key), as the upstream's table holds them and as its current state has them
    (a line moved to another date reaches both dates; a deleted order reaches its customer):
    what the restatement recomputes there."""
    wanted = {s.strip("+") for s in planning.parse_selectors(select)}
    models = {m.name: m for m in incremental_models()}
    touched: dict[str, str] = {}  # a restated or reached model -> a predicate on its rows
    for row in spark.sql(f"select distinct model_name from {audit}").collect():
        model = models.get(row.model_name)
        if model is not None and (not wanted or model.name in wanted):
            mine = f"model_name = '{model.name}'"  # a model's name: a dbt identifier
            touched[model.name] = (
                f"cast({iceberg.checked_column(model.unique_key)} as string) in"
                f" (select unique_key from {audit} where {mine})"
            )
    found: list[Reached] = []
    pending = [m for m in models.values() if m.over_models]
    while pending:
        ready = [m for m in pending if not any(u in {p.name for p in pending} for u in m.upstream_models)]
        if not ready:
            break  # a cycle, which dbt refuses before this runs
        for model in ready:
            pending.remove(model)
            via = [(u, column) for u, column in model.upstream_columns if u in touched]
            if via:
                found.append(_reached_model(spark, models, touched, model, via, sample))
    return found


def _reached_model(
    spark: Sql,
    models: dict[str, IncrementalModel],
    touched: dict[str, str],
    model: IncrementalModel,
    via: list[tuple[str, str]],
    sample: int,
) -> Reached:
    """One model over models that `via` (its upstream models touched, with the column that ties
    each) reaches: its keys on the scope keys their touched rows hold; `touched` gains the
    predicate on its own rows."""
    keys = " union ".join(
        f"select {iceberg.checked_column(column)} as scope_key from {iceberg.checked_table(relation)}"
        f" where {touched[upstream]}"
        for upstream, column in via
        for relation in (models[upstream].relation, models[upstream].current_state)
        if relation
    )
    assert model.scope_key is not None  # a model over models declares the key its changes tie by
    scope_key = iceberg.checked_column(model.scope_key)
    mine = f"{scope_key} in (select scope_key from ({keys}) as reached)"
    touched[model.name] = f"({touched[model.name]}) or ({mine})" if model.name in touched else mine
    event_date = iceberg.checked_column(model.event_date) if model.event_date else "cast(null as date)"
    rows = " union ".join(
        f"select cast({iceberg.checked_column(model.unique_key)} as string) as k, {event_date} as d"
        f" from {iceberg.checked_table(relation)} where {mine}"
        for relation in (model.relation, model.current_state)
        if relation
    )
    # the whole (grouping(d) = 1) and per event date, in one read of the table and its
    # current state (reached_impact's figures per date need only the table then)
    found_rows = spark.sql(
        f"select grouping(d) as overall, d, count(distinct k) as keys, min(d) as first_date,"
        f" max(d) as last_date, count(distinct d) as dates,"
        f" slice(array_sort(collect_set(k)), 1, {int(sample)}) as sample"
        f" from ({rows}) as keys group by grouping sets ((d), ())"
    ).collect()
    total = next((r for r in found_rows if r.overall), None)  # no row at all: no key reached
    by_date = tuple(
        sorted(
            ((r.d, int(r.keys), list(r.sample or [])) for r in found_rows if not r.overall and r.d is not None),
            key=lambda entry: str(entry[0]),
        )
    )
    return Reached(
        model,
        tuple(u for u, _ in via),
        mine,
        int(total.keys) if total else 0,
        total.first_date if total else None,
        total.last_date if total else None,
        int(total.dates) if total else 0,
        list(total.sample or []) if total else [],
        by_date,
    )


def impact(spark: Sql, audit: str, select: str | None, sample: int, reached_models: list[Reached]) -> list[DateImpact]:
    """The cost of the missed window, per model and date (the postmortem's figure): for every
    event date of a key late beyond its window (`audit`'s rows; its current date and the date
    the table holds it on), the date's row count and declared measures as the table holds them
    now, and as they will be once restated: the held totals, less the late keys' rows in the
    table, plus their live rows in the current state. Every other key of the date is either
    right or inside the window, which the next daily run loads. Then the figures of the
    `reached_models` as their tables hold them. Reads the table and the current state of the
    late keys' dates only; writes nothing."""
    wanted = {s.strip("+") for s in planning.parse_selectors(select)}
    late = {r.model_name for r in spark.sql(f"select distinct model_name from {audit}").collect()}
    impacts: list[DateImpact] = []
    models = [m for m in incremental_models() if m.name in late and (not wanted or m.name in wanted)]
    restated = [m.name for m in models]
    # a model whose current state reads another restated model's table (through its views):
    # its current state now gives the upstream's rows as they are, not as the restatement
    # leaves them, so what it becomes is the restatement's to compute, as a reached model's
    reads = models_read(restated) if restated else {}
    for model in models:
        if not model.current_state:
            raise BackfillRefused(
                f"{model.name}: declares no current_state, so the cost of its late rows cannot be figured"
            )
        via = tuple(sorted(reads.get(model.name, ())))
        if not model.event_date:
            impacts.append(_undated_impact(spark, model, audit, sample, via))
        else:
            impacts += _dated_impact(spark, model, audit, sample, via)
    for one in reached_models:
        impacts += _reached_impact(spark, one)
    return impacts


def _dated_impact(
    spark: Sql, model: IncrementalModel, audit: str, sample: int, via: tuple[str, ...]
) -> list[DateImpact]:
    """impact of a late model with an event date: per date of its late keys (held or current),
    its figures as held and as restated (None when `via` names restated models it reads)."""
    assert model.current_state is not None and model.event_date is not None  # impact() checked both
    table, state = iceberg.checked_table(model.relation), iceberg.checked_table(model.current_state)
    columns = (model.unique_key, model.event_date, *model.measures)
    bad = [c for c in columns if not iceberg.COLUMN_NAME.fullmatch(c)]
    if bad:
        raise BackfillRefused(f"{model.name}: {bad[0]!r} is not a column name")
    figures = ["count(*) as rows", *(f"coalesce(sum({m}), 0) as {m}" for m in model.measures)]
    names = ["rows", *model.measures]

    def totals(relation: str, where: str) -> str:
        return (
            f"select {model.event_date} as d, {', '.join(figures)} from {relation}"
            f" where {where} group by {model.event_date}"
        )

    mine = f"model_name = '{model.name}'"  # a declared model's name: a dbt identifier
    keys = f"cast({model.unique_key} as string) in (select unique_key from {audit} where {mine})"
    should_be = ", ".join(
        f"coalesce(held.{n}, 0) - coalesce(late_held.{n}, 0) + coalesce(late_current.{n}, 0) as should_{n}"
        for n in names
    )
    rows = spark.sql(f"""
        with late_held as ({totals(table, keys)}),
        late_current as ({totals(state, f"not is_deleted and {keys}")}),
        dates as (select d from late_held union select d from late_current),
        held as ({totals(table, f"{model.event_date} in (select d from dates)")}),
        late_keys as (
            select d, count(distinct unique_key) as keys,
                slice(array_sort(collect_set(unique_key)), 1, {int(sample)}) as sample
            from (
                select unique_key, event_date as d from {audit} where {mine}
                union all
                select unique_key, loaded_event_date as d from {audit} where {mine}
            ) as by_date
            where d is not null
            group by d
        )
        select dates.d, coalesce(late_keys.keys, 0) as keys, late_keys.sample,
            {", ".join(f"coalesce(held.{n}, 0) as held_{n}" for n in names)}, {should_be}
        from dates
        left join held on held.d = dates.d
        left join late_held on late_held.d = dates.d
        left join late_current on late_current.d = dates.d
        left join late_keys on late_keys.d = dates.d
        order by dates.d""").collect()
    return [
        DateImpact(
            model.name,
            row.d,
            int(row.keys),
            list(row.sample or []),
            tuple(names),
            tuple(row[f"held_{n}"] for n in names),
            None if via else tuple(row[f"should_{n}"] for n in names),
            via,
        )
        for row in rows
    ]


def _undated_impact(spark: Sql, model: IncrementalModel, audit: str, sample: int, via: tuple[str, ...]) -> DateImpact:
    """impact of a late model with no event date (restated by key): its figures over the
    whole table as held, and as restated (the held totals, less the late keys' rows, plus
    their live rows in the current state; None when `via` names restated models it reads)."""
    assert model.current_state is not None  # impact() refused a model without one
    table, state = iceberg.checked_table(model.relation), iceberg.checked_table(model.current_state)
    names = ("rows", *model.measures)
    figures = ", ".join(
        f"{sql} as f{i}"
        for i, sql in enumerate(
            ["count(*)", *(f"coalesce(sum({iceberg.checked_column(m)}), 0)" for m in model.measures)]
        )
    )
    mine = f"model_name = '{model.name}'"  # a declared model's name: a dbt identifier
    keys = (
        f"cast({iceberg.checked_column(model.unique_key)} as string) in (select unique_key from {audit} where {mine})"
    )
    count = len(names)
    [row] = spark.sql(f"""
        select late.keys, late.sample, {
        ", ".join(f"held.f{i} as h{i}, late_held.f{i} as l{i}, now.f{i} as c{i}" for i in range(count))
    }
        from (select count(distinct unique_key) as keys,
                slice(array_sort(collect_set(unique_key)), 1, {int(sample)}) as sample
              from {audit} where {mine}) as late
        cross join (select {figures} from {table}) as held
        cross join (select {figures} from {table} where {keys}) as late_held
        cross join (select {figures} from {state} where not is_deleted and {keys}) as now""").collect()
    held = tuple(row[f"h{i}"] for i in range(count))
    restated = None if via else tuple(row[f"h{i}"] - row[f"l{i}"] + row[f"c{i}"] for i in range(count))
    return DateImpact(model.name, None, int(row.keys), list(row.sample or []), names, held, restated, via)


def _reached_impact(spark: Sql, reached_model: Reached) -> list[DateImpact]:
    """A reached model's figures (rows, its declared measures) as its table holds them on
    each event date its reached keys are on (before or after the restatement), or over the
    whole table when it has no event date; with the reached keys per date (reached read them:
    only the table is read here). What they will be after: only the restatement computes
    them."""
    model = reached_model.model
    names = ("rows", *model.measures)
    figures = ", ".join(
        f"{sql} as f{i}"
        for i, sql in enumerate(
            ["count(*)", *(f"coalesce(sum({iceberg.checked_column(m)}), 0)" for m in model.measures)]
        )
    )
    table = iceberg.checked_table(model.relation)
    if not model.event_date:
        [held] = spark.sql(f"select {figures} from {table}").collect()
        return [
            DateImpact(
                model.name, None, reached_model.keys, reached_model.sample, names, tuple(held), None, reached_model.via
            )
        ]
    if not reached_model.by_date:
        return []
    event_date = iceberg.checked_column(model.event_date)
    days = ", ".join(f"date'{planning.parse_date(str(d), 'event date')}'" for d, _, _ in reached_model.by_date)
    held_by_date = {
        str(row[0]): tuple(0 if v is None else v for v in row[1:])
        for row in spark.sql(
            f"select {event_date}, {figures} from {table} where {event_date} in ({days}) group by {event_date}"
        ).collect()
    }
    return [
        DateImpact(
            model.name, d, keys, sample, names, held_by_date.get(str(d), (0,) * len(names)), None, reached_model.via
        )
        for d, keys, sample in reached_model.by_date
    ]


def date_figures(
    spark: Sql, model_name: str, figures: tuple[str, ...], days: list[date | None]
) -> dict[date | None, tuple]:
    """A model's figures (rows, then measures, as impact names them) on these event dates; the
    whole table's under None (a model with no event date)."""
    [model] = [m for m in incremental_models() if m.name == model_name]
    measures = "".join(f", coalesce(sum({iceberg.checked_column(m)}), 0)" for m in figures[1:])
    if not model.event_date:
        [row] = spark.sql(f"select count(*){measures} from {iceberg.checked_table(model.relation)}").collect()
        return {None: tuple(row)}
    event_date = iceberg.checked_column(model.event_date)
    literals = ", ".join(f"date'{d.isoformat()}'" for d in days if d is not None)
    found = spark.sql(
        f"select {event_date} as d, count(*){measures} from {iceberg.checked_table(model.relation)}"
        f" where {event_date} in ({literals}) group by {event_date}"
    ).collect()
    return {row[0]: tuple(row[1:]) for row in found}
