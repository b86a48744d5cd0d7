"""``python -m nanopu._worker``: one worker of the local backend's pool
(``nanopu._pool``). Reads ``(module, function, args)`` frames on standard
input, runs each, and writes ``(ok, result or exception)`` frames on
the original standard output; anything else printed goes to standard error.
Exits at the end of its input or when its parent goes away."""

import importlib
import os
import sys

from nanopu._pool import die_with_parent, exception_for_parent, read_frame, write_frame


def main() -> int:
    die_with_parent()
    inp = sys.stdin.buffer
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints must not break the frames
    while True:
        try:
            module, name, args = read_frame(inp)
        except EOFError:
            return 0
        try:
            fn = importlib.import_module(module)
            for part in name.split("."):
                fn = getattr(fn, part)
            reply = (True, fn(*args))
        except Exception as e:
            reply = (False, exception_for_parent(e))
        write_frame(out, reply)


if __name__ == "__main__":
    sys.exit(main())
