"""Stands for dbt's Jinja `modules` (re, datetime) when sqlfluff renders the project's macros.

dbt itself never imports this package.
"""

import datetime
import re

__all__ = ["datetime", "re"]
