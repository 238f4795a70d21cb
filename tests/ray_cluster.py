"""A real two-node Ray cluster, confined to a fresh network namespace, for tests.

:func:`run_in_ray_namespace` runs a Python driver script next to a Ray cluster
of two nodes (a head and one worker, one CPU each) inside namespaces of its
own, so that nothing it starts can bind or reach any address but loopback:

- ``unshare --net``: a network namespace whose only interface is ``lo``
  (brought up with ``ip link set lo up``); every Ray port is 127.0.0.1, and
  fixed port numbers cannot collide with anything outside.
- ``--pid --fork --mount-proc``: a PID namespace, so ``ray stop --force``
  sees (and kills) only this cluster's processes, never another test's, and
  the kernel kills every process left when the namespace's first process
  ends.
- ``--kill-child``: if the test's timeout kills ``unshare``, its child (and
  with it the whole namespace) dies too.

The driver gets ``RAY_ADDRESS`` in its environment, so ``ray.init()`` (or
``ray.init(address=os.environ["RAY_ADDRESS"])``) joins the cluster. It runs
in the directory of its script, while the nodes (and so the task workers)
run in Ray's private temporary directory, as on a real cluster where the
driver's working directory means nothing to a worker. Its stdout and stderr
are the returned process's; the output of ``ray start`` and ``ray stop`` goes
to ``ray_cluster.log`` beside the driver script.

Needs root (``unshare`` of network and PID namespaces), ``ip`` (iproute2)
and Ray (``pip install 'hf_tokbin[ray]'``).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

HEAD_PORT = 6379  # free by construction: the namespace is new
OBJECT_STORE_BYTES = 100 * 1024 * 1024  # small: tests move kilobytes, and /dev/shm is shared

# Ray's settings for a cluster that stays on loopback and phones nobody.
RAY_ENV = {
    "RAY_AUTH_MODE": "disabled",  # no token auth between local test nodes
    "RAY_USAGE_STATS_ENABLED": "0",  # no usage report to the internet
    "RAY_enable_metrics_collection": "0",  # no metrics exporter
}

NAMESPACE_COMMAND = ["unshare", "--net", "--pid", "--fork", "--mount-proc", "--kill-child"]


def _namespace_script(ray: str, python: str, driver: Path, log: Path, cluster: bool) -> str:
    """The bash script run as the namespace's first process: start, drive, stop."""
    q = shlex.quote
    if not cluster:
        return f"ip link set lo up || exit 97\n{q(python)} {q(str(driver))}\n"
    address = f"127.0.0.1:{HEAD_PORT}"
    node = f"--node-ip-address=127.0.0.1 --num-cpus=1 --object-store-memory={OBJECT_STORE_BYTES}"
    return f"""
set -u
ip link set lo up || exit 97
log={q(str(log))}
stop() {{ {q(ray)} stop --force >>"$log" 2>&1; }}
# Start the nodes away from the driver's directory, as on a real cluster:
# Ray workers run in their node's directory, so a relative path that only
# the driver's directory resolves must fail here too.
cd "$RAY_TMPDIR" || exit 97
if ! {q(ray)} start --head --port={HEAD_PORT} {node} --include-dashboard=false --disable-usage-stats >>"$log" 2>&1 \\
   || ! {q(ray)} start --address={address} {node} >>"$log" 2>&1; then
    echo "ray_cluster: ray start failed; see $log" >&2
    stop
    exit 98
fi
cd {q(str(driver.parent))} || exit 97
RAY_ADDRESS={address} {q(python)} {q(str(driver))}
status=$?
stop
exit $status
"""


def run_in_ray_namespace(driver_code: str, tmp_path: str | os.PathLike, timeout: float = 120, cluster: bool = True) -> subprocess.CompletedProcess:
    """Run ``driver_code`` as a Python script beside a two-node Ray cluster on loopback only.

    The script is written to ``tmp_path/driver.py`` and run with the current
    interpreter, in ``tmp_path``, with ``RAY_ADDRESS`` set to the head node.
    With ``cluster=False`` no cluster is started and ``RAY_ADDRESS`` is unset,
    so a ``ray.init()`` in the driver starts a Ray instance of its own (still
    inside the namespace).
    Returns the completed process (text stdout and stderr captured); its
    return code is the driver's, 98 if the cluster did not start, 97 if
    loopback could not be brought up. Raises ``subprocess.TimeoutExpired``
    after ``timeout`` seconds, by which time the namespace and every
    process in it are gone.
    """
    tmp_path = Path(tmp_path)
    driver = tmp_path / "driver.py"
    driver.write_text(driver_code, encoding="utf-8")
    bin_dir = Path(sys.executable).parent
    ray = bin_dir / "ray"
    if not ray.exists():
        raise RuntimeError(f"{ray}: the ray command is missing: pip install 'hf_tokbin[ray]'")
    # Ray keeps its sessions (and their Unix sockets, whose paths must stay
    # under 108 bytes, which pytest's deep tmp_path can break) under
    # RAY_TMPDIR: a short private directory, not the machine's /tmp/ray.
    with tempfile.TemporaryDirectory(prefix="ray-", dir="/tmp") as ray_tmpdir:
        env = {**os.environ, **RAY_ENV, "RAY_TMPDIR": ray_tmpdir, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        env.pop("RAY_ADDRESS", None)
        script = _namespace_script(str(ray), sys.executable, driver, tmp_path / "ray_cluster.log", cluster)
        return subprocess.run(
            [*NAMESPACE_COMMAND, "bash", "-c", script],
            check=False,  # the caller reads the driver's return code
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
