"""Benchmark: a `dbt run` through the warm Spark Thrift Server of the local cluster against the
same `dbt run` as a new process on the embedded Spark, on the same data, in one run.

    .venv/bin/python -m harness.bench_cluster [--rounds 3] [--days 3] [--orders-per-day 25] [--out FILE]

1. starts the local cluster (`pipeline.cluster`) in a temporary state folder;
2. the main job on each target (same seeded sample), each in its own state folder;
3. `--rounds` times, alternating: `dbt run` (the daily incremental of the whole project, with
   nothing new landed) as a new process against the cluster (a client without a JVM; the
   server's JVMs are warm), then as a new process on the embedded Spark (JVM start included:
   what a scheduler that starts `dbt run` pays each time);
4. stops the cluster. Prints a markdown table (median and each round's wall time, and dbt's
   own node time) and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pipeline import cluster, paths


def _env(state: Path, target: str, info: cluster.ClusterInfo | None) -> dict[str, str]:
    env = {**os.environ, "PIPELINE_STATE_DIR": str(state), "DBT_TARGET": target,
           "DBT_TARGET_PATH": str(state / "target"), "PYTHONPATH": str(paths.PROJECT_DIR / "scripts")}
    if info is not None:
        env.update(info.env())
    return env


def _run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    return done


def _dbt_run(env: dict[str, str]) -> tuple[float, float]:
    """Wall time of `dbt run` as a new process, and the node time dbt reports."""
    dbt = str(Path(sys.executable).parent / "dbt")
    started = time.monotonic()
    _run([dbt, "run", "--project-dir", str(paths.PROJECT_DIR), "--profiles-dir", str(paths.PROFILES_DIR)], env)
    wall = time.monotonic() - started
    results = json.loads((Path(env["DBT_TARGET_PATH"]) / "run_results.json").read_text())
    return wall, sum(r.get("execution_time", 0.0) for r in results["results"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--orders-per-day", type=int, default=25)
    parser.add_argument("--out", type=Path, default=Path("bench_cluster.json"))
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.days < 2 or args.orders_per_day < 1:
        parser.error("--rounds >= 1, --days >= 2, --orders-per-day >= 1")

    root = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    states = {"cluster": root / "cluster-client", "embedded": root / "embedded"}
    sample = ["--days", str(args.days), "--orders-per-day", str(args.orders_per_day)]
    started = time.monotonic()
    info = cluster.start(root / "cluster-server", timeout=600)
    cluster_start = time.monotonic() - started
    figures: dict[str, dict[str, list[float]]] = {t: {"wall": [], "nodes": []} for t in states}
    try:
        envs = {t: _env(s, t, info if t == "cluster" else None) for t, s in states.items()}
        main_job = {}
        for target, env in envs.items():
            started = time.monotonic()
            _run([sys.executable, "-m", "sample", "main", *sample], env)
            main_job[target] = time.monotonic() - started
        for _ in range(args.rounds):
            for target, env in envs.items():
                wall, nodes = _dbt_run(env)
                figures[target]["wall"].append(wall)
                figures[target]["nodes"].append(nodes)
    finally:
        cluster.stop(root / "cluster-server")

    report = {
        "machine": f"{os.cpu_count()} cores", "rounds": args.rounds, "sample": sample,
        "cluster_start_s": round(cluster_start, 1), "main_job_s": {t: round(v, 1) for t, v in main_job.items()},
        "dbt_run": {t: {"median_wall_s": round(statistics.median(f["wall"]), 1),
                        "walls_s": [round(v, 1) for v in f["wall"]],
                        "median_node_s": round(statistics.median(f["nodes"]), 1)} for t, f in figures.items()},
    }
    args.out.write_text(json.dumps(report, indent=2))
    cl, em = report["dbt_run"]["cluster"], report["dbt_run"]["embedded"]
    print("| `dbt run` (daily incremental, nothing new) | median wall | rounds | dbt node time |")
    print("|---|---|---|---|")
    print(f"| warm Thrift Server, local cluster (client process without a JVM) | {cl['median_wall_s']} s "
          f"| {', '.join(map(str, cl['walls_s']))} | {cl['median_node_s']} s |")
    print(f"| new process on the embedded Spark (JVM start included) | {em['median_wall_s']} s "
          f"| {', '.join(map(str, em['walls_s']))} | {em['median_node_s']} s |")
    print(f"\ncluster start {report['cluster_start_s']} s; main job: cluster {main_job['cluster']:.0f} s, "
          f"embedded {main_job['embedded']:.0f} s; JSON in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
