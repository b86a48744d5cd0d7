"""Sweeps: many independent points in parallel, on a local process pool or
a Ray cluster, as one DataFrame.

A point is a dict: ``kind`` ("load", the default, "run" or "net") and the
keyword arguments of :func:`nanopu.load`, :func:`nanopu.run` or
:func:`nanopu.net` (``program``, ``config``, ``rate_mrps``...), its
``seed``, and optionally a ``label`` (a column of the result only). Every seeded thing in the point's configuration (load arrivals
and payloads, random core selection, network faults, the workload) takes
the point's seed; a point without one gets ``seed + its index``. A point's
result then depends only on the point: the same DataFrame comes back from
either backend with any number of workers.

``python -m nanopu`` runs the papers' experiments this way, one task
per experiment; ``nanopu experiment --backend ray`` and ``nanopu reproduce
--backend ray`` call it.
"""

from __future__ import annotations

import argparse
import numbers
import os
import sys
import time
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import pandas as pd

from . import _native, _pool
from .config import Config, as_config

BACKENDS = ("local", "ray")


def _flat_params(point: Mapping[str, Any]) -> Dict[str, Any]:
    """A point's parameters as columns: scalars as they are, a config dict
    as dotted keys (``config.load.count``); a whole Config is left out."""
    out: Dict[str, Any] = {}
    for key, value in point.items():
        if key == "config" and isinstance(value, Mapping):
            stack = [("config", value)]
            while stack:
                prefix, table = stack.pop()
                for k, v in table.items():
                    if isinstance(v, Mapping):
                        stack.append((f"{prefix}.{k}", v))
                    elif not isinstance(v, (list, tuple)):
                        out[f"{prefix}.{k}"] = v
        elif isinstance(value, (str, bool, numbers.Number)) or value is None:  # numpy's too
            out[key] = value
        elif isinstance(value, (list, tuple)):
            out[key] = ",".join(map(str, value))
        elif isinstance(value, os.PathLike):
            out[key] = os.fspath(value)
    return out


def run_point(point: Mapping[str, Any]) -> Dict[str, Any]:
    """Runs one point; returns its row: parameters, then results (no host
    times, so rows are reproducible). Runs in a worker process or a Ray task."""
    from . import api

    kwargs = dict(point)
    kwargs.pop("label", None)
    kind = kwargs.pop("kind", "load")
    seed = kwargs.pop("seed")
    cfg = as_config(kwargs.pop("config", None)).with_seed(seed)
    kwargs["progress"] = False
    if kind == "load":
        result = api.load(config=cfg, **kwargs)
    elif kind == "run":
        result = api.run(config=cfg, **kwargs)
    elif kind == "net":
        result = api.net(cfg, **kwargs)
    else:
        raise _native.ConfigError(f"point kind {kind!r}: expected load, run or net")
    return result.summary()


def _points(points: Iterable[Mapping[str, Any]], seed: int) -> List[Dict[str, Any]]:
    out = []
    for i, p in enumerate(points):
        p = dict(p)
        p.setdefault("seed", seed + i)
        out.append(p)
    return out


#: Seconds to wait for a Ray cluster's address to answer (``NANOPU_RAY_TIMEOUT_S``).
RAY_CONNECT_TIMEOUT_S = 10.0


def ray_endpoint(address: str) -> Optional[Tuple[str, int]]:
    """The ``(host, port)`` of a Ray address (``HOST:PORT``,
    ``ray://HOST:PORT``), None for ``auto`` and ``local``; a one-line
    NanopuError for anything else."""
    a = address.strip()
    if a in ("auto", "local"):
        return None
    rest = a[len("ray://"):] if a.startswith("ray://") else a
    host, sep, port = rest.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if sep and host and "/" not in host and "://" not in rest and port.isdigit() and 0 < int(port) < 65536:
        return host, int(port)
    raise _native.NanopuError(
        f"Ray address {address!r}: expected HOST:PORT (the head's GCS, e.g. 10.0.0.1:6379), "
        "ray://HOST:PORT or auto"
    )


def _ray_timeout() -> float:
    text = os.environ.get("NANOPU_RAY_TIMEOUT_S")
    if text is None:
        return RAY_CONNECT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1e6:
        raise _native.NanopuError(f"NANOPU_RAY_TIMEOUT_S={text}: expected a positive number of seconds")
    return value


def check_ray_address(address: str) -> None:
    """A one-line NanopuError unless ``address`` parses and its host accepts
    a TCP connection within the timeout (Ray itself retries a dead address
    for ever)."""
    endpoint = ray_endpoint(address)
    if endpoint is None:
        return
    timeout = _ray_timeout()
    import socket

    try:
        with socket.create_connection(endpoint, timeout=timeout) as conn:
            speaks_grpc = _answers_http2(conn)
    except socket.timeout:
        raise _native.NanopuError(
            f"Ray address {address}: no answer within {timeout:g} s (NANOPU_RAY_TIMEOUT_S); "
            "is the cluster's head (`ray start --head`) running there and reachable?"
        ) from None
    except OSError as e:
        reason = e.strerror or str(e)
        raise _native.NanopuError(
            f"Ray address {address}: cannot connect ({reason}); is the cluster's head "
            "(`ray start --head`) running there?"
        ) from None


    if not speaks_grpc:
        raise _native.NanopuError(
            f"Ray address {address}: what answers there is not a Ray cluster (no gRPC); "
            "give the head's GCS address (`ray start --head` prints it)"
        )


#: An HTTP/2 client's first bytes: the preface and an empty SETTINGS frame.
_HTTP2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _answers_http2(conn) -> bool:
    """Whether the server on ``conn`` answers an HTTP/2 preface with a
    SETTINGS frame, as a gRPC server (Ray's GCS, its client server) does.
    Ray's own client retries for ever against anything else."""
    conn.sendall(_HTTP2_HELLO)
    head = b""
    while len(head) < 9:
        chunk = conn.recv(9 - len(head))
        if not chunk:
            return False
        head += chunk
    return head[3] == 4  # the frame type: SETTINGS


#: Set when a Ray connection was abandoned (its thread still retrying):
#: ``python -m nanopu`` then exits without Ray's exit handlers.
_ray_abandoned = False


def _ray_init_bounded(ray, address: str) -> None:
    """``ray.init(address=...)`` that gives up (a one-line NanopuError)
    after several probe timeouts: Ray retries a gRPC server that is not its
    GCS for ever. The attempt goes on in a daemon thread, abandoned."""
    import threading

    global _ray_abandoned
    outcome: List[BaseException] = []

    def connect() -> None:
        try:
            ray.init(address=address, log_to_driver=False)
        except BaseException as e:  # handed to the caller
            outcome.append(e)

    limit = 3 * _ray_timeout()
    t = threading.Thread(target=connect, name="nanopu-ray-init", daemon=True)
    t.start()
    t.join(limit)
    if t.is_alive():
        _ray_abandoned = True
        raise _native.NanopuError(
            f"Ray address {address}: Ray did not connect within {limit:g} s (3 x NANOPU_RAY_TIMEOUT_S); "
            "is it the head's GCS port of a running cluster of the same Ray version?"
        )
    if outcome:
        e = outcome[0]
        if isinstance(e, (ConnectionError, RuntimeError, ValueError, TimeoutError)):
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise _native.NanopuError(f"Ray address {address}: {first}") from None
        raise e


def _ray(address: Optional[str], workers: Optional[int]):
    """Ray, initialized: the cluster at ``address`` (or ``RAY_ADDRESS``),
    else a local instance of ``workers`` CPUs bound to 127.0.0.1."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address is not None:
        check_ray_address(address)  # before importing Ray: quick, and clear
    try:
        import ray
    except ImportError as e:  # pragma: no cover - ray is installed by setup
        raise _native.NanopuError("the ray backend needs Ray: pip install 'ray[default]'") from e
    if not ray.is_initialized():
        if address:
            _ray_init_bounded(ray, address)
        else:
            # Ray's own servers ignore the node address for their listening
            # sockets (docs/python.md): say so rather than open ports silently.
            print(
                "nanopu: starting a local Ray; its servers listen on every network interface "
                "(Ray's token authentication is on). See docs/python.md to confine them.",
                file=sys.stderr,
            )
            ray.init(
                num_cpus=workers or os.cpu_count(), include_dashboard=False, log_to_driver=False,
                _node_ip_address="127.0.0.1", object_store_memory=200 * 1024 * 1024,
            )
    return ray


def map_tasks(
    fn: Callable[..., Any],
    items: Sequence[Any],
    *,
    backend: str = "local",
    workers: Optional[int] = None,
    address: Optional[str] = None,
    cpus_per_task: int = 1,
    progress: Any = None,
    desc: str = "sweep",
) -> List[Any]:
    """``[fn(*item) for item in items]`` in parallel on ``backend``, in order.
    ``fn`` must be importable (a module-level function). The local backend's
    workers are ``python -m nanopu._worker`` processes (``nanopu._pool``):
    they never import the caller's ``__main__``."""
    if backend not in BACKENDS:
        raise _native.ConfigError(f"backend {backend!r}: expected local or ray")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, numbers.Integral)
                                or workers < 1):
        raise _native.ConfigError(f"workers={workers!r}: expected a positive number of processes (or None: "
                                  "the cores)")
    from tqdm import tqdm

    # Ray first: a bad address is one error line, with no bar before it.
    ray = _ray(address, workers) if backend == "ray" else None
    bar = tqdm(total=len(items), desc=desc, unit="points", disable=progress is False, leave=False)
    results: List[Any] = [None] * len(items)
    try:
        if backend == "local":
            def done(i: int, value: Any) -> None:
                results[i] = value
                bar.update(1)

            _pool.run_local(fn, items, workers or os.cpu_count() or 1, done)
        else:
            task = ray.remote(num_cpus=cpus_per_task, max_retries=0)(fn)
            refs = [task.remote(*item) for item in items]
            index = {r: i for i, r in enumerate(refs)}
            pending = list(refs)
            try:
                while pending:
                    done, pending = ray.wait(pending, num_returns=1)
                    for r in done:
                        results[index[r]] = ray.get(r)
                        bar.update(1)
            except BaseException:
                for r in pending:
                    ray.cancel(r, force=True)
                raise
    finally:
        bar.close()
    return results


def sweep(
    points: Iterable[Mapping[str, Any]],
    *,
    backend: str = "local",
    workers: Optional[int] = None,
    address: Optional[str] = None,
    seed: int = 1,
    progress: Any = None,
) -> pd.DataFrame:
    """Runs every point (see the module doc) in parallel; one row per point,
    in order: its parameters (a config dict as ``config.TABLE.KEY``), its
    seed, and its result's :meth:`summary` (no host times).

    ``backend="local"``: a pool of ``workers`` processes (default: the
    cores), started as ``python -m nanopu._worker``: it works from a
    script with or without a ``__main__`` guard, standard input, IPython or
    a notebook. ``backend="ray"``: Ray tasks, on the cluster at ``address`` (or
    ``RAY_ADDRESS``), else on a local Ray instance of ``workers`` CPUs; a
    Ray that is already initialized is used as it is.
    """
    pts = _points(points, seed)
    rows = map_tasks(run_point, [(p,) for p in pts], backend=backend, workers=workers, address=address,
                     progress=progress)
    return pd.DataFrame([{**_flat_params(p), **r} for p, r in zip(pts, rows)])


def run_experiment(name: str, scale: str, seed: int, config_toml: str, threads: Optional[int]) -> Dict[str, Any]:
    """One experiment, as a dict of plain data (a task of ``main``)."""
    start = time.time()
    raw = _native.experiment(name, scale, seed, config_toml, threads, None)
    raw["wall_s"] = time.time() - start
    return raw


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m nanopu [ID ...] --out DIR [--report] ...``: the
    experiments (all with ``--report``), one task each, on a local process
    pool or Ray; writes what ``nanopu experiment``/``reproduce`` write."""
    ap = argparse.ArgumentParser(prog="python -m nanopu", description=main.__doc__)
    ap.add_argument("ids", nargs="*", help="experiment ids (none with --report: all)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--report", action="store_true", help="write report.md and summary.json (nanopu reproduce)")
    ap.add_argument("--scale", choices=["quick", "full"], default="full")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--config", help="configuration file (TOML)")
    ap.add_argument("--backend", choices=BACKENDS, default="ray")
    ap.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS, else a local Ray)")
    ap.add_argument("--workers", type=int, help="processes (local) or local Ray CPUs")
    ap.add_argument("--threads", type=int, default=1, help="host threads (and Ray CPUs) per experiment")
    ap.add_argument("--command", default="nanopu reproduce", help="command line recorded in report.md")
    a = ap.parse_args(argv)
    try:
        cfg = Config.from_file(a.config) if a.config else Config()
        known = [e for e, _ in _native.experiments()]
        ids = a.ids or (known if a.report else [])
        if not ids:
            for e, title in _native.experiments():
                print(f"{e:<26} {title}")
            return 0
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise _native.ExperimentError(f'unknown experiment "{unknown[0]}"; known: {", ".join(known)}')
        tasks = [(i, a.scale, a.seed, cfg.to_toml(), a.threads) for i in ids]
        results = map_tasks(run_experiment, tasks, backend=a.backend, workers=a.workers, address=a.address,
                            cpus_per_task=a.threads, desc="experiments")
        for r in results:
            print(f"{r['id']}: done in {r['wall_s']:.1f} s", file=sys.stderr)
        _native.write_experiments(results, a.out, a.report, cfg.to_toml(), a.command)
        if a.report:
            print(f"wrote {os.path.join(a.out, 'report.md')}", file=sys.stderr)
        for r in results:
            for t in r["targets"]:
                print(f"{t['key']:>30}: measured {t['measured']:>9.2f} {t['unit']:<5} published {t['published']:>7.2f}",
                      file=sys.stderr)
        return 0
    except _native.NanopuError as e:
        print(f"error: {e}", file=sys.stderr)
        if _ray_abandoned:  # Ray's exit handlers would wait for it
            sys.stderr.flush()
            os._exit(125)
        return 125
    except KeyboardInterrupt:
        print("interrupted (Ctrl-C)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
