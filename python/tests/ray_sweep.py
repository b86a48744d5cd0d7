"""Runs test_sweep's points on a local Ray and pickles the DataFrame to
argv[1]. test_sweep.py runs it in a network namespace of its own when it
can (root and `unshare`): Ray's servers listen on every interface, and
there the only interface is loopback."""

import sys

import ray

import nanopu
from test_sweep import POINTS

if __name__ == "__main__":
    try:
        df = nanopu.sweep(POINTS, backend="ray", workers=2, progress=False)
    finally:
        ray.shutdown()
    df.to_pickle(sys.argv[1])
