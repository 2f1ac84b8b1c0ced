"""The sample generator: deterministic, and every day carries every kind of change."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from sample.generate import GeneratorConfig, generate

pytestmark = pytest.mark.fast


def read_days(folders: list[Path]) -> list[dict[str, list[dict]]]:
    return [{p.stem: pq.read_table(p).to_pylist() for p in sorted(folder.iterdir())} for folder in folders]


def test_same_seed_gives_the_same_versions_and_another_seed_does_not(tmp_path: Path):
    config = GeneratorConfig(days=3, orders_per_day=20)
    first = read_days(generate(config, tmp_path / "a"))
    assert first == read_days(generate(config, tmp_path / "b"))
    assert first != read_days(generate(GeneratorConfig(days=3, orders_per_day=20, seed=7), tmp_path / "c"))


def test_every_day_after_the_first_carries_every_kind_of_change(tmp_path: Path):
    days = read_days(generate(GeneratorConfig(days=4, orders_per_day=30), tmp_path))
    seen_orders: dict[int, dict] = {}
    for index, day in enumerate(days):
        today = GeneratorConfig().start_date.toordinal() + index
        orders, items = day.get("orders", []), day.get("order_items", [])
        if index > 0:
            keys = Counter(tuple(sorted(r.items())) for r in orders + items)
            assert any(n > 1 for n in keys.values()), "duplicates"
            assert any(r["is_deleted"] for r in orders + items), "deletions"
            assert any(r["order_id"] in seen_orders and r["updated_at"] < seen_orders[r["order_id"]]["updated_at"]
                       for r in orders), "out-of-order older version"
            assert any(r["ordered_at"].date().toordinal() < today and r["updated_at"].date().toordinal() == today
                       and r["order_id"] in seen_orders and r["channel"] != seen_orders[r["order_id"]]["channel"]
                       for r in orders) or any(
                r["order_id"] in seen_orders and r["status"] != seen_orders[r["order_id"]]["status"]
                and not r["is_deleted"] for r in orders), "header-only change"
            assert any(r["order_id"] in seen_orders and not r["is_deleted"]
                       and seen_orders[r["order_id"]]["ordered_at"].date().toordinal() < today for r in items), \
                "correction of an older order's line"
            assert any(r["updated_at"].date().toordinal() < today for r in orders + items), "late-arriving versions"
        for r in orders:
            if r["order_id"] not in seen_orders or r["updated_at"] > seen_orders[r["order_id"]]["updated_at"]:
                seen_orders[r["order_id"]] = r


@pytest.mark.parametrize("options", [dict(days=0), dict(delete_rate=1.5), dict(file_format="json")])
def test_bad_options_are_refused(options: dict):
    with pytest.raises(ValueError):
        GeneratorConfig(**options)


def test_csv_output_lands_under_the_same_contract(tmp_path: Path):
    from pipeline import contract
    from pipeline.land import table_for, validate

    [folder] = generate(GeneratorConfig(days=1, orders_per_day=5, file_format="csv"), tmp_path)
    for path in folder.iterdir():
        assert validate(path, table_for(path, contract.load())) > 0


@pytest.mark.parametrize("options", [["--days", "0"], ["--delete-rate", "1.5"]])
def test_the_command_refuses_bad_options_by_name_and_writes_nothing(options: list[str], tmp_path: Path, capsys):
    from sample.__main__ import main

    assert main(["generate", "--out", str(tmp_path / "sample"), *options]) == 2
    printed = capsys.readouterr().out
    assert printed.startswith("refused: ") and ("days" in printed or "delete_rate" in printed), printed
    assert not (tmp_path / "sample").exists()
