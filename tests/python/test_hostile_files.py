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


def test_the_staging_a_killed_landing_left_on_this_host_is_removed_by_the_next_landing_of_the_folder(tmp_path: Path):
    """A landing killed between staging and its end leaves its hidden folder beside the files.
    The next landing from that folder removes the folders of this host's landings whose process
    is gone, and keeps a live landing's and another host's (it cannot tell whether that one is
    still writing)."""
    import socket
    import subprocess
    import sys

    from pipeline.land import land

    def staging(host: str, pid: int) -> Path:
        folder = tmp_path / f".landing-{host}-{pid}"
        folder.mkdir()
        (folder / "orders.csv.parquet").write_bytes(b"staged rows")
        return folder

    host = socket.gethostname()
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    killed = staging(host, int(ended.stdout))
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = staging(host, running.pid)
        elsewhere = staging("another-host", int(ended.stdout))
        refused = tmp_path / "orders.csv"
        refused.write_text("not,the,contract\n1,2,3\n")
        with pytest.raises(LandingError, match=str(refused)):
            land(None, [refused], table=tables()[0].qualified_name)
    finally:
        running.kill()
    assert not killed.exists()
    assert live.exists() and elsewhere.exists()
