"""Hostile files against the landing contract, by the thousand (hostile_files.py draws them:
every declared raw table, CSV and Parquet, hostile values, corruptions). Each file is refused by
a LandingError that names it (and the column, when one column is at fault), leaving nothing
staged, or accepted, and then what the append reads is exactly the rows written, in the
contract's types. No Spark: what lands in the tables is test_landing.py's property test."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import event, given

from hostile_files import BAD, BENIGN, HostileFile, hostile_files, hostile_settings, staged_leftovers, tables
from pipeline.land import LandingError, check

pytestmark = pytest.mark.fast


@pytest.fixture(scope="module", autouse=True)
def contract_read():
    tables()  # the contract, read before the draws (reading it may parse the project)


@hostile_settings("LANDING_CASES", 500)
@given(hostile=hostile_files())
def test_a_hostile_file_is_refused_by_name_or_stages_exactly_its_rows(hostile: HostileFile):
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = hostile.write(folder).resolve()
        try:
            checked = check(path, hostile.table, stage=True)
        except LandingError as refused:
            event(f"{hostile.fmt} {hostile.mutation}: refused")
            message = str(refused)
            assert message.startswith(f"{path}: "), message
            assert hostile.mutation not in BENIGN, f"{hostile.mutation}: {message}"
            if hostile.mutation in BAD:
                assert repr(hostile.column) in message, message
            assert staged_leftovers(folder) == []
            return
        event(f"{hostile.fmt} {hostile.mutation}: accepted")
        assert hostile.mutation not in BAD, f"{hostile.mutation} of {hostile.column!r} accepted"
        schema = hostile.table.arrow_schema()
        read = pq.read_table(checked.read_path, columns=schema.names)
        assert [f.type for f in read.schema] == [f.type for f in schema], read.schema
        assert checked.rows == read.num_rows
        if hostile.mutation != "truncate":
            assert read.to_pylist() == hostile.expected()
        if checked.staged:
            checked.staged.unlink()
