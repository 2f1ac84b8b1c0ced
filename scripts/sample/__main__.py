"""`python -m sample`: the shop example's sample and main job.

    python -m sample generate --out DIR [options]   write a seeded sample of source versions
    python -m sample main [options]                 the main job (generate, land, build, a day of
                                                    changes, the incremental run, a summary)
"""

from __future__ import annotations

import argparse
import sys

from sample import generate as generator

EXIT_CODES = {
    "generate": "0 written; 2 refused (a count below 1, a rate outside 0..1)",
    "main": "0 done; 1 a dbt invocation failed; 2 the embedded warehouse is in use by another process",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sample", description="The shop example's sample and main job.")
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser("generate", help="write a seeded sample of source versions, one folder per day",
                              epilog=f"Exit codes: {EXIT_CODES['generate']}.")
    generator.add_arguments(gen)
    main = commands.add_parser("main", help="the main job on the profile target (DBT_TARGET: embedded Spark by "
                               "default, or cluster)", epilog=f"Exit codes: {EXIT_CODES['main']}.")
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
        try:
            config = generator.config_from_args(args)
        except ValueError as error:  # a count below 1, a rate outside 0..1: named, no traceback
            print(f"refused: {error}")
            return 2
        folders = generator.generate(config, args.out)
        print(f"wrote {len(folders)} day folders into {args.out}")
        return 0
    from pipeline.spark import WarehouseBusy
    from sample import main_job

    try:
        return main_job.main(generator.GeneratorConfig(seed=args.seed, days=args.days,
                                                       orders_per_day=args.orders_per_day))
    except WarehouseBusy as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
