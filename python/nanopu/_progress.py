"""tqdm bars driven by the native module's progress callback.

The native side calls back at most every 100 ms of host time (between
slices of the run, with the GIL taken: that is also when Ctrl-C is seen);
a bar appears only once a run has taken a second, so short runs stay quiet.
"""

from __future__ import annotations

from typing import Callable, Optional, Union

ProgressArg = Union[bool, None, Callable[[int, int], None]]


class Bar:
    """A context manager giving the native module a ``(done, total)`` callback."""

    def __init__(self, progress: ProgressArg, desc: str, unit: str):
        self._user = progress if callable(progress) else None
        self._enabled = progress is not False and self._user is None
        self._desc, self._unit = desc, unit
        self._bar = None

    def __enter__(self) -> Optional[Callable[[int, int], None]]:
        if self._user is not None:
            return self._user
        if not self._enabled:
            return None
        from tqdm import tqdm

        self._bar = tqdm(desc=self._desc, unit=self._unit, delay=1.0, leave=False, dynamic_ncols=True)
        return self._update

    def _update(self, done: int, total: int) -> None:
        bar = self._bar
        if total > 0 and bar.total != total:
            bar.total = total
        bar.update(max(done - bar.n, 0))

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.close()
