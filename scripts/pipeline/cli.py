"""`pipeline`: the project's command line.

    pipeline generate --out DIR [options]   write a seeded sample of source versions
    pipeline land FILE... [--table T]       validate and append files to the raw tables
    pipeline main                           the main job (generate, land, build, incremental, summary)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline import generate as generator


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pipeline", description="Tooling around the backfill_safe dbt project on Spark + Iceberg."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    gen = commands.add_parser("generate", help="write a seeded sample of source versions, one folder per day")
    generator.add_arguments(gen)

    land = commands.add_parser("land", help="validate files against the raw contract and append them")
    land.add_argument("files", nargs="+", type=Path, help="Parquet or CSV files, or day folders holding them")
    land.add_argument("--table", help="raw table to append to (default: from each file's name)")

    main = commands.add_parser("main", help="the main job on the embedded Spark")
    main.add_argument("--seed", type=int, default=generator.GeneratorConfig.seed,
                      help="random seed of the sample (default %(default)s)")
    main.add_argument("--days", type=int, default=generator.GeneratorConfig.days,
                      help="landing days; all but the last are built first (default %(default)s)")
    main.add_argument("--orders-per-day", type=int, default=generator.GeneratorConfig.orders_per_day,
                      help="new orders per day (default %(default)s)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "generate":
        folders = generator.generate(generator.config_from_args(args), args.out)
        print(f"wrote {len(folders)} day folders into {args.out}")
        return 0
    if args.command == "land":
        from pipeline.land import LandingError, land
        from pipeline.spark import get_spark

        files = [f for p in args.files for f in (sorted(p.iterdir()) if p.is_dir() else [p])]
        try:
            for landed in land(get_spark(), files, table=args.table):
                note = "already landed, skipped" if landed.skipped else f"{landed.rows} rows"
                print(f"{landed.path} -> raw.{landed.table}: {note}")
        except LandingError as error:
            print(f"error: {error}; nothing was appended", file=sys.stderr)
            return 2
        return 0
    from pipeline import main_job

    return main_job.main(generator.GeneratorConfig(seed=args.seed, days=args.days, orders_per_day=args.orders_per_day))


if __name__ == "__main__":
    sys.exit(main())
