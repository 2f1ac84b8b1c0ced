"""Planning a backfill: strict validation of everything that comes from the command line, and
the split of [start, end) into windows. Pure: no Spark, no dbt."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.manifest import IncrementalModel

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_SPAN = re.compile(r"([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-3]):([0-5]\d)")
_SELECTOR = re.compile(r"\+?[A-Za-z_][A-Za-z0-9_]*\+?")
_RUN_ID = re.compile(r"bf_\d{8}_\d{6}_[0-9a-f]{6}")
MAX_REASON = 500


class PlanError(ValueError):
    """An argument that cannot be used; the message names it."""


class BackfillRefused(RuntimeError):
    """The backfill cannot start, resume, publish or roll back; the message says what to do."""


def parse_date(text: str, argument: str) -> date:
    if not isinstance(text, str) or not _DATE.fullmatch(text):
        raise PlanError(f"{argument} must be a date YYYY-MM-DD, got {text!r}")
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise PlanError(f"{argument} is not a calendar date: {text!r} ({exc})") from exc


def parse_selectors(text: str | None) -> list[str]:
    """Model names, optionally with dbt's `+` graph operators; nothing else reaches dbt."""
    if text is None:
        return []
    selectors = [part for part in re.split(r"[\s,]+", text.strip()) if part]
    if not selectors:
        raise PlanError("--select is empty")
    for selector in selectors:
        if not _SELECTOR.fullmatch(selector):
            raise PlanError(
                f"--select {selector!r} is not a model name (letters, digits, underscores, "
                "optional leading/trailing '+')"
            )
    return selectors


def check_reason(text: str | None, option: str = "--reason") -> str:
    """A recorded text (a reason, a name): not empty, at most MAX_REASON characters, no control
    characters; refusals name `option`."""
    reason = (text or "").strip()
    if not reason:
        raise PlanError(
            f"{option} is required: say why history is rewritten (it is recorded)"
            if option == "--reason"
            else f"{option} is required and must not be blank (it is recorded)"
        )
    if len(reason) > MAX_REASON:
        raise PlanError(f"{option} is longer than {MAX_REASON} characters")
    if any(ord(ch) < 32 and ch != "\t" or 0x7F <= ord(ch) < 0xA0 or ch in "\u2028\u2029" for ch in reason):
        raise PlanError(f"{option} contains control characters")
    return reason


@dataclass(frozen=True)
class DailySpan:
    """A time of day a backfill keeps clear for the fresh data (`not_during`): [start, end) each
    day, in the machine's local time; an end before the start spans midnight (22:00-02:00)."""

    start: time
    end: time

    def __str__(self) -> str:
        return f"{self.start:%H:%M}-{self.end:%H:%M}"

    def meets(self, begin: datetime, seconds: float) -> datetime | None:
        """When the first span that [begin, begin + seconds] touches closes (None: it touches none)."""
        finish = begin + timedelta(seconds=max(0.0, seconds))
        for offset in (-1, 0, 1):
            day = begin.date() + timedelta(days=offset)
            opens = datetime.combine(day, self.start, begin.tzinfo)
            closes = datetime.combine(day + timedelta(days=1 if self.end <= self.start else 0), self.end, begin.tzinfo)
            if opens <= finish and begin < closes:
                return closes
        return None


def parse_daily_span(text: object, argument: str) -> DailySpan:
    """`HH:MM-HH:MM` (24-hour, local time), start and end different; refusals name `argument`."""
    match = _SPAN.fullmatch(text) if isinstance(text, str) else None
    if not match:
        raise PlanError(f"{argument} must be a time span HH:MM-HH:MM (24-hour, local time), got {text!r}")
    span = DailySpan(time(int(match[1]), int(match[2])), time(int(match[3]), int(match[4])))
    if span.start == span.end:
        raise PlanError(f"{argument} {text!r} starts and ends at the same time: an empty span, or a whole day")
    return span


def check_run_id(text: str) -> str:
    if not isinstance(text, str) or not _RUN_ID.fullmatch(text):
        raise PlanError(f"run id {text!r} is not of the form bf_YYYYMMDD_HHMMSS_xxxxxx")
    return text


@dataclass(frozen=True)
class Window:
    index: int
    start: date
    end: date  # exclusive

    @property
    def dbt_vars(self) -> dict[str, str]:
        return {"backfill_start": self.start.isoformat(), "backfill_end": self.end.isoformat()}


def windows(start: date, end: date, batch_days: int, max_batch_days: int) -> list[Window]:
    """[start, end) in consecutive windows of at most batch_days days."""
    if start >= end:
        raise PlanError(f"--start {start} must be before --end {end} (end is exclusive)")
    if not 1 <= batch_days <= max_batch_days:
        raise PlanError(
            f"--batch-days must be between 1 and {max_batch_days} (project var backfill_max_batch_days), "
            f"got {batch_days}"
        )
    result: list[Window] = []
    cursor = start
    while cursor < end:
        stop = min(cursor + timedelta(days=batch_days), end)
        result.append(Window(len(result), cursor, stop))
        cursor = stop
    return result


def windows_for_dates(dates: list[date], batch_days: int, max_batch_days: int) -> list[Window]:
    """Windows covering exactly the given dates: each run of consecutive dates is split into
    windows of at most batch_days days; a date not given is in no window."""
    if not dates:
        raise PlanError("no dates to restate")
    if not 1 <= batch_days <= max_batch_days:
        raise PlanError(
            f"--batch-days must be between 1 and {max_batch_days} (project var backfill_max_batch_days), "
            f"got {batch_days}"
        )
    days = sorted(set(dates))
    result: list[Window] = []
    run_start = previous = days[0]
    for day in days[1:] + [None]:
        if day is not None and day == previous + timedelta(days=1):
            previous = day
            continue
        for window in windows(run_start, previous + timedelta(days=1), batch_days, max_batch_days):
            result.append(Window(len(result), window.start, window.end))
        if day is not None:
            run_start = previous = day
    return result


@dataclass(frozen=True)
class Plan:
    """A backfill's scope: its [start, end) event dates in windows, and the models it runs (the
    ones selected and every incremental model downstream of them)."""

    start: date
    end: date
    batch_days: int
    selection: str
    models: list[IncrementalModel]
    windows: list[Window]
    # a restatement's: the (sign-off id, model) pairs whose signed-off keys it restates, and the
    # event dates of the late rows it holds beyond their restatement window (its gate leaves
    # them out: backfill_gate_dates)
    signoffs: tuple[tuple[str, str], ...] = ()
    held_dates: tuple[date, ...] = ()
