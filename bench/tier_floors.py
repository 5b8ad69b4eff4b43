"""The floors the cache-tier benchmarks compare restores with, on the machine
that runs them: a page-cache read of a prefix store's record files and a host
memory copy of a host-pool record's bytes (cpu_tiers_v41.py, cpu_tiers_32k.py,
gpu_tiers_v41.py)."""
import os
import time

import numpy as np


def store_read(cache_dir):
    """(bytes, seconds) to read every record in cache_dir (warm page cache)."""
    files = [os.path.join(cache_dir, f) for f in os.listdir(cache_dir) if f.endswith(".kvb")]
    t0 = time.perf_counter()
    total = 0
    for f in files:
        with open(f, "rb") as handle:
            total += len(handle.read())
    return total, time.perf_counter() - t0, len(files)


def memory_copy(nbytes, repeats=10):
    """Seconds of one host memory copy of nbytes (mean of `repeats`)."""
    buf = np.zeros(max(nbytes, 1), np.uint8)
    t0 = time.perf_counter()
    for _ in range(repeats):
        buf.copy()
    return (time.perf_counter() - t0) / repeats
