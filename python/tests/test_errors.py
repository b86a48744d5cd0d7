"""Errors raise NanopuError subclasses with the command's messages; Ctrl-C
stops a run with KeyboardInterrupt."""

import os
import signal
import threading
import time

import pytest

import nanopu
from conftest import REPO, SDK, cli_error, run_cli


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


def test_values_json_or_toml_cannot_carry_name_their_key():
    # A seed the command line takes but TOML cannot hold: a clear error
    # naming the key, not "None has no TOML form".
    with pytest.raises(nanopu.ConfigError, match=r"^load\.seed = 18446744073709551615: out of range"):
        nanopu.load("loopback", count=10, seed=2**64 - 1, progress=False)
    with pytest.raises(nanopu.ConfigError, match=r"^seed 18446744073709551615: expected 0\.\.9223372036854775807"):
        nanopu.Config().with_seed(2**64 - 1)
    with pytest.raises(nanopu.ConfigError, match=r"^seed 18446744073709551615: expected"):
        nanopu.sweep([{"program": "loopback", "count": 10, "seed": 2**64 - 1}], workers=1, progress=False)
    with pytest.raises(nanopu.ConfigError, match=r"^load\.mode\.open\.rate_mrps = nan: expected a finite number$"):
        nanopu.Config({"load": {"mode": {"open": {"rate_mrps": float("nan")}}}})
    with pytest.raises(nanopu.ConfigError, match=r"^network\.link\.gbps = inf"):
        nanopu.Config({"network": {"link": {"gbps": float("inf")}}})
    with pytest.raises(nanopu.ConfigError, match=r"^load\.mode\.open\.rate_mrps = nan"):
        nanopu.load("loopback", rate_mrps=float("nan"), progress=False)
    # The largest seed TOML holds works.
    assert nanopu.Config().with_seed(2**63 - 1).to_dict()["load"]["seed"] == 2**63 - 1


def test_empty_contexts_are_refused_as_on_the_command_line(cli):
    code, _, _ = run_cli(cli, "run", SDK / "loopback.elf", "--load", "--contexts", "")
    assert code == 125
    with pytest.raises(nanopu.ConfigError, match=r"contexts=\[\]"):
        nanopu.load("loopback", count=10, contexts=[], progress=False)


def test_toml_text_over_the_file_limit_is_refused(tmp_path):
    text = "[node]\ncores = 2\n" + "# padding\n" * (1 << 17)
    assert len(text) > 1 << 20
    (tmp_path / "big.toml").write_text(text)
    with pytest.raises(nanopu.ConfigError, match="1 MiB"):
        nanopu.Config.from_file(tmp_path / "big.toml")
    with pytest.raises(nanopu.ConfigError, match="1 MiB"):
        nanopu.Config(text)
    assert nanopu.Config(text[: 1 << 19]).to_dict()["node"]["cores"] == 2


def test_the_documented_net_columns_are_the_records_columns(cli, tmp_path):
    doc = (REPO / "docs" / "python.md").read_text()
    row = next(l for l in doc.splitlines() if l.startswith("| `nanopu.net("))
    listed = row.split("one row per workload message: ")[1].split(" as in `--csv`")[0]
    csv_columns = [c.strip() for c in listed.split(",")]
    net = nanopu.net(REPO / "configs" / "incast.toml", progress=False)
    extra = [c for c in net.records.columns if c not in csv_columns]
    assert extra == ["deliveries"], extra
    assert [c for c in net.records.columns if c != "deliveries"] == csv_columns
    assert "and `deliveries`" in row
    code, _, err = run_cli(cli, "net", REPO / "configs" / "incast.toml", "--csv",
                                                  tmp_path / "n.csv")
    assert code == 0, err
    assert (tmp_path / "n.csv").read_text().splitlines()[0].split(",") == csv_columns


def _one_node_net(program) -> dict:
    return {
        "network": {"topology": {"hosts": 3}},
        "nic": {"transport": {"protocol": "ndp"}},
        "programs": [{"hosts": "0", "program": str(program)}],
    }


def test_a_network_reads_its_programs_as_run_does(cli, tmp_path):
    """`net` (and so `nanopu.net`) reads a node's program through the one
    loader: a device, a FIFO or a directory is refused at once, with the
    message `nanopu run` gives for it, never read (or waited on)."""
    fifo = tmp_path / "fifo.elf"
    os.mkfifo(fifo)
    for program in ("/dev/zero", fifo, tmp_path):
        want = cli_error(cli, "run", program)
        start = time.monotonic()
        with pytest.raises(nanopu.NanopuError) as e:
            nanopu.net(_one_node_net(program), until_us=10, progress=False)
        assert time.monotonic() - start < 20
        assert str(e.value).endswith(want), (str(e.value), want)
        assert "programs[0].program" in str(e.value)


def test_load_generators_count_in_the_memory_estimate():
    cfg = _one_node_net(SDK / "loopback.elf")
    cfg["network"]["topology"] = {"kind": "single-switch", "hosts": 65536}
    cfg["clients"] = [{"hosts": "1-65535", "server": 0}]
    with pytest.raises(nanopu.ConfigError, match="65535 load generators.*needs about"):
        nanopu.net(cfg, until_us=10, progress=False)


def test_load_generator_errors_name_the_key_and_line(cli, tmp_path):
    bad = tmp_path / "clients.toml"
    bad.write_text(
        "[network.topology]\nhosts = 3\n[[programs]]\nhosts = \"0\"\nprogram = \"x.elf\"\n"
        "[[clients]]\nhosts = \"1\"\nserver = 0\n[clients.load]\ncount = 2\n"
        "[[clients]]\nhosts = \"2\"\nserver = 0\n[clients.load]\ncount = 0\n"
    )
    want = cli_error(cli, "net", bad)
    assert want.endswith("clients[1].load.count = 0: must be at least 1 (line 15)"), want
    with pytest.raises(nanopu.ConfigError) as e:
        nanopu.Config.from_file(bad)
    assert str(e.value) == want


def test_settings_that_would_be_ignored_are_refused():
    with pytest.raises(nanopu.ConfigError, match="--msg-bytes 64: not used with an application"):
        nanopu.load("loopback", app="mica", msg_bytes=64, progress=False)
    with pytest.raises(nanopu.ConfigError, match=r"\[\[programs\]\]: describes hosts of a network"):
        nanopu.run("hello", config={"programs": [{"hosts": "0", "program": "x.elf"}]}, progress=False)
    with pytest.raises(nanopu.ConfigError, match=r"\[\[programs\]\]: describes"):
        nanopu.load("loopback", config={"network": {"topology": {"hosts": 3}},
                                        "programs": [{"hosts": "0", "program": "x.elf"}],
                                        "clients": [{"hosts": "1", "server": 0}]}, progress=False)
    with pytest.raises(nanopu.ConfigError, match="nb-mica does not use node.cores"):
        nanopu.experiment("nb-mica", config={"node": {"cores": 8}}, progress=False)
