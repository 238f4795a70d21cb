"""hf_tokbin.engines.ray: per-part tasks on a real two-node Ray cluster, on loopback only.

Starting Ray is slow, so one driver (``cluster_report``) runs every cluster
check on the session's one cluster (the ``ray_cluster`` fixture); the driver
writes what it observed to ``report.json`` and each test below asserts one
part of it. The cluster runs in its own network namespace (see
``tests/ray_cluster.py``); these tests need root and the ``[ray]`` extra.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest
from ray_cluster import DRIVER_TIMEOUT_S, NODES, run_in_ray_namespace

from hf_tokbin import __version__
from hf_tokbin.engines.ray import (
    _PermanentFailure,
    _run_task,
    package_versions,
    run_tasks,
)
from hf_tokbin.errors import BuildError, CorpusInputError, MissingDependencyError

pytestmark = pytest.mark.slow  # a Ray cluster

pytest_plugins = ["ray_cluster"]  # the session's one cluster

INPUT_ERROR = "corpus/part-000003.parquet: text is not valid UTF-8: expected UTF-8, got byte 0xff at offset 7"

# The driver run inside the namespace. Its task functions live in __main__,
# which Ray ships to the workers by value; each attempt of a task appends a
# line to an attempts file, so the tests can count retries.
DRIVER = r"""
import glob, json, os, signal, subprocess, sys, time
from dataclasses import dataclass

import ray

from hf_tokbin.engines.ray import run_tasks
from hf_tokbin.errors import CorpusInputError


@dataclass(frozen=True)
class Plan:
    work_dir: str
    name: str


def count_attempt(plan, index):
    path = os.path.join(plan.work_dir, f"attempts-{plan.name}-{index}")
    with open(path, "a") as f:
        f.write(f"{os.getpid()}\n")
    with open(path) as f:
        return len(f.read().splitlines())


def attempts(plan, index):
    path = os.path.join(plan.work_dir, f"attempts-{plan.name}-{index}")
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return len(f.read().splitlines())


def where(plan, index, deadline_s=600):
    # A barrier, not a sleep: each one-CPU node runs one task at a time, so
    # once one task per node is running at once, every node has taken one,
    # however slowly a busy machine starts the workers. The deadline only
    # ends a run whose cluster lost a node (the test then fails, not hangs).
    count_attempt(plan, index)
    nodes = sum(node["Alive"] for node in ray.nodes())
    deadline = time.monotonic() + deadline_s
    while (
        len(glob.glob(os.path.join(plan.work_dir, f"attempts-{plan.name}-*"))) < nodes
        and time.monotonic() < deadline
    ):
        time.sleep(0.05)
    return [index, ray.get_runtime_context().get_node_id(), os.getcwd()]


def input_error_at_3(plan, index):
    count_attempt(plan, index)
    if index == 3:
        raise CorpusInputError(
            "corpus/part-000003.parquet", "text is not valid UTF-8", expected="UTF-8", got="byte 0xff at offset 7"
        )
    return index


def killed_on_first_attempt(plan, index):
    if count_attempt(plan, index) == 1 and index == 9:
        os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer or a preempted node would
    return index * 10


def oserror_on_first_attempt(plan, index):
    if count_attempt(plan, index) == 1:
        raise ConnectionResetError("shared storage dropped the connection")
    return index + 100


def missing_file(plan, index):
    count_attempt(plan, index)
    open(os.path.join(plan.work_dir, "not-on-this-node.parquet"), "rb")


def error_of(call):
    try:
        call()
    except Exception as e:
        return {"type": type(e).__name__, "message": str(e)}
    return None


work_dir = os.getcwd()
report = {"driver_cwd": work_dir}
plan = Plan(work_dir, "where")
indices = [5, 2, 7, 0, 3, 1]
report["where"] = run_tasks(where, plan, indices, address=os.environ["RAY_ADDRESS"])
report["where_attempts"] = [attempts(plan, i) for i in indices]
report["connected_after_run"] = ray.is_initialized()

plan = Plan(work_dir, "input_error")
report["input_error"] = error_of(lambda: run_tasks(input_error_at_3, plan, [1, 2, 3, 4]))
report["input_error_attempts"] = attempts(plan, 3)

plan = Plan(work_dir, "killed")
report["killed"] = run_tasks(killed_on_first_attempt, plan, [4, 9])
report["killed_attempts"] = attempts(plan, 9)

plan = Plan(work_dir, "killed_no_retry")
report["killed_no_retry"] = error_of(
    lambda: run_tasks(killed_on_first_attempt, plan, [9], max_retries=0, labels=["input shard 9"])
)
report["killed_no_retry_attempts"] = attempts(plan, 9)

plan = Plan(work_dir, "transient")
report["transient"] = run_tasks(oserror_on_first_attempt, plan, [1, 2], progress=False)
report["transient_attempts"] = [attempts(plan, 1), attempts(plan, 2)]

plan = Plan(work_dir, "missing_file")
report["missing_file"] = error_of(
    lambda: run_tasks(missing_file, plan, [6], max_retries=1, progress=False, labels=["input shard 6"])
)
report["missing_file_attempts"] = attempts(plan, 6)

report["interfaces"] = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True).stdout
report["addresses"] = subprocess.run(["ip", "-o", "addr", "show"], capture_output=True, text=True, check=True).stdout

ray.init()
report["cluster_nodes"] = sorted(node["NodeID"] for node in ray.nodes() if node["Alive"])
in_open_connection = Plan(work_dir, "in_open_connection")
report["in_open_connection"] = run_tasks(oserror_on_first_attempt, in_open_connection, [5], progress=False)
report["connected_after_run_in_open_connection"] = ray.is_initialized()
ray.shutdown()

with open("report.json", "w") as f:
    json.dump(report, f)
"""


# Without a cluster and without RAY_ADDRESS, run_tasks starts Ray on this
# machine for the call, and stops it after.
LOCAL_DRIVER = r"""
import json, os

import ray

from hf_tokbin.engines.ray import run_tasks


def node_of(plan, index):
    return [index * plan, ray.get_runtime_context().get_node_id()]


report = {"results": run_tasks(node_of, 3, [2, 0, 1], progress=False), "connected_after_run": ray.is_initialized()}
with open("report.json", "w") as f:
    json.dump(report, f)
"""


def _driver_report(process: subprocess.CompletedProcess, work_dir: Path, log: Path):
    if process.returncode != 0:
        pytest.fail(f"driver failed ({process.returncode}), Ray's log in {log}:\n{process.stderr[-6000:]}")
    return process, json.loads((work_dir / "report.json").read_text())


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory, ray_cluster):
    work_dir = tmp_path_factory.mktemp("ray_engine")
    return _driver_report(ray_cluster.run(DRIVER, work_dir), work_dir, ray_cluster.log)


@pytest.fixture(scope="module")
def cluster_report(cluster_run):
    return cluster_run[1]


def test_results_come_back_in_the_order_of_indices(cluster_report):
    assert [index for index, _, _ in cluster_report["where"]] == [5, 2, 7, 0, 3, 1]
    assert cluster_report["where_attempts"] == [1] * 6


def test_tasks_run_on_every_node(cluster_report):
    nodes_used = {node for _, node, _ in cluster_report["where"]}
    assert len(cluster_report["cluster_nodes"]) == NODES
    assert nodes_used == set(cluster_report["cluster_nodes"])


def test_workers_do_not_run_in_the_drivers_directory(cluster_report):
    # The fixture's realism: a build that hands relative paths to workers must fail here.
    assert {cwd for _, _, cwd in cluster_report["where"]}.isdisjoint({cluster_report["driver_cwd"]})


def test_run_tasks_disconnects_from_the_cluster_it_joined(cluster_report):
    assert cluster_report["connected_after_run"] is False


def test_run_tasks_keeps_a_connection_it_did_not_open(cluster_report):
    assert cluster_report["in_open_connection"] == [105]
    assert cluster_report["connected_after_run_in_open_connection"] is True


def test_without_address_run_tasks_starts_and_stops_a_local_ray(tmp_path):
    # A namespace of its own without the session's cluster: nothing for ray.init() to find.
    process = run_in_ray_namespace(LOCAL_DRIVER, tmp_path, timeout=DRIVER_TIMEOUT_S, cluster=False)
    _, report = _driver_report(process, tmp_path, tmp_path / "ray_cluster.log")
    assert [value for value, _ in report["results"]] == [6, 0, 3]
    assert len({node for _, node in report["results"]}) == 1
    assert report["connected_after_run"] is False


def test_input_error_arrives_as_raised_and_is_not_retried(cluster_report):
    assert cluster_report["input_error"] == {"type": "CorpusInputError", "message": INPUT_ERROR}
    assert cluster_report["input_error_attempts"] == 1


def test_killed_worker_is_retried_and_the_result_is_right(cluster_report):
    assert cluster_report["killed"] == [40, 90]
    assert cluster_report["killed_attempts"] == 2


def test_killed_worker_without_retries_is_one_clear_build_error(cluster_report):
    error = cluster_report["killed_no_retry"]
    assert error["type"] == "BuildError"
    assert error["message"].startswith(
        "input shard 9: Ray task did not finish: expected success within 0 retries, got WorkerCrashedError: "
    )
    assert "\n" not in error["message"]
    assert cluster_report["killed_no_retry_attempts"] == 1


def test_transient_error_is_retried(cluster_report):
    assert cluster_report["transient"] == [101, 102]
    assert cluster_report["transient_attempts"] == [2, 2]


def test_persistent_oserror_is_one_clear_build_error_after_retries(cluster_report):
    error = cluster_report["missing_file"]
    assert error["type"] == "BuildError"
    assert error["message"].startswith(
        "input shard 6: Ray task did not finish: expected success within 1 retries, got FileNotFoundError: "
    )
    assert "not-on-this-node.parquet" in error["message"]
    assert "\n" not in error["message"]
    assert cluster_report["missing_file_attempts"] == 2


def test_progress_bar_counts_finished_tasks(cluster_run):
    process, _ = cluster_run
    assert "ray tasks: 100%" in process.stderr
    assert "6/6" in process.stderr


def test_namespace_has_only_loopback(cluster_report):
    links = [line.split(":")[1].strip() for line in cluster_report["interfaces"].splitlines()]
    assert links == ["lo"]
    addresses = [line.split()[3] for line in cluster_report["addresses"].splitlines()]
    assert sorted(addresses) == ["127.0.0.1/8", "::1/128"]


def test_core_never_imports_ray():
    code = (
        "import sys, hf_tokbin, hf_tokbin.engines.ray; print(sorted(m for m in sys.modules if m == 'ray' or "
        "m.startswith('ray.')))"
    )
    process = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert process.stdout.strip() == "[]"


def test_missing_ray_is_a_missing_dependency_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` raise ImportError
    with pytest.raises(MissingDependencyError) as caught:
        run_tasks(abs, None, [0])
    hint = "pip install ray, or pip install -e '.[ray]' in the hf_tokbin checkout"
    assert str(caught.value) == f"--engine ray needs ray (HINT: {hint})"


def test_negative_max_retries_is_refused():
    with pytest.raises(BuildError) as caught:
        run_tasks(abs, None, [0], max_retries=-1)
    assert str(caught.value) == "max_retries: expected 0 or more, got -1"


def _raise_input_error(plan, index):
    raise CorpusInputError(
        "corpus/part-000003.parquet", "text is not valid UTF-8", expected="UTF-8", got="byte 0xff at offset 7"
    )


def test_task_body_returns_input_errors_instead_of_raising():
    outcome = _run_task(_raise_input_error, None, 3, package_versions(), "input shard 3")
    assert isinstance(outcome, _PermanentFailure)
    assert type(outcome.error) is CorpusInputError
    assert str(outcome.error) == INPUT_ERROR


def test_task_body_refuses_a_worker_with_other_package_versions():
    tokenizers_version = importlib.metadata.version("tokenizers")
    gigatoken_version = importlib.metadata.version("gigatoken")
    driver_versions = {"hf_tokbin": "0.0.0-driver", "tokenizers": tokenizers_version, "gigatoken": gigatoken_version}
    outcome = _run_task(_raise_input_error, None, 3, driver_versions, "input shard 3")
    assert isinstance(outcome, _PermanentFailure)
    assert type(outcome.error) is BuildError
    assert str(outcome.error) == (
        "input shard 3: package versions on a Ray worker must be the driver's: "
        f"expected hf_tokbin 0.0.0-driver, tokenizers {tokenizers_version}, gigatoken {gigatoken_version}, "
        f"got hf_tokbin {__version__}, tokenizers {tokenizers_version}, gigatoken {gigatoken_version} "
        "(HINT: install the same versions on every node)"
    )


# Every worker of this job finds a gigatoken 0.0.1 dist-info first on its path (a node where
# another gigatoken is installed); the driver has the real one, with which it made the proof.
OTHER_GIGATOKEN_DRIVER = r"""
import json, os

import ray

from hf_tokbin.engines.ray import run_tasks


def version_of_gigatoken(plan, index):
    import importlib.metadata

    return importlib.metadata.version("gigatoken")


site = os.path.join(os.getcwd(), "other-gigatoken")
os.makedirs(os.path.join(site, "gigatoken-0.0.1.dist-info"), exist_ok=True)
with open(os.path.join(site, "gigatoken-0.0.1.dist-info", "METADATA"), "w") as f:
    f.write("Metadata-Version: 2.1\nName: gigatoken\nVersion: 0.0.1\n")
pythonpath = os.pathsep.join(filter(None, [site, os.environ.get("PYTHONPATH")]))
ray.init(address=os.environ["RAY_ADDRESS"], runtime_env={"env_vars": {"PYTHONPATH": pythonpath}})
seen = ray.get(ray.remote(num_cpus=1)(version_of_gigatoken).remote(None, 0))
try:
    run_tasks(version_of_gigatoken, None, [0], progress=False, labels=["input shard 0"])
    error = None
except Exception as e:
    error = {"type": type(e).__name__, "message": str(e)}
ray.shutdown()
with open("report.json", "w") as f:
    json.dump({"worker_gigatoken": seen, "error": error}, f)
"""


def test_every_package_that_can_change_an_id_is_pinned():
    assert set(package_versions()) == {"hf_tokbin", "tokenizers", "gigatoken"}


def test_a_worker_with_another_gigatoken_is_refused_in_one_line(tmp_path, ray_cluster):
    _, report = _driver_report(ray_cluster.run(OTHER_GIGATOKEN_DRIVER, tmp_path), tmp_path, ray_cluster.log)
    assert report["worker_gigatoken"] == "0.0.1"  # the fixture works: the worker sees the other version
    driver = importlib.metadata.version("gigatoken")
    assert report["error"]["type"] == "BuildError"
    message = report["error"]["message"]
    assert message.startswith("input shard 0: package versions on a Ray worker must be the driver's: expected ")
    assert f"gigatoken {driver}, got " in message and "gigatoken 0.0.1" in message
    assert "\n" not in message
