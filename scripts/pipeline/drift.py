"""Watermark drift, as `pipeline status` and the status page show it: the rows of the macro
watermark_drift (the data test no_watermark_drift's select), compiled by dbt, so the check has
one definition, in SQL, and read a few models at a time (one plan of every model's versions
grew faster than the models: 37 s at 150 watermarks, issue 81). A model's watermark drifted when it is later than every
loadable version of its sources that could have set it; each row names the model, its
watermark, the greatest loadable update time found, and one quarantined version responsible
(none when the watermark was moved by other means)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pipeline.dbt import Dbt
from pipeline.engine import Sql, collected_at_once, united


@dataclass(frozen=True)
class Drift:
    model_name: str
    watermark_ts: datetime
    greatest_loadable_updated_at: datetime | None  # None: no loadable version from scanned_from on
    scanned_from: datetime
    source_name: str | None  # the quarantined version responsible, if any
    source_table: str | None  # source_name.table
    record_key: str | None
    reason: str | None
    updated_at: datetime | None
    source_file: str | None

    def text(self) -> str:
        """One line: the model, the two times and the version responsible."""
        loadable = (
            f"the greatest loadable update time {self.greatest_loadable_updated_at}"
            if self.greatest_loadable_updated_at is not None
            else f"no loadable version at or after {self.scanned_from}"
        )
        line = f"{self.model_name}: watermark {self.watermark_ts} is ahead of its loadable data ({loadable})"
        if self.record_key is None:
            return line + "; no quarantined version explains it: was it moved by hand?"
        return (
            line + f"; quarantined {self.source_table} {self.record_key} at {self.updated_at}"
            f" ({self.reason}) from {self.source_file}"
        )


# between two models' selects in the compiled text of watermark_drift_parts
PART_MARK = "-- backfill_safe: the next model"
READ_TOGETHER = 10  # models' selects in one query, two queries at once (engine.collected_at_once)


def watermark_drift(dbt: Dbt, spark: Sql) -> list[Drift]:
    text = dbt.compiled("{{ backfill_safe.watermark_drift_parts() | join('\\n" + PART_MARK + "\\n') }}")
    parts = [part for part in text.split(PART_MARK) if part.strip()]
    rows = collected_at_once(
        spark, united([f"select * from ({part}) as drift_{i}" for i, part in enumerate(parts)], READ_TOGETHER)
    )
    return [
        Drift(
            model_name=r.model_name,
            watermark_ts=r.watermark_ts,
            greatest_loadable_updated_at=r.greatest_loadable_updated_at,
            scanned_from=r.scanned_from,
            source_name=r.source_name,
            source_table=f"{r.source_name}.{r.source_table}" if r.source_name else None,
            record_key=r.record_key,
            reason=r.reason,
            updated_at=r.updated_at,
            source_file=r._source_file,
        )
        for r in sorted(rows, key=lambda r: r.model_name)
    ]
