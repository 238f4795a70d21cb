"""A real Ray cluster of three nodes, confined to a fresh network namespace, for tests.

The cluster has three nodes (a head and two workers, one CPU each) in namespaces
of its own, so that nothing it starts can bind or reach any address but
loopback:

- ``unshare --net``: a network namespace whose only interface is ``lo``
  (brought up with ``ip link set lo up``); every Ray port is 127.0.0.1, and
  fixed port numbers cannot collide with anything outside.
- ``--pid --fork --mount-proc``: a PID namespace, so ``ray stop --force``
  and a driver's ``psutil.process_iter()`` see only this cluster's
  processes, never another test's, and the kernel kills every process left
  when the namespace's first process ends.
- ``--kill-child``: if ``unshare`` is killed, its child (and with it the
  whole namespace) dies too.

Two ways to use it:

- :func:`ray_cluster`, a session-scoped pytest fixture (a test module that
  sets ``pytest_plugins = ["ray_cluster"]`` may ask for it): ONE cluster for
  the whole test session, started once and reused by every Ray test, since
  starting Ray takes seconds (minutes on a loaded machine). It is ready
  when :class:`RayCluster` has run a task on each node; every wait is on
  readiness, bounded by a generous deadline, never a fixed sleep.
  :meth:`RayCluster.run` runs a driver script inside the cluster's
  namespaces (``nsenter``).
- :func:`run_in_ray_namespace`: a fresh namespace (and, unless
  ``cluster=False``, a fresh cluster) for one driver, for a test whose nodes
  need an environment of their own.

A driver gets ``RAY_ADDRESS`` in its environment, so ``ray.init()`` (or
``ray.init(address=os.environ["RAY_ADDRESS"])``) joins the cluster. It runs
in the directory of its script, while the nodes (and so the task workers)
run in Ray's private temporary directory, as on a real cluster where the
driver's working directory means nothing to a worker. Its stdout and stderr
are the returned process's; the output of ``ray start`` and ``ray stop`` goes
to ``ray_cluster.log`` (beside the driver script, or in the session
cluster's folder).

Needs root (``unshare`` and ``nsenter``), ``ip`` (iproute2), psutil and Ray
(``pip install -e '.[ray]'`` in the checkout).
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HEAD_PORT = 6379  # free by construction: the namespace is new
WORKER_NODES = 2  # besides the head: the session's cluster has NODES nodes
NODES = 1 + WORKER_NODES
ADDRESS = f"127.0.0.1:{HEAD_PORT}"
OBJECT_STORE_BYTES = 100 * 1024 * 1024  # small: tests move kilobytes, and /dev/shm is shared

# Bounds that only stop a hung run: a loaded machine must never reach them.
READY_DEADLINE_S = 900  # cluster start-up until a task ran on each node
DRIVER_TIMEOUT_S = 1800  # one driver script
STOP_DEADLINE_S = 120  # ray stop at the end of the session

# Ray's settings for a cluster that stays on loopback and phones nobody.
RAY_ENV = {
    "RAY_AUTH_MODE": "disabled",  # no token auth between local test nodes
    "RAY_USAGE_STATS_ENABLED": "0",  # no usage report to the internet
    "RAY_enable_metrics_collection": "0",  # no metrics exporter
}

NAMESPACE_COMMAND = ["unshare", "--net", "--pid", "--fork", "--mount-proc", "--kill-child"]

# Ready means: both nodes alive and each has run a task (its first worker
# process started). Polled, so a slow start only takes longer.
PING_DRIVER = r"""
import os, sys, time

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

deadline = time.monotonic() + float(sys.argv[1])
expected = int(sys.argv[2])
ray.init(address=os.environ["RAY_ADDRESS"], logging_level="ERROR", log_to_driver=False)
while True:
    nodes = [node["NodeID"] for node in ray.nodes() if node["Alive"]]
    if len(nodes) == expected:
        break
    if time.monotonic() > deadline:
        sys.exit(f"ray_cluster: {len(nodes)} of {expected} nodes alive at the deadline")
    time.sleep(0.2)


@ray.remote(num_cpus=1)
def node_id():
    return ray.get_runtime_context().get_node_id()


on = [node_id.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote() for node in nodes]
ready, _ = ray.wait(on, num_returns=len(on), timeout=max(1.0, deadline - time.monotonic()))
if sorted(ray.get(ready)) != sorted(nodes):
    sys.exit("ray_cluster: not every node ran a task by the deadline")
"""


def _ray_command() -> Path:
    ray = Path(sys.executable).parent / "ray"
    if not ray.exists():
        raise RuntimeError(f"{ray}: the ray command is missing: pip install -e '.[ray]' in the hf_tokbin checkout")
    return ray


def _environment(ray_tmpdir: str) -> dict[str, str]:
    """The environment of the nodes and drivers: Ray's quiet settings,
    its private temporary folder, this interpreter's bin first.
    """
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        **RAY_ENV,
        "RAY_TMPDIR": ray_tmpdir,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    env.pop("RAY_ADDRESS", None)
    return env


def _start_nodes_script(ray: Path, log: Path, workers: int = WORKER_NODES) -> str:
    """Bash lines that bring up loopback and start the head and ``workers`` worker nodes, exiting 97/98 on failure."""
    q = shlex.quote
    node = f"--node-ip-address=127.0.0.1 --num-cpus=1 --object-store-memory={OBJECT_STORE_BYTES}"
    start_workers = " \\\n   || ".join(
        f'! {q(str(ray))} start --address={ADDRESS} {node} >>"$log" 2>&1' for _ in range(workers)
    )
    return f"""
set -u
ip link set lo up || exit 97
log={q(str(log))}
stop() {{ {q(str(ray))} stop --force >>"$log" 2>&1; }}
# Start the nodes away from the driver's directory, as on a real cluster:
# Ray workers run in their node's directory, so a relative path that only
# the driver's directory resolves must fail here too.
cd "$RAY_TMPDIR" || exit 97
if ! {q(str(ray))} start --head --port={HEAD_PORT} {node} --include-dashboard=false --disable-usage-stats \\
       >>"$log" 2>&1 \\
   || {start_workers}; then
    echo "ray_cluster: ray start failed; see $log" >&2
    stop
    exit 98
fi
"""


def _driver_command(python: str, driver: Path, *args: str) -> str:
    """The bash line that runs a driver script in its own directory."""
    q = shlex.quote
    return (
        f"cd {q(str(driver.parent))} || exit 97\nRAY_ADDRESS={ADDRESS} "
        f"{q(python)} {q(str(driver))} {' '.join(q(a) for a in args)}\n"
    )


class RayCluster:
    """A cluster of :data:`NODES` nodes running in namespaces of
    its own until :meth:`stop`; drivers join it with :meth:`run`.

    The namespaces' first process is a bash script that starts the nodes,
    then waits for its stdin to close (the session's end, or the test
    process dying) and stops them.
    """

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.log = self.folder / "ray_cluster.log"
        # Ray keeps its sessions (and their Unix sockets, whose paths must stay
        # under 108 bytes, which pytest's deep tmp_path can break) under
        # RAY_TMPDIR: a short private directory, not the machine's /tmp/ray.
        self.ray_tmpdir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
        self.env = _environment(self.ray_tmpdir)
        started = self.folder / "started"
        script = (
            _start_nodes_script(_ray_command(), self.log) + f"touch {shlex.quote(str(started))}\nread -r _\nstop\n"
        )
        with open(self.log, "ab") as log:
            self._holder = subprocess.Popen(
                [*NAMESPACE_COMMAND, "bash", "-c", script],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=log,
                cwd=self.folder,
                env=self.env,
            )
        self._init_pid = None
        try:
            self._wait_until_ready(started, time.monotonic() + READY_DEADLINE_S)
        except BaseException:
            self.stop()
            raise

    def _wait_until_ready(self, started: Path, deadline: float) -> None:
        import psutil

        while not started.exists():  # the nodes are starting
            if self._holder.poll() is not None:
                raise RuntimeError(
                    f"ray_cluster: the cluster did not start ({self._holder.returncode}); see {self.log}"
                )
            if time.monotonic() > deadline:
                raise RuntimeError(f"ray_cluster: ray start still running after {READY_DEADLINE_S} s; see {self.log}")
            time.sleep(0.1)
        # The namespaces' first process is unshare's only child (unshare itself stays outside the PID namespace).
        (child,) = psutil.Process(self._holder.pid).children()
        self._init_pid = child.pid
        ping = self.run(
            PING_DRIVER,
            self.folder / "ping",
            timeout=max(1.0, deadline - time.monotonic()),
            args=(str(max(1.0, deadline - time.monotonic())), str(NODES)),
        )
        if ping.returncode != 0:
            raise RuntimeError(
                f"ray_cluster: the cluster is not ready ({ping.returncode}); see {self.log}:\n{ping.stderr[-4000:]}"
            )

    def run(
        self,
        driver_code: str,
        work_dir: str | os.PathLike,
        timeout: float = DRIVER_TIMEOUT_S,
        args: tuple[str, ...] = (),
    ) -> subprocess.CompletedProcess:
        """Run ``driver_code`` as ``work_dir/driver.py`` in the
        cluster's namespaces, in ``work_dir``; the completed process.

        Returns the driver's return code and captured text output. After
        ``timeout`` seconds the driver (and everything in its process
        group) is killed and ``subprocess.TimeoutExpired`` raised; the
        cluster stays up for the next test.
        """
        work_dir = Path(work_dir)
        work_dir.mkdir(parents=True, exist_ok=True)
        driver = work_dir / "driver.py"
        driver.write_text(driver_code, encoding="utf-8")
        command = [
            "nsenter",
            f"--target={self._init_pid}",
            "--net",
            "--pid",
            "--mount",
            "--",
            "bash",
            "-c",
            _driver_command(sys.executable, driver, *args),
        ]
        # A session of its own: on timeout the whole group goes (nsenter forks the driver into the namespace).
        process = subprocess.Popen(
            command,
            cwd=work_dir,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
        return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)

    def stop(self) -> None:
        """Stop the nodes (the namespaces end with them) and remove Ray's temporary folder."""
        if self._holder.poll() is None:
            self._holder.stdin.close()  # the script's `read` ends: ray stop, exit
            try:
                self._holder.wait(timeout=STOP_DEADLINE_S)
            except subprocess.TimeoutExpired:
                self._holder.kill()  # --kill-child: the namespace and every process in it go too
                self._holder.wait()
        shutil.rmtree(self.ray_tmpdir, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory) -> RayCluster:
    """The session's one cluster of :data:`NODES` nodes (see the module docstring)."""
    cluster = RayCluster(tmp_path_factory.mktemp("ray_session"))
    yield cluster
    cluster.stop()


def run_in_ray_namespace(
    driver_code: str,
    tmp_path: str | os.PathLike,
    timeout: float = READY_DEADLINE_S + DRIVER_TIMEOUT_S,
    cluster: bool = True,
) -> subprocess.CompletedProcess:
    """Run ``driver_code`` as a Python script beside a fresh
    two-node Ray cluster (head and one worker) on loopback only.

    The script is written to ``tmp_path/driver.py`` and run with the current
    interpreter, in ``tmp_path``, with ``RAY_ADDRESS`` set to the head node.
    With ``cluster=False`` no cluster is started and ``RAY_ADDRESS`` is unset,
    so a ``ray.init()`` in the driver starts a Ray instance of its own (still
    inside the namespace).
    Returns the completed process (text stdout and stderr captured); its
    return code is the driver's, 98 if the cluster did not start, 97 if
    loopback could not be brought up. Raises ``subprocess.TimeoutExpired``
    after ``timeout`` seconds, by which time the namespace and every
    process in it are gone. The default only stops a hung run, as the
    session cluster's bounds do: the cluster's start-up (minutes on a loaded
    machine) and then one driver.
    """
    tmp_path = Path(tmp_path)
    driver = tmp_path / "driver.py"
    driver.write_text(driver_code, encoding="utf-8")
    q = shlex.quote
    with tempfile.TemporaryDirectory(prefix="ray-", dir="/tmp") as ray_tmpdir:
        if cluster:
            script = (
                _start_nodes_script(_ray_command(), tmp_path / "ray_cluster.log", workers=1)
                + _driver_command(sys.executable, driver)
                + "status=$?\nstop\nexit $status\n"
            )
        else:
            script = (
                f"ip link set lo up || exit 97\ncd {q(str(tmp_path))} "
                f"|| exit 97\n{q(sys.executable)} {q(str(driver))}\n"
            )
        return subprocess.run(
            [*NAMESPACE_COMMAND, "bash", "-c", script],
            check=False,  # the caller reads the driver's return code
            cwd=tmp_path,
            env=_environment(ray_tmpdir),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
