"""A sweep gives the same DataFrame on the local pool and on Ray, with any
number of workers, and each row is what the single call gives."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import nanopu
from conftest import REPO

POINTS = [
    {"program": "loopback", "count": 300, "rate_mrps": rate, "msg_bytes": size, "label": f"{size} B"}
    for rate in (2.0, 8.0)
    for size in (8, 512)
]


@pytest.fixture(scope="module")
def local():
    return nanopu.sweep(POINTS, backend="local", workers=2, progress=False)


def test_rows_are_the_points(local):
    assert len(local) == len(POINTS)
    assert list(local.seed) == [1, 2, 3, 4]  # seed + index
    assert list(local.msg_bytes) == [8, 512, 8, 512]
    assert list(local.label) == ["8 B", "512 B", "8 B", "512 B"]
    assert (local.status == "ok").all()
    # a row is nanopu.load with the point's seed everywhere in its config
    one = nanopu.load("loopback", count=300, rate_mrps=8.0, msg_bytes=512,
                      config=nanopu.Config().with_seed(4), progress=False)
    assert local.loc[3, "p99_ns"] == one.p99_ns
    assert local.loc[3, "received"] == one.received
    # seeds differ, so do the arrivals
    assert local.loc[0, "p99_ns"] != local.loc[2, "p99_ns"] or local.loc[0, "max_ns"] != local.loc[2, "max_ns"]


def test_worker_count_does_not_matter(local):
    serial = nanopu.sweep(POINTS, backend="local", workers=1, progress=False)
    pd.testing.assert_frame_equal(serial, local)


def test_ray_gives_the_same_frame(local, tmp_path):
    pytest.importorskip("ray")
    out = tmp_path / "ray.pkl"
    cmd = [sys.executable, str(Path(__file__).with_name("ray_sweep.py")), str(out)]
    if os.geteuid() == 0 and shutil.which("unshare") and shutil.which("ip"):
        # a network namespace with only loopback: Ray listens on nothing else
        cmd = ["unshare", "--net", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *cmd]
    subprocess.run(cmd, check=True, timeout=300, cwd=Path(__file__).parent)
    pd.testing.assert_frame_equal(pd.read_pickle(out), local)


def test_net_and_run_points():
    df = nanopu.sweep(
        [
            {"kind": "net", "config": str(REPO / "configs" / "incast.toml")},
            {"kind": "run", "program": "hello", "cores": 2},
        ],
        backend="local", workers=2, progress=False,
    )
    assert df.loc[0, "delivered"] == 10 and df.loc[0, "failed"] == 0
    assert df.loc[1, "exit_code"] == 0 and df.loc[1, "instret"] > 0


def test_bad_backend():
    with pytest.raises(nanopu.ConfigError, match="backend"):
        nanopu.sweep(POINTS, backend="slurm")
