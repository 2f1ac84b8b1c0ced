"""Stands for dbt's Jinja `model` (the node being rendered) when sqlfluff renders the project.

rows_to_merge compares the model's documented columns with the table's; the stand-in declares
the same two placeholder columns that `adapter.get_columns_in_relation` returns. dbt itself
never imports this module.
"""

from __future__ import annotations

columns = {"placeholder_key": None, "placeholder_value": None}
