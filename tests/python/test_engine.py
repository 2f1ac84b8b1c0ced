"""The engine layer: parameters rendered as literals (the Thrift path has no server-side binding)
cannot end their literal or inject SQL, and round-trip exactly through real Spark."""

from __future__ import annotations

from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from pipeline.engine import bind, literal

HOSTILE = [
    "it's",
    "'; drop table control.backfill_runs; --",
    "back\\slash' or '1'='1",
    "\\'",
    "tab\tand :colon and `tick`",
    "ünïcødé ✓",
]


@pytest.mark.fast
@pytest.mark.parametrize("value", HOSTILE)
def test_a_string_parameter_stays_one_literal(value: str):
    text = bind("select :v as v", {"v": value})
    body = text[len("select '"):-len("' as v")]
    # every quote inside the literal is escaped, so the literal cannot end early
    unescaped = body.replace("\\\\", "").replace("\\'", "")
    assert "'" not in unescaped


@pytest.mark.fast
def test_placeholders_inside_literals_and_identifiers_are_left_alone():
    assert bind("select ':x', `a:x`, :x", {"x": 1}) == "select ':x', `a:x`, 1"


@pytest.mark.fast
def test_a_missing_parameter_is_an_error():
    with pytest.raises(KeyError, match=":run_id"):
        bind("select * from t where run_id = :run_id", {"other": 1})


@pytest.mark.fast
def test_literals_of_each_type():
    assert literal(None) == "null"
    assert literal(True) == "true"
    assert literal(42) == "42"
    assert literal(Decimal("1.50")) == "1.50"
    assert literal(date(2025, 1, 31)) == "date'2025-01-31'"
    assert literal(datetime(2025, 1, 31, 12, 0, 1, 5)) == "timestamp'2025-01-31 12:00:01.000005'"
    # an aware time is written in UTC, the session time zone of both targets
    aware = datetime(2025, 1, 31, 13, 0, tzinfo=UTC).astimezone()
    assert literal(aware) == "timestamp'2025-01-31 13:00:00'"
    with pytest.raises(TypeError):
        literal(object())


@pytest.mark.spark
def test_hostile_values_round_trip_verbatim_through_spark(spark):
    args = {f"v{n}": value for n, value in enumerate(HOSTILE)}
    text = bind("select " + ", ".join(f":v{n}" for n in range(len(HOSTILE))), args)
    row = spark.sql(text).collect()[0]
    assert list(row) == HOSTILE
    when = datetime(2025, 3, 1, 23, 59, 59, 123456)
    assert spark.sql(bind("select :t, :d", {"t": when, "d": date(2025, 3, 1)})).collect()[0][:] == (
        when, date(2025, 3, 1))


def test_the_embedded_engine_sets_file_permissions_without_a_forked_chmod(spark, tmp_path):
    # Hadoop's local file system forks `chmod` per file written when it lacks its native
    # library; the embedded target's fs.file.impl sets them through java.nio instead, with the
    # same result: the umask applied to files (rw-r--r--) and directories (rwxr-xr-x)
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    fs = jvm.org.apache.hadoop.fs.FileSystem.get(jvm.java.net.URI("file:///"), conf)
    assert fs.getClass().getName() == "backfill_safe.NioLocalFileSystem"
    assert fs.getRawFileSystem().getClass().getName() == "backfill_safe.NioLocalFileSystem$Raw"
    spark.range(3).write.parquet(str(tmp_path / "written"))
    files = [p for p in (tmp_path / "written").iterdir() if p.name.endswith(".parquet")]
    assert files and {oct(p.stat().st_mode & 0o777) for p in files} == {"0o644"}
    assert oct((tmp_path / "written").stat().st_mode & 0o777) == "0o755"
    assert spark.read.parquet(str(tmp_path / "written")).count() == 3
    # an explicit permission is applied as given
    target = jvm.org.apache.hadoop.fs.Path(str(tmp_path / "written" / files[0].name))
    fs.setPermission(target, jvm.org.apache.hadoop.fs.permission.FsPermission.createImmutable(0o640))
    assert oct(files[0].stat().st_mode & 0o777) == "0o640"
