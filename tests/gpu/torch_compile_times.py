"""torch.compile's time for the operation of one example on one shape, measured as cutune
measures: every launch after the L2 is flushed, CUDA events, the median of 30. Prints one JSON
line: {"example", "shape", "torch_compile_us", "eager_us"}.
    python3 tests/gpu/torch_compile_times.py EXAMPLE KEY=VALUE ..."""
import json
import statistics
import sys

import torch
import torch.nn.functional as F

example = sys.argv[1]
shape = {k: int(v) for k, v in (a.split("=") for a in sys.argv[2:])}
dev = "cuda"


def rmsnorm(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)


def fused_add_rmsnorm(x, residual, w):
    r = x.float() + residual.float()
    out = r * torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
    return out.to(x.dtype), r.to(x.dtype)


def layernorm(x, w, b):
    return F.layer_norm(x.float(), (x.shape[-1],), w.float(), b.float(), 1e-5).to(x.dtype)


def silu_and_mul(x):
    d = x.shape[-1] // 2
    return (F.silu(x[:, :d].float()) * x[:, d:].float()).to(x.dtype)


def softmax(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


def sgemm(a, b, c):
    # alpha 1.5 and beta 0.5, as the example's test driver: one cuBLAS SGEMM in eager mode.
    return torch.addmm(c, a, b, beta=0.5, alpha=1.5)


def inputs():
    r = lambda *s, dtype: torch.randn(*s, device=dev, dtype=dtype)
    if example == "rmsnorm":
        return rmsnorm, (r(shape["rows"], shape["hidden"], dtype=torch.half), r(shape["hidden"], dtype=torch.half))
    if example == "fused_add_rmsnorm":
        bf = torch.bfloat16
        return fused_add_rmsnorm, (r(shape["rows"], shape["hidden"], dtype=bf), r(shape["rows"], shape["hidden"], dtype=bf), r(shape["hidden"], dtype=bf))
    if example == "layernorm":
        bf = torch.bfloat16
        return layernorm, (r(shape["rows"], shape["hidden"], dtype=bf), r(shape["hidden"], dtype=bf), r(shape["hidden"], dtype=bf))
    if example == "silu_and_mul":
        return silu_and_mul, (r(shape["tokens"], 2 * shape["d"], dtype=torch.half),)
    if example == "softmax":
        return softmax, (r(shape["rows"], shape["cols"], dtype=torch.half),)
    if example == "sgemm":
        # FP32 on the FP32 units, as the example computes: no TF32 tensor cores.
        torch.backends.cuda.matmul.allow_tf32 = False
        m, n, k = shape["M"], shape["N"], shape["K"]
        return sgemm, (r(m, k, dtype=torch.float), r(k, n, dtype=torch.float), r(m, n, dtype=torch.float))
    raise SystemExit(f"{example}: no PyTorch form")


def median_us(fn, args):
    flush = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    for _ in range(5):
        fn(*args)
    times = []
    for _ in range(30):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000)
    return statistics.median(times)


fn, args = inputs()
compiled = torch.compile(fn)
print(json.dumps({"example": example, "shape": shape, "torch_compile_us": median_us(compiled, args), "eager_us": median_us(fn, args)}))
