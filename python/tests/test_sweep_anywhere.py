"""``nanopu.sweep(backend="local")`` wherever Python runs (issue #54): the
README's example as a script without a ``__main__`` guard and on standard
input gives the DataFrame the guarded script gives; Ctrl-C stops such a
sweep at once and leaves no worker behind; what cannot run in a worker is
refused before any worker starts."""

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

import importlib

import nanopu
from nanopu import _pool
from conftest import REPO

sweep_module = importlib.import_module("nanopu.sweep")  # nanopu.sweep is the function


def readme_example() -> str:
    """The README's Python example, with the local backend, pickling its
    sweep's DataFrame to $NANOPU_TEST_OUT."""
    readme = (REPO / "README.md").read_text()
    code = re.search(r"^## Python$.*?^```python\n(.*?)^```$", readme, re.S | re.M).group(1)
    assert 'backend="ray"' in code and "nanopu.sweep(" in code
    code = code.replace('backend="ray"', 'backend="local"')
    return code + 'import os\ndf.to_pickle(os.environ["NANOPU_TEST_OUT"])\n'


def run_python(args, out: Path, stdin: str = None) -> pd.DataFrame:
    env = dict(os.environ, NANOPU_TEST_OUT=str(out))
    p = subprocess.run([sys.executable, *args], input=stdin, capture_output=True, text=True, cwd=REPO,
                       env=env, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return pd.read_pickle(out)


@pytest.fixture(scope="module")
def guarded(tmp_path_factory) -> pd.DataFrame:
    d = tmp_path_factory.mktemp("guarded")
    script = d / "example.py"
    script.write_text('if __name__ == "__main__":\n' + textwrap.indent(readme_example(), "    "))
    return run_python([str(script)], d / "df.pkl")


def test_the_readme_example_without_a_guard_gives_the_guarded_frame(guarded, tmp_path):
    script = tmp_path / "example.py"
    script.write_text(readme_example())
    df = run_python([str(script)], tmp_path / "df.pkl")
    assert len(df) == 4 and (df.status == "ok").all()
    pd.testing.assert_frame_equal(df, guarded)


def test_the_readme_example_on_standard_input_gives_the_guarded_frame(guarded, tmp_path):
    df = run_python(["-"], tmp_path / "df.pkl", stdin=readme_example())
    pd.testing.assert_frame_equal(df, guarded)


def _children(pid: int):
    """The pids of ``pid``'s child processes."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.append(int(entry.name))
    return out


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _workers(p: subprocess.Popen, n: int):
    """The pids of ``p``'s ``n`` sweep workers, once they have started."""
    deadline = time.monotonic() + 60
    while True:
        workers = [c for c in _children(p.pid) if b"nanopu._worker" in _cmdline(c)]
        if len(workers) >= n:
            return workers
        assert time.monotonic() < deadline, "no workers started"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("how", ["script", "stdin"])
def test_ctrl_c_stops_an_unguarded_sweep_promptly_and_leaves_no_worker(tmp_path, how):
    code = textwrap.dedent("""
        import nanopu
        points = [{"program": "loopback", "rate_mrps": 1, "count": 10_000_000} for _ in range(3)]
        print("sweeping", flush=True)
        nanopu.sweep(points, backend="local", workers=2, progress=False)
    """)
    script = tmp_path / "long.py"
    script.write_text(code)
    args = [str(script)] if how == "script" else ["-"]
    p = subprocess.Popen([sys.executable, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=REPO)
    if how == "stdin":
        p.stdin.write(code)
    p.stdin.close()
    try:
        assert p.stdout.readline() == "sweeping\n"
        workers = _workers(p, 2)
        time.sleep(1.0)  # the points are running
        start = time.monotonic()
        p.send_signal(signal.SIGINT)
        p.wait(timeout=10)
        took = time.monotonic() - start
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    err = p.stderr.read()
    assert "KeyboardInterrupt" in err, err
    assert took < 5, f"{took:.1f} s"
    assert not [w for w in workers if _alive(w)], "workers left running"


def test_workers_do_not_outlive_a_killed_caller(tmp_path):
    code = textwrap.dedent("""
        import nanopu
        points = [{"program": "loopback", "rate_mrps": 1, "count": 10_000_000} for _ in range(2)]
        print("sweeping", flush=True)
        nanopu.sweep(points, backend="local", workers=2, progress=False)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert p.stdout.readline() == "sweeping\n"
        workers = _workers(p, 2)
    finally:
        p.kill()
        p.wait()
    deadline = time.monotonic() + 10
    while [w for w in workers if _alive(w)]:
        assert time.monotonic() < deadline, "workers outlived their caller"
        time.sleep(0.1)


def test_what_cannot_run_in_a_worker_is_refused_before_any_starts(monkeypatch):
    with pytest.raises(nanopu.NanopuError, match="module-level"):
        sweep_module.map_tasks(lambda x: x, [(1,)], backend="local", progress=False)
    with pytest.raises(nanopu.NanopuError, match="item 0 cannot be sent"):
        sweep_module.map_tasks(sweep_module.run_point, [(lambda: 0,)], backend="local", progress=False)
    started = []
    monkeypatch.setattr(_pool, "_Worker", lambda *a: started.append(a))
    monkeypatch.setattr(sys, "executable", "")
    with pytest.raises(nanopu.NanopuError, match="sys.executable"):
        nanopu.sweep([{"program": "loopback", "count": 100}], backend="local", progress=False)
    assert not started


def test_an_error_in_a_point_is_the_point_s_error():
    with pytest.raises(nanopu.ConfigError, match="point kind 'nope'"):
        nanopu.sweep([{"kind": "nope"}, {"program": "loopback", "count": 100}], backend="local", workers=2,
                     progress=False)


@pytest.mark.parametrize("workers", [-1, 0, 1.5, "2", True])
def test_bad_worker_counts_are_config_errors(workers):
    with pytest.raises(nanopu.ConfigError, match="workers="):
        nanopu.sweep([{"program": "loopback", "count": 100}], backend="local", workers=workers, progress=False)


def test_the_readme_example_in_ipython_gives_the_guarded_frame(guarded, tmp_path):
    pytest.importorskip("IPython")
    script = tmp_path / "example.py"
    script.write_text(readme_example())
    df = run_python(["-m", "IPython", "--quick", "--no-banner", "--simple-prompt", "-c",
                     f"exec(open({str(script)!r}).read())"], tmp_path / "df.pkl")
    pd.testing.assert_frame_equal(df, guarded)


def test_a_worker_that_dies_is_a_clear_error():
    # os._exit is importable (posix._exit): the worker ends with status 3.
    with pytest.raises(nanopu.NanopuError, match="a worker process exited with status 3 while running item 0"):
        sweep_module.map_tasks(os._exit, [(3,)], backend="local", progress=False)
