"""`python -m nanopu` (what `nanopu experiment --backend ray` runs) writes
what `nanopu experiment` writes; the command finds (or names) the interpreter."""

import os
import subprocess
import sys
import time

import pandas as pd
import pytest

import nanopu

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


def test_a_bad_ray_address_is_one_error_line(cli, tmp_path):
    env = dict(os.environ, NANOPU_PYTHON=sys.executable)
    for address, want in [
        ("not an address", "Ray address 'not an address': expected HOST:PORT"),
        ("10.0.0.1:99999", "expected HOST:PORT"),
        ("127.0.0.1:1", "Ray address 127.0.0.1:1: cannot connect"),
    ]:
        start = time.monotonic()
        p = subprocess.run([str(cli), "experiment", "w2w-8B", "--backend", "ray", "--address", address,
                            "--out", str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
        assert p.returncode == 125, p.stderr
        assert p.stderr.startswith("error: ") and want in p.stderr, p.stderr
        assert len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert time.monotonic() - start < 60


def test_a_ray_address_that_is_not_ray_is_an_error_within_the_timeout(monkeypatch):
    """Ray itself retries for ever against a port that accepts but is not
    its GCS; nanopu gives up after NANOPU_RAY_TIMEOUT_S with one message."""
    import importlib
    import socket
    import threading

    sweep = importlib.import_module("nanopu.sweep")
    monkeypatch.setenv("NANOPU_RAY_TIMEOUT_S", "0.5")
    for answer, want in [(None, r"no answer within 0\.5 s"), (b"HTTP/1.1 400 Bad Request\r\n\r\n", "not a Ray cluster")]:
        server = socket.create_server(("127.0.0.1", 0))
        port = server.getsockname()[1]

        def serve(server=server, answer=answer):
            conn, _ = server.accept()
            if answer:
                conn.recv(100)
                conn.sendall(answer)
                conn.close()
            else:
                time.sleep(2)  # silent

        t = threading.Thread(target=serve, daemon=True)
        t.start()
        start = time.monotonic()
        with pytest.raises(nanopu.NanopuError, match=want):
            nanopu.sweep([{"program": "loopback"}], backend="ray", address=f"127.0.0.1:{port}", progress=False)
        assert time.monotonic() - start < 5
        server.close()
    monkeypatch.setenv("NANOPU_RAY_TIMEOUT_S", "forever")
    with pytest.raises(nanopu.NanopuError, match="NANOPU_RAY_TIMEOUT_S=forever"):
        sweep.check_ray_address("10.1.2.3:6379")
    assert sweep.ray_endpoint("ray://head:10001") == ("head", 10001)
    assert sweep.ray_endpoint("[::1]:6379") == ("::1", 6379)
    assert sweep.ray_endpoint("auto") is None


def test_a_grpc_server_that_is_not_ray_is_an_error_within_three_timeouts(cli, tmp_path):
    """It answers HTTP/2 (so the probe passes) but never as Ray's GCS: Ray
    alone would retry for ever."""
    pytest.importorskip("ray")
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.recv(100)
            conn.sendall(bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))  # SETTINGS, then silence

    threading.Thread(target=serve, daemon=True).start()
    env = dict(os.environ, NANOPU_PYTHON=sys.executable, NANOPU_RAY_TIMEOUT_S="2")
    start = time.monotonic()
    p = subprocess.run([str(cli), "experiment", "w2w-8B", "--backend", "ray", "--address",
                        f"127.0.0.1:{server.getsockname()[1]}", "--out", str(tmp_path)],
                       capture_output=True, text=True, env=env, timeout=120)
    server.close()
    assert p.returncode == 125, p.stderr
    assert "error: Ray address 127.0.0.1:" in p.stderr and "did not connect within 6 s" in p.stderr, p.stderr
    assert time.monotonic() - start < 60
