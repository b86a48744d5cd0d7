"""What runs return: plain attributes for the headline numbers, pandas
DataFrames for per-hart, per-request and per-message records, dicts of
counters, and :meth:`summary` (one flat dict of numbers: a sweep's row)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import pandas as pd

from .config import Config


def _flatten(prefix: str, value: Any, out: Dict[str, Any]) -> None:
    """Nested dicts as ``a.b.c`` keys; lists are left out (they are tables)."""
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif not isinstance(value, list):
        out[prefix] = value


def flatten(value: Dict[str, Any]) -> Dict[str, Any]:
    """A nested dict of counters as one level of dotted keys."""
    out: Dict[str, Any] = {}
    _flatten("", value, out)
    return out


def _percentile(sorted_values: List[float], p: float) -> float:
    """The command's percentile (nearest rank, rounded), so numbers match."""
    if not sorted_values:
        return float("nan")
    # Rust's f64::round: halves away from zero (Python's round() goes to even)
    i = math.floor((p / 100.0) * (len(sorted_values) - 1) + 0.5)
    return sorted_values[min(i, len(sorted_values) - 1)]


@dataclass
class RunResult:
    """``nanopu.run``: a program run to its exit (``--stats-json``'s numbers)."""

    exit_code: int
    #: Core cycles of the hart that exited.
    cycles: int
    #: Instructions retired, summed over harts.
    instret: int
    sim_ns: float
    wall_s: float
    #: Host speed: instructions executed one by one per host second, in
    #: millions (the instructions of polling loops skipped in bulk,
    #: ``harts.idle_instret``, are left out).
    mips: float
    #: One row per hart: cycles, instret, cache misses, mispredicts, traps...
    harts: pd.DataFrame
    #: What the program printed.
    stdout: str
    config: Config
    warnings: List[str] = field(default_factory=list)

    def summary(self) -> Dict[str, Any]:
        """Deterministic numbers (no host times): a sweep's row."""
        return {"exit_code": self.exit_code, "cycles": self.cycles, "instret": self.instret, "sim_ns": self.sim_ns}


@dataclass
class LoadResult:
    """``nanopu.load``: a program behind its NIC driven by the load generator."""

    #: "ok", "failed" (wrong replies) or "incomplete" (requests lost), as the
    #: last line of ``nanopu run --load`` says (``result``).
    status: str
    result: str
    #: The load generator's report (``--stats-json``'s ``load``): sent,
    #: received, p50_ns ... p999_ns (at the node's wire), throughput...
    report: Dict[str, Any]
    #: One row per measured request: ``sent_ns`` (its first send) and
    #: ``latency_ns`` (response time at the client).
    requests: pd.DataFrame
    #: One row per destination context.
    per_context: pd.DataFrame
    #: The NIC's counters.
    nic: Dict[str, Any]
    harts: pd.DataFrame
    instret: int
    wall_s: float
    stdout: str
    config: Config
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def __getattr__(self, name: str) -> Any:
        # report keys as attributes: result.p99_ns, result.throughput_mrps
        report = self.__dict__.get("report", {})
        if name in report:
            return report[name]
        raise AttributeError(name)

    def summary(self) -> Dict[str, Any]:
        out = {"status": self.status}
        out.update({k: v for k, v in flatten(self.report).items() if not isinstance(v, str) or k == "app"})
        out["delivery_failures"] = self.raw.get("delivery_failures", 0)
        return out


@dataclass
class NetResult:
    """``nanopu.net``: a network of hosts from a configuration."""

    status: str
    #: The command's exit status: 0 ok, 1 failed, 3 incomplete.
    exit_code: int
    result: str
    #: One row per workload message: message, from, to, bytes, sent_ns,
    #: delivered_ns, latency_ns, failed, reply_ns (``--csv``'s columns), and
    #: deliveries (times the message arrived; not in the CSV).
    records: pd.DataFrame
    #: One row per load generator host (its report).
    clients: pd.DataFrame
    #: Network and transport counters, dotted keys (``network.total.trimmed``).
    counters: Dict[str, Any]
    hosts: int
    sim_us: float
    wall_s: float
    config: Config
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def latency_us(self) -> Dict[str, float]:
        """Delivered messages' latency percentiles, as ``nanopu net`` prints them."""
        lat = sorted((self.records["latency_ns"].dropna() / 1e3).tolist())
        return {"p50": _percentile(lat, 50), "p99": _percentile(lat, 99), "max": _percentile(lat, 100)}

    def summary(self) -> Dict[str, Any]:
        r = self.records
        out: Dict[str, Any] = {
            "status": self.status,
            "messages": len(r),
            "delivered": int(r["delivered_ns"].notna().sum()),
            "failed": int(r["failed"].sum()),
            "sim_us": self.sim_us,
        }
        out.update({f"latency_us.{k}": v for k, v in self.latency_us().items()})
        out.update({k: v for k, v in self.counters.items() if isinstance(v, (int, float))})
        return out


@dataclass
class ExperimentResult:
    """``nanopu.experiment``: a paper experiment's figures and targets."""

    id: str
    title: str
    description: str
    #: One DataFrame per figure, the CSV's long format: series, source
    #: ("measured" or "published"), x, y; ``attrs`` has the axis labels.
    tables: Dict[str, pd.DataFrame]
    #: key, measured, unit, published, ratio, note.
    targets: pd.DataFrame
    notes: List[str]
    #: Host wall-clock seconds (overlapping other experiments run beside it).
    wall_s: float
    #: Host CPU seconds its threads used: its cost, whatever ran beside it.
    cpu_s: float = 0.0
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    def write(self, out: str) -> None:
        """Writes the CSV, SVG and JSON files ``nanopu experiment`` writes."""
        from . import _native

        _native.write_experiments([self.raw], str(out))


def experiment_result(raw: Dict[str, Any]) -> ExperimentResult:
    tables = {}
    for f in raw["figures"]:
        rows = [
            (name, source, x, y)
            for source, key in (("measured", "series"), ("published", "published"))
            for name, points in f[key]
            for x, y in points
        ]
        df = pd.DataFrame(rows, columns=["series", "source", "x", "y"])
        df.attrs.update({k: f[k] for k in ("title", "x_label", "y_label", "log_x", "log_y")})
        tables[f["name"]] = df
    targets = pd.DataFrame(raw["targets"], columns=["key", "measured", "unit", "published", "note"])
    targets.insert(4, "ratio", targets["measured"] / targets["published"])
    return ExperimentResult(
        id=raw["id"], title=raw["title"], description=raw["description"], tables=tables,
        targets=targets, notes=list(raw["notes"]), wall_s=raw["wall_s"],
        cpu_s=raw.get("cpu_s", 0.0), raw=raw,
    )
