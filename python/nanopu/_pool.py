"""The local backend's process pool: workers started as ``python -m
nanopu._worker``, each taking one task at a time over a pipe.

Unlike multiprocessing's ``spawn`` (the issue #54 failure), a worker never
imports the caller's ``__main__``, so a sweep runs the same from a script
without an ``if __name__ == "__main__":`` guard, from standard input
(``python -``), in IPython and in a notebook. Workers run in a session of
their own (a Ctrl-C at the terminal reaches only the caller, which kills
them) and die with the caller (``PR_SET_PDEATHSIG`` on Linux, and a watch
on their parent's pid). A task is ``fn(*args)`` where ``fn`` is a
module-level function of an importable module; a result or exception comes
back pickled, so rows are what ``fn`` returns, bit for bit.

Frames on both pipes: an 8-byte big-endian length, then a pickle.
"""

from __future__ import annotations

import importlib
import os
import pickle
import selectors
import signal
import struct
import subprocess
import sys
from typing import Any, Callable, List, Optional, Sequence

from . import _native

_HEADER = struct.Struct(">Q")


def write_frame(out, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_HEADER.pack(len(data)) + data)
    out.flush()


def _read_exact(inp, n: int) -> Optional[bytes]:
    """``n`` bytes, or None at end of file."""
    chunks = []
    while n:
        chunk = inp.read(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(inp) -> Any:
    """The next object, or raises EOFError at end of file."""
    header = _read_exact(inp, _HEADER.size)
    if header is None:
        raise EOFError
    body = _read_exact(inp, _HEADER.unpack(header)[0])
    if body is None:
        raise EOFError
    return pickle.loads(body)


def function_ref(fn: Callable[..., Any]) -> tuple:
    """``(module, qualname)`` naming ``fn`` so a fresh interpreter finds it;
    a NanopuError (before any worker starts) if it cannot."""
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    found = None
    if module and module != "__main__" and "<" not in name:
        try:
            found = importlib.import_module(module)
            for part in name.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError):
            found = None
    if found is not fn:
        raise _native.NanopuError(
            f"{name or fn!r} cannot run in a worker process: the local backend runs module-level "
            "functions of importable modules (not of __main__, a notebook or a lambda)"
        )
    return module, name


def _interpreter() -> str:
    exe = sys.executable
    if not exe or not os.path.exists(exe):
        raise _native.NanopuError(
            "backend=\"local\" starts worker processes with this Python interpreter, but sys.executable "
            f"is {exe!r} (an embedded Python?): run the sweep from a regular python, or use workers=1 "
            "with backend=\"ray\", or call nanopu.load/run/net in a loop"
        )
    return exe


class _Worker:
    def __init__(self, argv: List[str], env: dict):
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, close_fds=True,
                # Its own session: a terminal's Ctrl-C goes to the caller only,
                # which then stops the workers itself.
                start_new_session=True,
            )
        except OSError as e:
            raise _native.NanopuError(f"cannot start a worker process ({argv[0]}): {e}") from None
        self.task: Optional[int] = None

    def send(self, task: int, payload: bytes) -> None:
        self.task = task
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(_HEADER.pack(len(payload)) + payload)
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass  # it died: reading its answer says how

    def stop(self, kill: bool) -> None:
        """Ends the worker and reaps it: at once (``kill``), else it exits
        when its input closes."""
        if kill and self.proc.poll() is None:
            self.proc.kill()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:  # a broken pipe to a dead worker
                pass
        try:
            self.proc.wait(timeout=None if kill else 10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_local(fn: Callable[..., Any], items: Sequence[Sequence[Any]], workers: int,
              on_result: Callable[[int, Any], None]) -> None:
    """``on_result(i, fn(*items[i]))`` for every item, as each finishes, on
    ``workers`` worker processes. The first exception of a task is raised
    (the other workers are stopped); so is KeyboardInterrupt."""
    if not items:
        return
    module, name = function_ref(fn)
    payloads = []
    for i, args in enumerate(items):
        try:
            payloads.append(pickle.dumps((module, name, tuple(args)), protocol=pickle.HIGHEST_PROTOCOL))
        except Exception as e:
            raise _native.NanopuError(
                f"item {i} cannot be sent to a worker process (it must be plain data: dicts, lists, "
                f"numbers, strings, Config): {e}"
            ) from e
    exe = _interpreter()
    # The package as this process imported it, whatever sys.path made that so.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env["NANOPU_WORKER_PARENT"] = str(os.getpid())
    # -P (3.11+): not the current directory first on sys.path, so a
    # user's file named like a module cannot shadow one.
    argv = [exe, *(["-P"] if sys.version_info >= (3, 11) else []), "-m", "nanopu._worker"]
    pool: List[_Worker] = []
    failed = True
    sel = selectors.DefaultSelector()
    try:
        queue = iter(range(len(items)))
        for _ in range(min(workers, len(items))):
            w = _Worker(argv, env)
            pool.append(w)
            i = next(queue)
            w.send(i, payloads[i])
            sel.register(w.proc.stdout, selectors.EVENT_READ, w)
        running = len(pool)
        while running:
            for key, _ in sel.select():
                w = key.data
                try:
                    ok, value = read_frame(w.proc.stdout)
                except EOFError:
                    status = w.proc.wait()
                    how = f"was killed by signal {-status}" if status < 0 else f"exited with status {status}"
                    raise _native.NanopuError(
                        f"a worker process {how} while running item {w.task} (see its messages above)"
                    ) from None
                if not ok:
                    raise value
                on_result(w.task, value)
                i = next(queue, None)
                if i is None:
                    sel.unregister(w.proc.stdout)
                    w.task = None
                    running -= 1
                else:
                    w.send(i, payloads[i])
        failed = False
    finally:
        sel.close()
        for w in pool:
            w.stop(kill=failed)


def exception_for_parent(e: BaseException) -> BaseException:
    """``e`` if it pickles (and unpickles), else a NanopuError with its text."""
    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:
        return _native.NanopuError(f"{type(e).__name__}: {e}")


def die_with_parent() -> None:
    """Ends this worker when the process that started it goes away."""
    parent = int(os.environ.get("NANOPU_WORKER_PARENT", "0") or 0)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if parent and os.getppid() != parent:  # it died before prctl
        os._exit(1)
    if parent:
        import threading
        import time

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()
