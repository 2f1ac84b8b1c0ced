"""A local Spark standalone cluster with a Spark Thrift Server on it: what the `cluster` target of
profiles/profiles.yml talks to.

    pipeline cluster start [--thrift-port N] [--timeout S]   (or: bash scripts/cluster.sh start)
    pipeline cluster status
    pipeline cluster stop

(the command line is pipeline/cli/cluster.py; this module is its Python API: start, stop, info,
load_state, process_states; where the executors run: pipeline.cluster_topology).

Four JVMs from the pyspark installation, all bound to 127.0.0.1: a master, two workers (one
core each) and a Thrift Server submitted to the master (its driver runs in this machine's
client mode; its executors run on the workers, one per worker). The Thrift Server gets the
embedded target's Spark settings, read from the profile, except the metastore and warehouse:
the cluster keeps its own Derby metastore and Iceberg warehouse under `<state dir>/cluster/`,
so it never shares a metastore with an embedded session (Derby admits one JVM).

Everything of a cluster lives in `<state dir>/cluster/`: `cluster.json` (pids, ports, URLs),
`logs/<process>.log`, the workers' folders (`work/`, executor logs), metastore and warehouse.
Every JVM carries `-Dpipeline.cluster.dir=<that folder>` on its command line, so `stop` also
finds processes the state file does not name (a worker's executors, an interrupted start).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from pipeline import paths

HOST = "127.0.0.1"
DEFAULT_THRIFT_PORT = 10000  # the cluster target's default PIPELINE_THRIFT_PORT
TAG = "-Dpipeline.cluster.dir="
THRIFT_SERVER = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
STATE_FILE = "cluster.json"


class ClusterError(RuntimeError):
    """The cluster could not be started, or is not running."""


class ClusterRefused(ClusterError):
    """Nothing was started: a cluster already runs, or a given port is taken."""


class ClusterRunning(ClusterRefused):
    """A cluster of this state folder is already running."""


@dataclass(frozen=True)
class ClusterInfo:
    """What `start` launched: written to `<cluster dir>/cluster.json`."""

    cluster_dir: str
    master_url: str
    master_port: int
    master_ui_port: int
    worker_ui_ports: tuple[int, ...]
    thrift_host: str
    thrift_port: int
    thrift_ui_port: int
    pids: dict[str, int] = field(default_factory=dict)  # process name -> pid (= its process group)
    logs: dict[str, str] = field(default_factory=dict)  # process name -> log file
    started_at: str = ""

    @property
    def master_ui_url(self) -> str:
        return f"http://{HOST}:{self.master_ui_port}"

    @property
    def thrift_ui_url(self) -> str:
        return f"http://{HOST}:{self.thrift_ui_port}"

    def env(self) -> dict[str, str]:
        """The environment variables the `cluster` dbt target reads to reach this Thrift Server."""
        return {"PIPELINE_THRIFT_HOST": self.thrift_host, "PIPELINE_THRIFT_PORT": str(self.thrift_port)}

    def exports(self) -> list[str]:
        return [f"export {name}={value}" for name, value in self.env().items()] + ["export DBT_TARGET=cluster"]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> ClusterInfo:
        data = json.loads(text)
        data["worker_ui_ports"] = tuple(data["worker_ui_ports"])
        return cls(**data)


def cluster_dir(state_dir: Path | None = None) -> Path:
    return (state_dir or paths.state_dir()).resolve() / "cluster"


def spark_home() -> Path:
    """The pyspark package folder: it carries bin/spark-class, bin/spark-submit and the jars.

    Deliberately not $SPARK_HOME: another Spark on the machine must not replace the pinned one."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").is_file():
        raise ClusterError(f"{home}/bin/spark-class not found: is pyspark installed? (bash scripts/bootstrap.sh)")
    return home


def free_port() -> int:
    """A TCP port of 127.0.0.1 free right now (another process may take it before we bind it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


def _answers(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=2):
            return True
    except OSError:
        return False


def server_conf(cdir: Path) -> dict[str, str]:
    """The Thrift Server's Spark settings: the embedded target's (profiles/profiles.yml, rendered
    by pipeline.spark), with the cluster's own metastore, warehouse and web UI."""
    from pipeline.spark import spark_conf

    before = dict(os.environ)
    try:
        conf = spark_conf()
    finally:  # spark_conf pins PIPELINE_STATE_DIR & co. in os.environ; leave the caller's alone
        for name in set(os.environ) - set(before):
            del os.environ[name]
        os.environ.update(before)
    # spark.jars stays for `start` to pass as --jars and --driver-class-path (STACK.md)
    conf.pop("spark.driver.memory")  # --driver-memory
    # the embedded target's local file system class (no forked chmod per file) is the driver's
    # only: a cluster's executors would need the jar too, and a real cluster writes to its own
    # storage; the Thrift Server keeps Hadoop's. The framework's jar stays on the driver's class
    # path (spark.driver.extraClassPath, passed by `start` with the Iceberg jar): record_scans
    # reads the scan figures of the server's statements through its ScanLog class
    conf.pop("spark.hadoop.fs.file.impl", None)
    conf.update(
        {
            "spark.sql.warehouse.dir": str(cdir / "warehouse"),
            "spark.hadoop.javax.jdo.option.ConnectionURL": (
                f"jdbc:derby:;databaseName={cdir / 'metastore_db'};create=true"
            ),
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={cdir} {TAG}{cdir}",
            "spark.executor.extraJavaOptions": f"{TAG}{cdir}",
            "spark.driver.host": HOST,
            "spark.driver.bindAddress": HOST,
            # the REST API (/api/v1/applications/<id>/executors) of the Thrift Server's application
            "spark.ui.enabled": "true",
            # one single-core executor per worker, on both workers
            "spark.executor.cores": "1",
            "spark.cores.max": "2",
            # many sessions (dbt's, the runner's, its checkpoint thread's) commit to and read the
            # same tables: a session must see the others' commits at once, not a cached snapshot
            # of up to 30 s ago (measured: a second session kept reading the old snapshot)
            "spark.sql.catalog.spark_catalog.cache-enabled": "false",
        }
    )
    return conf


def info(state_dir: Path | None = None) -> ClusterInfo | None:
    """The running cluster of this state folder, or None (no state file, or none of its processes
    alive)."""
    cdir = cluster_dir(state_dir)
    state = load_state(cdir)
    if state is None:
        return None
    alive = _tagged_pids(cdir)
    return state if any(pid in alive for pid in state.pids.values()) else None


def process_states(state: ClusterInfo) -> dict[str, bool]:
    """Each process of the state file: running or not."""
    alive = _tagged_pids(Path(state.cluster_dir))
    return {name: pid in alive for name, pid in state.pids.items()}


def start(
    state_dir: Path | None = None,
    *,
    thrift_port: int | None = None,
    master_port: int | None = None,
    master_ui_port: int | None = None,
    thrift_ui_port: int | None = None,
    workers: int = 2,
    worker_memory: str = "2g",
    executor_memory: str = "1g",
    driver_memory: str = "1g",
    timeout: float = 180.0,
) -> ClusterInfo:
    """Start master, workers and Thrift Server; return once the Thrift port answers and every
    worker registered with the master.

    Ports not given are free ones; the Thrift port defaults to 10000 (the cluster target's
    default) when that is free. Raises ClusterRunning if this state folder's cluster runs,
    ClusterRefused if `thrift_port` is taken, and ClusterError (naming the log to read) if a
    process exits or the whole start takes more than `timeout` seconds; a failed start stops
    what it started."""
    cdir = cluster_dir(state_dir)
    for folder in (
        "logs",
        "work",
        "local",
        "conf",
        "scratch/hdfs",
        "scratch/local",
        "scratch/resources",
        "scratch/operation_logs",
    ):
        (cdir / folder).mkdir(parents=True, exist_ok=True)
    with _start_lock(cdir):
        _refuse_running(cdir, state_dir)
        (cdir / STATE_FILE).unlink(missing_ok=True)  # stale: none of its processes runs
        conf = server_conf(cdir)
        jar, classes = _server_jars(conf)
        if thrift_port is None:
            thrift_port = DEFAULT_THRIFT_PORT if _port_is_free(DEFAULT_THRIFT_PORT) else free_port()
        elif not _port_is_free(thrift_port):
            raise ClusterRefused(f"port {HOST}:{thrift_port} is in use; give another --thrift-port")
        master_port = master_port or free_port()
        state = ClusterInfo(
            cluster_dir=str(cdir),
            master_url=f"spark://{HOST}:{master_port}",
            master_port=master_port,
            master_ui_port=master_ui_port or free_port(),
            worker_ui_ports=tuple(free_port() for _ in range(workers)),
            thrift_host=HOST,
            thrift_port=thrift_port,
            thrift_ui_port=thrift_ui_port or free_port(),
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        conf["spark.ui.port"] = str(state.thrift_ui_port)
        conf["spark.executor.memory"] = executor_memory
        launcher = _Launcher(state, _environment(cdir), timeout)
        try:
            _launch(launcher, state, cdir, conf, jar, classes, workers, worker_memory, driver_memory)
        except BaseException:
            stop(state_dir)
            raise
        return launcher.state


def _refuse_running(cdir: Path, state_dir: Path | None) -> None:
    """Refused (ClusterRunning) when this state folder's cluster, or a process of an earlier one,
    still runs."""
    running = info(state_dir)
    if running is not None:
        raise ClusterRunning(
            f"a cluster of {cdir} is already running (master {running.master_url}, Thrift Server "
            f"{running.thrift_host}:{running.thrift_port}); stop it first: bash scripts/cluster.sh stop"
        )
    strays = _tagged_pids(cdir)
    if strays:
        raise ClusterRunning(
            f"processes of an earlier cluster of {cdir} still run (pids {sorted(strays)}); "
            "stop them first: bash scripts/cluster.sh stop"
        )


def _server_jars(conf: dict[str, str]) -> tuple[Path, list[Path]]:
    """The Iceberg runtime jar and the framework's JVM classes the Thrift Server loads (taken out
    of `conf`: spark-submit gets them as --jars and --driver-class-path), each checked present."""
    from pipeline.spark import class_path

    jar = Path(conf.pop("spark.jars"))
    if not jar.is_file():
        raise ClusterError(f"Iceberg runtime jar not found at {jar}: run bash scripts/bootstrap.sh")
    classes = class_path(conf)
    conf.pop("spark.driver.extraClassPath")
    for entry in classes:
        if not entry.is_file():
            raise ClusterError(f"the framework's JVM classes not found at {entry}: run bash scripts/bootstrap.sh")
    return jar, classes


def _launch(
    launcher: _Launcher,
    state: ClusterInfo,
    cdir: Path,
    conf: dict[str, str],
    jar: Path,
    classes: list[Path],
    workers: int,
    worker_memory: str,
    driver_memory: str,
) -> None:
    """Master, workers and Thrift Server started, each waited for (its UI or port answers)."""
    from pipeline import cluster_topology

    master_port, thrift_port = state.master_port, state.thrift_port
    launcher.run(
        "master",
        "bin/spark-class",
        "org.apache.spark.deploy.master.Master",
        "--host",
        HOST,
        "--port",
        str(master_port),
        "--webui-port",
        str(state.master_ui_port),
    )
    launcher.wait_for(
        "master", lambda: _answers(state.master_ui_port), f"the master's web UI {state.master_ui_url} did not answer"
    )
    for number, ui_port in enumerate(state.worker_ui_ports, start=1):
        launcher.run(
            f"worker-{number}",
            "bin/spark-class",
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            HOST,
            "--webui-port",
            str(ui_port),
            "--cores",
            "1",
            "--memory",
            worker_memory,
            "--work-dir",
            str(cdir / "work" / f"worker-{number}"),
            state.master_url,
        )
    launcher.run("thriftserver", *_thrift_server_args(state, cdir, conf, jar, classes, driver_memory))
    launcher.wait_for(
        "worker-1",
        lambda: len(cluster_topology.alive_worker_ids(state)) >= workers,
        f"the {workers} workers did not all register with the master",
    )
    launcher.wait_for(
        "thriftserver", lambda: _answers(thrift_port), f"the Thrift Server did not answer on {HOST}:{thrift_port}"
    )


def _thrift_server_args(
    state: ClusterInfo, cdir: Path, conf: dict[str, str], jar: Path, classes: list[Path], driver_memory: str
) -> list[str]:
    """spark-submit's command line of the Thrift Server: on the master, with the jars, the
    Spark settings (`conf`) and Hive's folders under the cluster's own."""
    thrift_port = state.thrift_port
    return [
        "bin/spark-submit",
        "--master",
        state.master_url,
        "--name",
        "backfill_safe thrift server",
        "--class",
        THRIFT_SERVER,
        "--jars",
        str(jar),
        "--driver-class-path",
        os.pathsep.join(dict.fromkeys([str(jar), *map(str, classes)])),
        "--driver-memory",
        driver_memory,
        *[arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")],
        "spark-internal",
        "--hiveconf",
        f"hive.server2.thrift.bind.host={HOST}",
        "--hiveconf",
        f"hive.server2.thrift.port={thrift_port}",
        "--hiveconf",
        f"hive.exec.scratchdir={cdir / 'scratch' / 'hdfs'}",
        "--hiveconf",
        f"hive.exec.local.scratchdir={cdir / 'scratch' / 'local'}",
        "--hiveconf",
        f"hive.downloaded.resources.dir={cdir / 'scratch' / 'resources'}",
        "--hiveconf",
        f"hive.server2.logging.operation.log.location={cdir / 'scratch' / 'operation_logs'}",
    ]


def stop(state_dir: Path | None = None, *, grace: float = 20.0) -> list[int]:
    """Stop the cluster of this state folder: the Thrift Server first, then workers and master
    (SIGTERM to each process group, SIGKILL after `grace` seconds), and any other process carrying
    the folder's tag; remove the state file. Returns the pids signalled; harmless when nothing runs."""
    cdir = cluster_dir(state_dir)
    state = load_state(cdir)
    leaders = list(state.pids.values()) if state else []
    thrift = [state.pids["thriftserver"]] if state and "thriftserver" in state.pids else []
    signalled: list[int] = []
    for group in (thrift, [pid for pid in leaders if pid not in thrift]):
        alive = _tagged_pids(cdir)
        targets = [pid for pid in group if pid in alive]
        for pid in targets:
            _signal(pid, signal.SIGTERM, group=True)
        signalled += targets
        _wait_gone(cdir, targets, grace)
    strays = _tagged_pids(cdir)  # executors of a killed worker, an interrupted start
    for pid in strays:
        _signal(pid, signal.SIGTERM, group=False)
    signalled += sorted(strays)
    _wait_gone(cdir, list(strays), grace)
    for pid in _tagged_pids(cdir):
        _signal(pid, signal.SIGKILL, group=pid in leaders)
    _wait_gone(cdir, signalled, 10.0)
    for pid in signalled:
        _reap(pid)
    left = _tagged_pids(cdir)
    if left:
        raise ClusterError(f"processes of {cdir} survived SIGKILL: {sorted(left)}")
    (cdir / STATE_FILE).unlink(missing_ok=True)
    return signalled


# --- processes -------------------------------------------------------------------------------


class _Launcher:
    """Starts the cluster's processes one by one, each its own process group with its own log,
    recording each in the state file as soon as it runs."""

    def __init__(self, state: ClusterInfo, env: dict[str, str], timeout: float) -> None:
        self.state = state
        self.env = env
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout  # for the whole start
        self.home = spark_home()
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def run(self, name: str, program: str, *args: str) -> None:
        cdir = Path(self.state.cluster_dir)
        log = cdir / "logs" / f"{name}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(self.home / program), *args],
                cwd=cdir,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes[name] = process
        self.state = replace(
            self.state, pids={**self.state.pids, name: process.pid}, logs={**self.state.logs, name: str(log)}
        )
        _save(self.state)

    def wait_for(self, name: str, ready: Callable[[], bool], failure: str) -> None:
        """Until `ready()`; on a timeout or a process that exits, raise naming the log to read."""
        while not ready():
            for other, process in self.processes.items():
                if process.poll() is not None:
                    raise ClusterError(
                        f"{other} exited with code {process.returncode} during the start; read {self.state.logs[other]}"
                    )
            if time.monotonic() > self.deadline:
                raise ClusterError(
                    f"{failure} within {self.timeout:.0f} s; read {self.state.logs[name]} "
                    f"(all logs: {Path(self.state.cluster_dir) / 'logs'})"
                )
            time.sleep(1.0)


def _environment(cdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in (
        "SPARK_CONF_DIR",
        "SPARK_MASTER_OPTS",
        "SPARK_WORKER_OPTS",
        "SPARK_SUBMIT_OPTS",
        "PYSPARK_SUBMIT_ARGS",
    ):
        env.pop(name, None)
    env.update(
        {
            "SPARK_HOME": str(spark_home()),
            "SPARK_CONF_DIR": str(cdir / "conf"),  # empty: nothing from another Spark's configuration
            "SPARK_LOCAL_IP": HOST,  # RPC and web UIs bind to loopback only
            "SPARK_LOCAL_HOSTNAME": HOST,  # and advertise it (URLs in /json/ and the UIs)
            "SPARK_PUBLIC_DNS": HOST,
            "SPARK_LOCAL_DIRS": str(cdir / "local"),
            "SPARK_DAEMON_MEMORY": "512m",  # master and worker daemons
            "SPARK_DAEMON_JAVA_OPTS": f"{TAG}{cdir}",
        }
    )
    return env


def _tagged_pids(cdir: Path) -> set[int]:
    """Live processes whose command line carries this cluster folder's tag (zombies do not)."""
    listing = subprocess.run(["ps", "-ww", "-eo", "pid=,args="], capture_output=True, text=True, check=True).stdout
    tag = f"{TAG}{cdir}"
    found = set()
    for line in listing.splitlines():
        pid, _, args = line.strip().partition(" ")
        if any(word == tag for word in args.split()):
            found.add(int(pid))
    return found


def _signal(pid: int, signum: signal.Signals, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _wait_gone(cdir: Path, pids: list[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid in pids:
            _reap(pid)
        if not set(pids) & _tagged_pids(cdir):
            return
        time.sleep(0.5)


def _reap(pid: int) -> None:
    """Collect the exit status of a process this Python process started (no zombie left)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def load_state(cdir: Path) -> ClusterInfo | None:
    path = cdir / STATE_FILE
    return ClusterInfo.from_json(path.read_text()) if path.is_file() else None


def _save(state: ClusterInfo) -> None:
    path = Path(state.cluster_dir) / STATE_FILE
    temporary = path.with_suffix(".tmp")
    temporary.write_text(state.to_json())
    temporary.replace(path)


@contextmanager
def _start_lock(cdir: Path) -> Iterator[None]:
    """Two `start`s of one folder at once: the second waits, then sees the first's cluster."""
    with (cdir / "start.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
