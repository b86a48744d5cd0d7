"""Type stubs of the native module (crates/python). Results come back as
JSON text or plain dicts; ``nanopu.api`` turns them into result objects."""

from os import PathLike
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

__version__: str

class NanopuError(Exception): ...
class ConfigError(NanopuError): ...
class SimulationError(NanopuError): ...
class ExperimentError(NanopuError): ...

Progress = Optional[Callable[[int, int], None]]
_Path = Union[str, PathLike[str]]

def config_parse(text: str, base_dir: Optional[_Path] = None) -> str: ...
def config_load(path: _Path) -> str: ...
def config_from_json(json: str, base_dir: Optional[_Path] = None) -> str: ...
def config_to_json(text: str) -> str: ...
def app_spec(spec: str) -> str: ...
def run(
    program: _Path,
    config: str,
    cores: Optional[int] = None,
    args: List[str] = ...,
    max_cycles: Optional[int] = None,
    echo: bool = False,
    progress: Progress = None,
) -> str: ...
def load(
    program: _Path,
    config: str,
    args: List[str] = ...,
    nic: Optional[str] = None,
    node_ip: Optional[str] = None,
    client_ip: Optional[str] = None,
    max_sim_ms: int = 1000,
    echo: bool = False,
    progress: Progress = None,
) -> str: ...
def net(config: str, until_us: int = 100000, progress: Progress = None) -> str: ...
def experiments() -> List[Tuple[str, str]]: ...
def experiment(
    id: str,
    scale: str = "quick",
    seed: int = 1,
    config: str = "",
    threads: Optional[int] = None,
    progress: Progress = None,
) -> Dict[str, Any]: ...
def write_experiments(
    results: List[Dict[str, Any]],
    out: _Path,
    report: bool = False,
    config: str = "",
    command: str = "nanopu reproduce",
) -> None: ...
def sdk_build_dir() -> Path: ...
