"""The simulator's commands as functions: ``run``, ``load``, ``net``,
``experiment``. Each takes a configuration (a :class:`Config`, a dict, TOML
text or a file), runs with the GIL released and a progress bar for long
runs, and stops cleanly on Ctrl-C (``KeyboardInterrupt``). Errors of the
simulator raise :class:`NanopuError` subclasses with the command's
``error:`` messages."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Union

import pandas as pd

from . import _native
from ._progress import Bar, ProgressArg
from .config import Config, ConfigLike, as_config
from .results import ExperimentResult, LoadResult, NetResult, RunResult, experiment_result, flatten

PathLike = Union[str, os.PathLike]


#: Per-hart counters, in the order of the node's `HartSummary`.
HART_COLUMNS = ["cycles", "instret", "icache_misses", "dcache_misses", "branch_mispredicts", "traps",
                "interrupts", "idle_cycles", "idle_instret"]


#: The native records' keys in ``nanopu net --csv``'s order (``latency_ns``
#: is added after ``delivered_ns``), then ``deliveries`` (not in the CSV).
_RECORD_KEYS = ["message", "from", "to", "bytes", "sent_ns", "delivered_ns", "failed", "reply_ns", "deliveries"]


def _harts(rows: list) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    order = [c for c in HART_COLUMNS if c in df.columns] + [c for c in df.columns if c not in HART_COLUMNS]
    return df[order].rename_axis("hart")


def sdk_build_dir() -> Path:
    """Where the guest programs are (``NANOPU_SDK_BUILD``, else the
    checkout's ``sdk/build``, built by ``make -C sdk``)."""
    return Path(_native.sdk_build_dir())


def program_path(program: PathLike) -> Path:
    """``program`` as a path: a file, or the name of an SDK program
    (``"loopback"`` is ``sdk/build/loopback.elf``)."""
    p = Path(program)
    if not p.exists() and p.parent == Path(".") and p.suffix != ".elf":
        candidate = sdk_build_dir() / f"{p.name}.elf"
        if candidate.exists():
            return candidate
    return p


def run(
    program: PathLike,
    *,
    cores: Optional[int] = None,
    config: ConfigLike = None,
    args: Sequence[str] = (),
    max_cycles: Optional[int] = None,
    echo: bool = False,
    progress: ProgressArg = None,
) -> RunResult:
    """Runs ``program`` on a node until it exits (``nanopu run``).

    ``cores`` overrides ``[node] cores``; ``args`` are argv[1..];
    ``echo`` copies the program's output to ``sys.stdout`` as it runs (it
    is in ``result.stdout`` either way); ``progress``: None for a bar on
    long runs, False for none, or a callable ``(done, total)`` (cycles;
    total 0 without ``max_cycles``). ``load`` counts requests answered of
    ``count``, ``net`` simulated microseconds of ``until_us``, ``experiment``
    points.
    """
    cfg = as_config(config)
    with Bar(progress, "run", "cycles") as cb:
        raw = json.loads(
            _native.run(str(program_path(program)), cfg.to_toml(), cores, list(args), max_cycles, echo, cb)
        )
    if raw["warnings"]:
        import warnings

        for w in raw["warnings"]:
            warnings.warn(w, RuntimeWarning, stacklevel=2)
    return RunResult(
        exit_code=raw["exit_code"], cycles=raw["cycles"], instret=raw["instret"], sim_ns=raw["sim_ns"],
        wall_s=raw["wall_s"], mips=raw["mips"], harts=_harts(raw["harts"]),
        stdout=raw["stdout"], config=cfg, warnings=raw["warnings"],
    )


def _service(spec: Union[str, Mapping[str, Any]]) -> Mapping[str, Any]:
    """``fixed:NS``, ``exp:MEAN_NS``, ``bimodal:SHORT:LONG:FRACTION``,
    ``bimodal-normal:...`` (as ``--service``) or the schema's table."""
    if not isinstance(spec, str):
        return spec
    parts = spec.split(":")
    fields = {
        ("fixed", 2): ("fixed", ["ns"]),
        ("exp", 2): ("exponential", ["mean_ns"]),
        ("bimodal", 4): ("bimodal", ["short_ns", "long_ns", "long_fraction"]),
        ("bimodal-normal", 8): (
            "bimodal-normal",
            ["short_ns", "short_sd_ns", "long_ns", "long_sd_ns", "long_fraction", "min_ns", "max_ns"],
        ),
    }.get((parts[0], len(parts)))
    if fields is None:
        raise _native.ConfigError(
            f"service {spec}: expected fixed:NS, exp:MEAN_NS, bimodal:SHORT_NS:LONG_NS:FRACTION or "
            "bimodal-normal:SHORT_NS:SHORT_SD:LONG_NS:LONG_SD:FRACTION:MIN_NS:MAX_NS"
        )
    kind, names = fields
    values = {}
    for i, name in enumerate(names, start=1):
        try:
            v = float(parts[i])
        except ValueError:
            v = float("nan")
        if not (v >= 0 and v != float("inf")):
            raise _native.ConfigError(f"service {spec}: expected a non-negative number in field {i + 1}")
        values[name] = v
    if kind == "bimodal-normal":
        values["long_fraction"] = min(values["long_fraction"], 1.0)
    return {kind: values}


def load_config(
    config: ConfigLike = None,
    *,
    cores: Optional[int] = None,
    count: Optional[int] = None,
    warmup: Optional[int] = None,
    msg_bytes: Optional[int] = None,
    window: Optional[int] = None,
    rate_mrps: Optional[float] = None,
    context: Optional[int] = None,
    contexts: Optional[Sequence[int]] = None,
    pattern: Optional[str] = None,
    expect: Optional[str] = None,
    service: Union[str, Mapping[str, Any], None] = None,
    start_ns: Optional[int] = None,
    start_messages: Optional[int] = None,
    seed: Optional[int] = None,
    timeout_ns: Optional[int] = None,
    app: Union[str, Mapping[str, Any], None] = None,
) -> Config:
    """The configuration with ``nanopu run --load``'s options on top of its
    ``[load]`` table (the options' meanings are the command's)."""
    values = as_config(config).to_dict()
    base = values["load"]
    new = dict(base)
    if window is not None and rate_mrps is not None:
        raise _native.ConfigError("window and rate_mrps conflict: closed loop or open loop, not both")
    if pattern is not None:
        new["pattern"] = pattern
    if new["pattern"] == "lnic-eval":
        new["expect"] = "lnic-eval"
    elif expect is not None:
        new["expect"] = expect
    if rate_mrps is not None:
        new["mode"] = {"open": {"rate_mrps": float(rate_mrps)}}
    elif window is not None:
        new["mode"] = {"closed": {"window": int(window)}}
    if count is not None:
        new["count"] = int(count)
    if warmup is not None:
        if warmup >= new["count"]:
            raise _native.ConfigError(
                f"warmup {warmup}: must be less than count {new['count']} (no request would be measured)"
            )
        new["warmup"] = int(warmup)
    else:
        new["warmup"] = min(base["warmup"], max(new["count"] - 1, 0))
    if contexts is not None and len(contexts) == 0:
        raise _native.ConfigError("contexts=[]: expected at least one context (as --contexts), or leave it out")
    if contexts:
        new["context"], new["extra_contexts"] = int(contexts[0]), [int(c) for c in contexts[1:]]
    elif context is not None:
        new["context"], new["extra_contexts"] = int(context), []
    if start_ns is not None and start_messages is not None:
        raise _native.ConfigError("start_ns and start_messages conflict")
    if start_ns is not None:
        new["start"] = {"at-ns": int(start_ns)}
    elif start_messages is not None:
        new["start"] = {"start-messages": int(start_messages)}
    if msg_bytes is not None:
        new["message_bytes"] = int(msg_bytes)
    if seed is not None:
        new["seed"] = int(seed)
    if service is not None:
        new["service"] = _service(service)
    if timeout_ns is not None:
        new["timeout_ns"] = int(timeout_ns)
    if app is not None:
        new["app"] = json.loads(_native.app_spec(app)) if isinstance(app, str) else dict(app)
    values["load"] = new
    if cores is not None:
        values["node"]["cores"] = int(cores)
    return Config(values)


def load(
    program: PathLike,
    *,
    config: ConfigLike = None,
    args: Sequence[str] = (),
    nic: Optional[str] = None,
    node_ip: Optional[str] = None,
    client_ip: Optional[str] = None,
    max_sim_ms: int = 1000,
    echo: bool = False,
    progress: ProgressArg = None,
    timeline: Optional[PathLike] = None,
    timeline_sample: int = 1,
    **load_options: Any,
) -> LoadResult:
    """Drives ``program`` behind its NIC with the built-in load generator
    or an application (``nanopu run PROGRAM --load``).

    ``load_options`` are :func:`load_config`'s (``count``, ``rate_mrps``,
    ``window``, ``pattern``, ``service``, ``app``, ``seed``, ``cores``...),
    on top of the configuration's ``[load]``. Wrong replies or lost requests
    are not exceptions: ``result.status`` says "failed" or "incomplete".
    ``timeline`` writes a timeline of the run (``--timeline``, every
    ``timeline_sample``-th message; docs/timeline.md).
    """
    cfg = load_config(config, **load_options)
    with Bar(progress, "load", "requests") as cb:
        raw = json.loads(
            _native.load(
                str(program_path(program)), cfg.to_toml(), list(args), nic, node_ip, client_ip,
                int(max_sim_ms), echo, cb,
                None if timeline is None else str(timeline), int(timeline_sample),
            )
        )
    report = raw["load"]
    return LoadResult(
        status=raw["status"], result=raw["result"], report=report,
        requests=pd.DataFrame(raw["requests"], columns=["sent_ns", "latency_ns"]),
        per_context=pd.DataFrame(report.get("per_context", [])),
        nic=raw["nic"] if isinstance(raw["nic"], dict) else {"nic": raw["nic"]},
        harts=_harts(raw["harts"]), instret=raw["instret"],
        wall_s=raw["wall_s"], stdout=raw["stdout"], config=cfg, raw=raw,
    )


def net(
    config: ConfigLike,
    *,
    until_us: int = 100_000,
    progress: ProgressArg = None,
    timeline: Optional[PathLike] = None,
    timeline_sample: int = 1,
) -> NetResult:
    """Simulates a network of hosts from a configuration (``nanopu net``);
    ``timeline`` as in :func:`load`."""
    cfg = as_config(config)
    with Bar(progress, "net", "sim us") as cb:
        raw = json.loads(
            _native.net(
                cfg.to_toml(), int(until_us), cb, None if timeline is None else str(timeline), int(timeline_sample)
            )
        )
    records = pd.DataFrame(raw.pop("records"), columns=_RECORD_KEYS)
    for column in ("delivered_ns", "reply_ns"):  # NaN: never delivered, no reply
        records[column] = records[column].astype("float64")
    records.insert(
        records.columns.get_loc("delivered_ns") + 1, "latency_ns", records["delivered_ns"] - records["sent_ns"]
    )
    clients = pd.DataFrame(
        [{"host": c["host"], **{k: v for k, v in flatten(c["load"]).items()}} for c in raw["clients"]]
    )
    counters = flatten({"network": raw["network"], "transport": raw["transport"]})
    status, code, line = _net_status(records, raw["clients"], until_us)
    return NetResult(
        status=status, exit_code=code, result=line, records=records, clients=clients, counters=counters,
        hosts=raw["hosts"], sim_us=raw["sim_us"], wall_s=raw["wall_s"], config=cfg, raw=raw,
    )


def _net_status(records: pd.DataFrame, clients: list, until_us: int):
    """The last line of ``nanopu net`` and its exit status."""
    n = len(records)
    delivered = int(records["delivered_ns"].notna().sum()) if n else 0
    failed = int(records["failed"].sum()) if n else 0
    reports = [c["load"] for c in clients]
    wrong = sum(1 for r in reports if r["wrong_replies"] > 0 or r["lost"] > 0)
    waiting = sum(1 for r in reports if r["received"] + r["lost"] + r["unexpected_replies"] < max(r["sent"], 1))
    outstanding = max(n - delivered - failed, 0)
    if wrong:
        return "failed", 1, f"result: FAILED: {wrong} load generator(s) got wrong replies or lost requests; exit 1"
    if failed:
        return "failed", 1, f"result: FAILED: {failed} of {n} messages failed (their senders gave up); exit 1"
    if outstanding:
        return "incomplete", 3, (
            f"result: INCOMPLETE: {outstanding} of {n} messages neither delivered nor failed when the run "
            f"stopped at {until_us} us (--until-us); exit 3"
        )
    if waiting:
        return "incomplete", 3, (
            f"result: INCOMPLETE: {waiting} load generator(s) still waiting for replies when the run stopped "
            f"at {until_us} us (--until-us); exit 3"
        )
    if n == 0 and not clients:
        return "ok", 0, "result: ok: no workload messages"
    return "ok", 0, "result: ok: every message delivered, every request answered"


def experiments() -> pd.DataFrame:
    """Every experiment (``nanopu experiment`` with no id): id, title."""
    return pd.DataFrame(_native.experiments(), columns=["id", "title"])


def experiment(
    name: str,
    *,
    scale: str = "quick",
    seed: int = 1,
    config: ConfigLike = None,
    threads: Optional[int] = None,
    progress: ProgressArg = None,
) -> ExperimentResult:
    """Runs one of the papers' experiments (``nanopu experiment NAME``):
    its figures as DataFrames (``result.tables``) and its targets.
    ``scale`` is "quick" or "full"; points run on ``threads`` host threads
    (default: all cores); the numbers do not depend on it. Ctrl-C lets the
    points that are running finish and starts no more."""
    cfg = as_config(config)
    with Bar(progress, name, "points") as cb:
        raw = _native.experiment(name, scale, int(seed), cfg.to_toml(), threads, cb)
    return experiment_result(raw)

