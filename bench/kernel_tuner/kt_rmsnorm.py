"""Kernel Tuner 1.5.0 (nvcuda backend, brute force) on the RMSNorm space of
bench/kernel_tuner/rmsnorm_8192.cutune.toml: the same templatized source, the same 24
configurations and problem size. Prints one JSON object: wall time of tune_kernel, per-config
compile and run times, and the best configuration.

usage: python3 kt_rmsnorm.py SLICE.cu
"""
import json
import sys
import time

import numpy as np
import kernel_tuner

rows, hidden = 8192, 8192
source = open(sys.argv[1]).read()
rng = np.random.default_rng(0)
x = rng.uniform(-1, 1, rows * hidden).astype(np.float16)
w = rng.uniform(-1, 1, hidden).astype(np.float16)
out = np.zeros_like(x)
args = [out, x, w, np.int32(hidden), np.float32(1e-6)]
tune_params = {"BLOCK_SIZE": [32, 64, 128, 256, 512, 1024], "RMSNORM_VEC": [1, 2, 4, 8]}

started = time.perf_counter()
results, env = kernel_tuner.tune_kernel(
    "rmsnorm_kernel", source, rows, args, tune_params,
    grid_div_x=[], block_size_names=["BLOCK_SIZE"], lang="nvcuda",
    compiler_options=["-std=c++17"], strategy="brute_force", quiet=True, verbose=False,
)
wall = time.perf_counter() - started
valid = [r for r in results if isinstance(r.get("time"), float)]
best = min(valid, key=lambda r: r["time"])
print(json.dumps({
    "tool": "kernel_tuner " + kernel_tuner.__version__,
    "wall_seconds": wall,
    "configurations": len(results),
    "valid": len(valid),
    "compile_ms_total": sum(r.get("compile_time", 0) for r in results),
    "best": {"BLOCK_SIZE": best["BLOCK_SIZE"], "RMSNORM_VEC": best["RMSNORM_VEC"], "time_us": best["time"] * 1e3},
    "device": env.get("device_name"),
    "results": [{"BLOCK_SIZE": r["BLOCK_SIZE"], "RMSNORM_VEC": r["RMSNORM_VEC"], "time_us": r["time"] * 1e3 if isinstance(r.get("time"), float) else str(r.get("time")), "compile_ms": r.get("compile_time")} for r in results],
}, indent=1))
