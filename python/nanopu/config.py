"""Configurations: the simulator's one schema (``nanopu config`` prints it).

A :class:`Config` is immutable and always valid: it is built by the same
parser as ``--config FILE`` (unknown or ill-typed keys raise
:class:`nanopu.ConfigError` naming the key), and keeps the effective
configuration (every key, defaults filled in) as TOML.
"""

from __future__ import annotations

import copy
import json
import math
import numbers
import os
from pathlib import Path
from typing import Any, Mapping, Optional, Union

from . import _native

ConfigLike = Union["Config", Mapping[str, Any], str, os.PathLike, None]

#: Every seeded thing in a configuration: load arrivals and payloads, random
#: core selection, network faults, the built-in hosts' workload.
SEED_KEYS = (("load", "seed"), ("nic", "core_selection_seed"), ("network", "seed"), ("workload", "seed"))


def _drop_none(value: Any) -> Any:
    """TOML has no null: a key set to None keeps its default."""
    if isinstance(value, Mapping):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_drop_none(v) for v in value]
    return value


#: TOML's integers (signed 64-bit): what a configuration can hold.
TOML_INT_MIN, TOML_INT_MAX = -(2**63), 2**63 - 1


def _check_values(value: Any, path: str = "") -> None:
    """A ConfigError naming the key of a value JSON or TOML cannot carry: a
    NaN or infinite float, an integer outside TOML's signed 64 bits."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            _check_values(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_values(v, f"{path}[{i}]")
    elif isinstance(value, bool):
        return
    elif isinstance(value, numbers.Integral):
        if not TOML_INT_MIN <= int(value) <= TOML_INT_MAX:
            raise _native.ConfigError(
                f"{path} = {int(value)}: out of range: a configuration's integers are TOML's, at most "
                f"{TOML_INT_MAX} (2^63-1){' (seeds too, though --seed takes up to 2^64-1)' if 'seed' in path else ''}"
            )
    elif isinstance(value, numbers.Real) and not math.isfinite(float(value)):
        raise _native.ConfigError(f"{path} = {float(value)}: expected a finite number")


def _plain(value: Any) -> Any:
    """numpy scalars (``df.x.max()``) and paths as JSON values."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"{type(value).__name__} has no TOML form")


def _merge(base: dict, updates: Mapping[str, Any]) -> dict:
    """``base`` with ``updates`` merged in, tables recursively."""
    out = copy.deepcopy(base)
    for key, value in updates.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _nest(dotted: Mapping[str, Any]) -> dict:
    """``{"load.count": 5}`` as ``{"load": {"count": 5}}``."""
    out: dict = {}
    for key, value in dotted.items():
        table = out
        *path, last = key.split(".")
        for part in path:
            table = table.setdefault(part, {})
        table[last] = value
    return out


class Config:
    """An effective simulator configuration.

    ``Config()`` is the defaults; ``Config({"node": {"cores": 2}})`` a dict
    (any subset of keys); ``Config("[node]\\ncores = 2")`` TOML text;
    ``Config(Path("configs/incast.toml"))`` a file (relative program paths
    from the file's directory, as ``nanopu net`` reads them).
    """

    __slots__ = ("_toml",)

    def __init__(self, source: ConfigLike = None, *, base_dir: Optional[os.PathLike] = None):
        if source is None:
            toml = _native.config_parse("")
        elif isinstance(source, Config):
            toml = source._toml
        elif isinstance(source, Mapping):
            base = None if base_dir is None else str(base_dir)
            values = _drop_none(source)
            _check_values(values)
            toml = _native.config_from_json(json.dumps(values, default=_plain, allow_nan=False), base)
        elif isinstance(source, os.PathLike) or (
            isinstance(source, str) and "\n" not in source and source.endswith(".toml")
        ):
            toml = _native.config_load(os.fspath(source))
        elif isinstance(source, str):
            base = None if base_dir is None else str(base_dir)
            toml = _native.config_parse(source, base)
        else:
            raise TypeError(f"Config(): expected a dict, TOML text, a path or a Config, not {type(source).__name__}")
        self._toml = toml

    @classmethod
    def from_toml(cls, text: str, base_dir: Optional[os.PathLike] = None) -> "Config":
        """TOML text (any subset of keys)."""
        return cls(text, base_dir=base_dir)

    @classmethod
    def from_file(cls, path: Union[str, os.PathLike]) -> "Config":
        """A configuration file, as ``--config FILE`` reads it."""
        return cls(Path(path))

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], base_dir: Optional[os.PathLike] = None) -> "Config":
        """A dict of tables (any subset of keys)."""
        return cls(values, base_dir=base_dir)

    def to_toml(self) -> str:
        """The effective configuration as TOML (what ``nanopu config`` prints)."""
        return self._toml

    def to_dict(self) -> dict:
        """The effective configuration as a dict of tables (a copy)."""
        return json.loads(_native.config_to_json(self._toml))

    def __getitem__(self, table: str) -> Any:
        return self.to_dict()[table]

    def merged(self, updates: Mapping[str, Any]) -> "Config":
        """A new configuration with ``updates`` (a dict of tables, or of
        dotted keys such as ``{"load.count": 100}``) merged in."""
        if any("." in k for k in updates):
            updates = _merge(_nest({k: v for k, v in updates.items() if "." in k}),
                             {k: v for k, v in updates.items() if "." not in k})
        return Config(_merge(self.to_dict(), updates))

    def with_seed(self, seed: int) -> "Config":
        """This configuration with every seed (:data:`SEED_KEYS`) set to ``seed``."""
        seed = int(seed)
        if not 0 <= seed <= TOML_INT_MAX:
            raise _native.ConfigError(
                f"seed {seed}: expected 0..{TOML_INT_MAX} (2^63-1): a configuration's seeds are TOML integers "
                "(the command line's --seed takes up to 2^64-1)"
            )
        values = self.to_dict()
        for table, key in SEED_KEYS:
            values[table][key] = seed
        return Config(values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self._toml == other._toml

    def __hash__(self) -> int:
        return hash(self._toml)

    def __reduce__(self):
        return (Config.from_toml, (self._toml,))

    def __repr__(self) -> str:
        return f"Config(<{len(self._toml.splitlines())} lines of TOML>)"


def as_config(config: ConfigLike) -> Config:
    """``config`` as a :class:`Config` (None: the defaults)."""
    return config if isinstance(config, Config) else Config(config)
