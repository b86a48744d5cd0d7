"""Errors raise NanopuError subclasses with the command's messages; Ctrl-C
stops a run with KeyboardInterrupt."""

import os
import signal
import threading
import time

import pytest

import nanopu
from conftest import REPO, SDK, cli_error


def test_unknown_key_is_a_config_error_naming_it(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[node]\ncores = 2\ncroes = 3\n")
    want = cli_error(cli, "config", "--config", bad)
    assert "croes" in want
    with pytest.raises(nanopu.ConfigError) as e:
        nanopu.Config.from_file(bad)
    assert str(e.value) == want
    with pytest.raises(nanopu.ConfigError, match="croes"):
        nanopu.Config({"node": {"croes": 3}})


def test_invalid_value_is_a_config_error(cli, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[node]\ncores = 0\n")
    want = cli_error(cli, "config", "--config", bad)
    with pytest.raises(nanopu.ConfigError) as e:
        nanopu.Config.from_file(bad)
    assert str(e.value) == want


def test_not_an_elf_is_a_simulation_error(cli, tmp_path):
    junk = tmp_path / "junk.elf"
    junk.write_bytes(b"not an elf at all" * 10)
    want = cli_error(cli, "run", junk)
    with pytest.raises(nanopu.SimulationError) as e:
        nanopu.run(junk)
    assert str(e.value) == want
    assert isinstance(e.value, nanopu.NanopuError)


def test_cycle_limit_is_a_simulation_error(cli):
    want = cli_error(cli, "run", SDK / "matmul.elf", "--max-cycles", 1000)
    with pytest.raises(nanopu.SimulationError) as e:
        nanopu.run("matmul", max_cycles=1000, progress=False)
    assert str(e.value) == want.replace("--max-cycles", "max_cycles")


def test_bad_load_options(cli):
    want = cli_error(cli, "run", SDK / "loopback.elf", "--load", "--count", 0)
    with pytest.raises(nanopu.ConfigError) as e:
        nanopu.load("loopback", count=0)
    assert str(e.value) == want  # the load generator's own message, option names and all
    with pytest.raises(nanopu.ConfigError, match="service"):
        nanopu.load("loopback", service="uniform:3")


def test_unknown_experiment(cli, tmp_path):
    want = cli_error(cli, "experiment", "no-such-thing", "--out", tmp_path)
    with pytest.raises(nanopu.ExperimentError) as e:
        nanopu.experiment("no-such-thing")
    assert str(e.value) == want


def test_ctrl_c_stops_a_run():
    """Ten million requests take minutes; SIGINT (Ctrl-C) raises
    KeyboardInterrupt within a moment, and the package still works. The
    signal is sent half a second after the run reports its first progress,
    so that it lands in the simulation however long set-up takes on a busy
    machine."""
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    sent = []

    def first_progress(done, total):
        if not sent:
            sent.append(time.monotonic())
            timer.start()

    # A shell that starts the suite in the background (`make test &`, CI
    # runners) leaves SIGINT ignored, and Python then installs no handler:
    # install Python's own for the test, as an interactive session has it.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            nanopu.load("loopback", count=10_000_000, progress=first_progress)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert sent, "the run reported no progress"
    assert time.monotonic() - sent[0] < 6
    assert nanopu.run("hello", progress=False).exit_code == 0
