"""The API gives the command's numbers for the same program, configuration
and seed, and its configurations are the command's."""

import math

import pandas as pd
import pytest

import nanopu
from conftest import REPO, SDK, run_cli, stats_json


def test_run_matches_cli(cli, tmp_path):
    out = tmp_path / "stats.json"
    code, stdout, _ = run_cli(cli, "run", SDK / "hello.elf", "--cores", 2, "--stats-json", out)
    cli_stats = stats_json(out)
    r = nanopu.run("hello", cores=2, progress=False)
    assert r.exit_code == cli_stats["exit_code"] == code
    assert (r.cycles, r.instret, r.sim_ns) == (cli_stats["cycles"], cli_stats["instret"], cli_stats["sim_ns"])
    assert r.harts.to_dict("records") == cli_stats["harts"]
    assert len(r.harts) == 2
    assert r.stdout == stdout


def test_longer_run_matches_cli(cli, tmp_path):
    # matmul: 30 million instructions, many slices of the run
    out = tmp_path / "stats.json"
    run_cli(cli, "run", SDK / "matmul.elf", "--stats-json", out)
    r = nanopu.run(SDK / "matmul.elf", progress=False)
    s = stats_json(out)
    assert (r.exit_code, r.cycles, r.instret) == (s["exit_code"], s["cycles"], s["instret"])


def test_multicore_run_matches_cli(cli, tmp_path):
    # four cores streaming through shared memory: results that depend on
    # how the run is cut into slices (the API once ran to each progress
    # report's cycle, 44.5 M cycles against the command's 45.3 M)
    out = tmp_path / "stats.json"
    run_cli(cli, "run", SDK / "stream.elf", "--cores", 4, "--stats-json", out)
    s = stats_json(out)
    r = nanopu.run("stream", cores=4, progress=False)
    assert (r.exit_code, r.cycles, r.instret) == (s["exit_code"], s["cycles"], s["instret"])
    assert r.harts.to_dict("records") == s["harts"]


def test_load_matches_cli(cli, tmp_path):
    out = tmp_path / "stats.json"
    code, _, err = run_cli(
        cli, "run", SDK / "loopback.elf", "--load", "--count", 400, "--rate-mrps", 4,
        "--seed", 7, "--msg-bytes", 64, "--stats-json", out,
    )
    assert code == 0, err
    s = stats_json(out)
    r = nanopu.load("loopback", count=400, rate_mrps=4, seed=7, msg_bytes=64, progress=False)
    assert r.ok and r.result == "result: ok"
    assert r.report == s["load"]
    # the command's NIC counters (and, here, the transport's too)
    assert {k: r.nic[k] for k in s["nic"]} == s["nic"]
    assert r.p99_ns == s["load"]["p99_ns"] > 0
    # one row per measured request (the warm-up left out), at the client
    assert len(r.requests) == s["load"]["received"] - 10
    assert (r.requests.latency_ns > 0).all()
    assert r.requests.sent_ns.is_monotonic_increasing


def test_busy_multicore_load_matches_cli(cli, tmp_path):
    # 16 cores sharing an LLC and DRAM: their results depend on the windows
    # the run is cut into, so the API pauses between the event loop's turns
    # for its progress reports instead of running to each report's time (its
    # 10 us slices once moved this p99 from 942.6 to 945.7 ns)
    out = tmp_path / "stats.json"
    server = REPO / "configs" / "nebula-server.toml"
    code, _, err = run_cli(
        cli, "run", SDK / "nb_nanopu_mica.elf", "--config", server, "--load",
        "--app", "mica:pairs=20000", "--count", 3000, "--rate-mrps", 8,
        "--stats-json", out, "--", 20000, 512,
    )
    assert code == 0, err
    s = stats_json(out)
    r = nanopu.load(
        "nb_nanopu_mica", config=server, args=["20000", "512"], count=3000, rate_mrps=8,
        app="mica:pairs=20000", progress=False,
    )
    assert r.ok
    assert r.report == s["load"]


def test_net_with_nodes_matches_cli(cli, tmp_path):
    # Raft on three one-core nanoPU nodes: the API pauses between the event loop's
    # turns for progress (running to each report's time once moved this
    # p99 from 1756.2 to 1765.4 ns)
    js = tmp_path / "s.json"
    code, _, err = run_cli(cli, "net", REPO / "configs" / "raft.toml", "--json", js)
    assert code == 0, err
    s = stats_json(js)
    r = nanopu.net(REPO / "configs" / "raft.toml", progress=False)
    assert r.raw["clients"] == s["clients"] and r.raw["sim_us"] == s["sim_us"]
    assert s["clients"][0]["load"]["received"] > 0


def test_load_seed_changes_arrivals():
    a = nanopu.load("loopback", count=200, rate_mrps=4, seed=1, progress=False)
    b = nanopu.load("loopback", count=200, rate_mrps=4, seed=2, progress=False)
    assert not a.requests.sent_ns.equals(b.requests.sent_ns)


def test_net_matches_cli(cli, tmp_path):
    csv, js = tmp_path / "m.csv", tmp_path / "s.json"
    code, stdout, err = run_cli(cli, "net", REPO / "configs" / "incast.toml", "--csv", csv, "--json", js)
    r = nanopu.net(REPO / "configs" / "incast.toml", progress=False)
    assert r.exit_code == code
    assert r.result == stdout.strip().splitlines()[-1]
    want = pd.read_csv(csv)
    got = r.records[list(want.columns.drop("message"))]
    pd.testing.assert_frame_equal(got, want.drop(columns="message"), check_dtype=False)
    s = stats_json(js)
    assert r.latency_us() == pytest.approx(s["latency_us"])
    assert r.counters["network.delivered_frames"] == s["network"]["delivered_frames"]
    assert r.counters["transport.tx_retransmissions"] == s["transport"]["tx_retransmissions"]
    assert r.sim_us == s["sim_us"]


def test_net_with_a_node(cli, tmp_path):
    csv = tmp_path / "m.csv"
    code, stdout, err = run_cli(cli, "net", REPO / "configs" / "rpc-loopback.toml", "--csv", csv)
    assert code == 0, err
    r = nanopu.net(nanopu.Config.from_file(REPO / "configs" / "rpc-loopback.toml"), progress=False)
    want = pd.read_csv(csv)
    assert r.records["reply_ns"].tolist() == want["reply_ns"].tolist()
    assert r.records["reply_ns"].notna().all()


def test_config_sources_agree(cli):
    toml = "[node]\ncores = 2\n[load]\ncount = 50\n"
    a = nanopu.Config(toml)
    b = nanopu.Config({"node": {"cores": 2}, "load": {"count": 50}})
    c = nanopu.Config().merged({"node.cores": 2, "load.count": 50})
    assert a == b == c
    assert a["node"]["cores"] == 2 and a["load"]["count"] == 50
    # the effective configuration is what `nanopu config` prints
    _, printed, _ = run_cli(cli, "config", "--config", REPO / "configs" / "incast.toml")
    assert nanopu.Config(REPO / "configs" / "incast.toml").to_toml() == printed
    seeded = a.with_seed(9).to_dict()
    assert (seeded["load"]["seed"], seeded["nic"]["core_selection_seed"], seeded["workload"]["seed"]) == (9, 9, 9)


def test_progress_callback_sees_the_run():
    seen = []
    nanopu.load("loopback", count=3000, rate_mrps=1, progress=lambda done, total: seen.append((done, total)))
    assert seen, "the callback was never called"
    assert seen[-1] == (3000, 3000)  # requests answered of count, at the end
    assert all(b >= a for (a, _), (b, _) in zip(seen, seen[1:]))


def test_experiment_tables(cli, tmp_path):
    code, _, err = run_cli(cli, "experiment", "w2w-8B", "--scale", "quick", "--out", tmp_path)
    assert code == 0, err
    r = nanopu.experiment("w2w-8B", scale="quick", progress=False)
    assert r.tables, "no figure"
    for name, df in r.tables.items():
        want = pd.read_csv(tmp_path / f"{name}.csv")
        pd.testing.assert_frame_equal(df.reset_index(drop=True), want, check_dtype=False)
    assert "w2w-8B" in set(r.targets.key)
    assert math.isfinite(r.targets.set_index("key").loc["w2w-8B", "measured"])
    assert list(nanopu.experiments().id)[0] == "w2w-8B"


def test_timeline_argument_writes_the_commands_file(cli, tmp_path):
    import json

    mine, theirs = tmp_path / "api.json", tmp_path / "cli.json"
    code, _, err = run_cli(
        cli, "run", SDK / "loopback.elf", "--load", "--count", 50, "--timeline", theirs, "--timeline-sample", 5
    )
    assert code == 0, err
    r = nanopu.load("loopback", count=50, timeline=mine, timeline_sample=5, progress=False)
    assert r.ok
    # the same seed and options: the same timeline, byte for byte
    assert mine.read_bytes() == theirs.read_bytes()
    events = json.loads(mine.read_text())["traceEvents"]
    assert any(e["ph"] == "X" and e["name"] == "thread" for e in events)
    net = tmp_path / "net.json"
    nanopu.net(REPO / "configs" / "rpc-loopback.toml", timeline=net, timeline_sample=20, progress=False)
    names = {e["args"]["name"] for e in json.loads(net.read_text())["traceEvents"] if e["name"] == "process_name"}
    assert "switch 0" in names


def test_load_behind_nebula_matches_cli(cli, tmp_path):
    """Every NIC design by one name (`--nic`, `nic=`): NEBULA's RPCValet
    serving MICA through its queues, driven with NEBULA's connections."""
    cfg = tmp_path / "nebula.toml"
    cfg.write_text(
        (REPO / "configs" / "nebula-server.toml").read_text()
        + "\n[network.link]\ngbps = 120\n\n[load]\nconnections = {}\n"
    )
    out = tmp_path / "stats.json"
    code, _, err = run_cli(
        cli, "run", SDK / "nb_mica.elf", "--load", "--nic", "nebula:RPCValet", "--config", cfg,
        "--app", "mica:pairs=2000", "--count", 300, "--rate-mrps", 2, "--stats-json", out,
        "--", 2000, 512,
    )
    assert code == 0, err
    s = stats_json(out)
    r = nanopu.load(
        "nb_mica", args=["2000", "512"], nic="nebula:RPCValet", config=cfg,
        app="mica:pairs=2000", count=300, rate_mrps=2, progress=False,
    )
    assert r.ok and r.report == s["load"]
    assert r.report["received"] == 300 and r.p99_ns > 0
    with pytest.raises(nanopu.ConfigError, match="nebula:SRQ_emu"):
        nanopu.load("nb_mica", nic="nebula:bogus")
