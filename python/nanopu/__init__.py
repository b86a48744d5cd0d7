"""nanopu: the nanoPU simulator from Python.

    import nanopu
    r = nanopu.load("loopback", count=2000, rate_mrps=5.0)
    r.requests.latency_ns.describe()          # a pandas DataFrame per request
    nanopu.sweep([{"program": "loopback", "msg_bytes": n} for n in (8, 64, 512)])

The functions run the same library as the ``nanopu`` command: the same
configuration schema (:class:`Config`), the same numbers for the same seed,
the same error messages (:class:`NanopuError` and its subclasses).
"""

from ._native import ConfigError, ExperimentError, NanopuError, SimulationError, __version__
from .api import experiment, experiments, load, load_config, net, program_path, run, sdk_build_dir
from .config import Config
from .results import ExperimentResult, LoadResult, NetResult, RunResult
from .sweep import sweep

__all__ = [
    "Config",
    "ConfigError",
    "ExperimentError",
    "ExperimentResult",
    "LoadResult",
    "NanopuError",
    "NetResult",
    "RunResult",
    "SimulationError",
    "__version__",
    "experiment",
    "experiments",
    "load",
    "load_config",
    "net",
    "program_path",
    "run",
    "sdk_build_dir",
    "sweep",
]
