"""`python -m nanopu` (what `nanopu experiment --backend ray` runs) writes
what `nanopu experiment` writes; the command finds (or names) the interpreter."""

import os
import subprocess
import sys

import pandas as pd

from conftest import REPO, run_cli


def test_python_m_nanopu_writes_the_command_s_files(cli, tmp_path):
    code, _, err = run_cli(cli, "experiment", "w2w-8B", "--scale", "quick", "--out", tmp_path / "cli")
    assert code == 0, err
    p = subprocess.run(
        [sys.executable, "-m", "nanopu", "w2w-8B", "--scale", "quick", "--backend", "local", "--workers", "1",
         "--out", str(tmp_path / "py")],
        capture_output=True, text=True, timeout=300, cwd=REPO,
    )
    assert p.returncode == 0, p.stderr
    for name in ("w2w-8B.csv",):
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "py" / name), pd.read_csv(tmp_path / "cli" / name))
    assert (tmp_path / "py" / "w2w-8B.svg").exists() and (tmp_path / "py" / "w2w-8B.json").exists()


def test_python_m_nanopu_errors_like_the_command(tmp_path):
    p = subprocess.run([sys.executable, "-m", "nanopu", "nope", "--out", str(tmp_path)], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 125
    assert p.stderr.startswith('error: unknown experiment "nope"; known: w2w-8B')


def test_ray_backend_without_python_is_a_clear_error(cli, tmp_path):
    env = dict(os.environ, NANOPU_PYTHON=str(tmp_path / "no-python"))
    p = subprocess.run([str(cli), "experiment", "w2w-8B", "--backend", "ray", "--out", str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 125
    assert "cannot start" in p.stderr and "--backend ray" in p.stderr
