#!/usr/bin/env bash
# GPU suite: drive `cutune worker` through its protocol (docs/worker.md) with small kernels
# built by nvcc, and check what only a real GPU can show:
#   - `hello` reports the device's limits;
#   - a correct candidate passes; a wrong one mismatches at the right index; one that skips an
#     element shows the NaN poison there; in-out buffers are restored before every check;
#   - a captured launch's bytes (`data`) replace an input's seeded fill, as far as they reach;
#   - a launch the driver refuses is a `launch` failure and the worker goes on;
#   - dynamic shared memory above 48 KiB works (the opt-in is set);
#   - texture objects hold the seeded texels (2D and 3D arrays) and read bytes as normalized
#     floats when the spec says so;
#   - a kernel whose parameters do not match the spec's arguments is refused before launching;
#   - an out-of-bounds or trapping kernel is a `fault`, the worker exits, and a new one works;
#   - a kernel that never ends leaves the worker silent (the client's watchdog labels that
#     `timeout`), and after kill -9 a new worker works;
#   - repeated timings of one kernel agree (their spread is printed).
# Needs a GPU and nvcc; takes well under 2 minutes. Run it on the lent machine:
#   CUTUNE=target/release/cutune bash tests/gpu/worker_smoke.sh
# With WORKER_GPU_TEST=<the binary of `cargo test --test worker_gpu --no-run`> it also runs
# the Rust client through a fault and a hang (server/tests/worker_gpu.rs).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="${CUTUNE:-$repo/target/release/cutune}"
nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
work="${WORK_DIR:-$(mktemp -d -t cutune-worker-smoke.XXXXXX)}"
mkdir -p "$work"
if [ -z "${ARCH:-}" ]; then
  cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')"
  ARCH="sm_${cc:-90}"
fi

cat >"$work/kernels.cu" <<'EOF'
// extern "C": the lowered names are the plain names.
extern "C" __global__ void scale(float* out, const float* in, int n, float k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * k;
}
// The same result, written differently (grid-stride loop).
extern "C" __global__ void scale_strided(float* out, const float* in, int n, float k) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) out[i] = in[i] * k;
}
// Wrong at exactly one element.
extern "C" __global__ void scale_wrong(float* out, const float* in, int n, float k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * k + (i == 1234 ? 1.0f : 0.0f);
}
// Forgets the last element.
extern "C" __global__ void scale_skip_last(float* out, const float* in, int n, float k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n - 1) out[i] = in[i] * k;
}
// Stages through dynamic shared memory, of which it is given more than 48 KiB.
extern "C" __global__ void scale_shared(float* out, const float* in, int n, float k) {
    extern __shared__ float stage[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    stage[threadIdx.x] = i < n ? in[i] : 0.0f;
    __syncthreads();
    if (i < n) out[i] = stage[threadIdx.x] * k;
}
// Writes terabytes past the end of its output.
extern "C" __global__ void scale_oob(float* out, const float* in, int n, float k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i + (size_t)n * 1000000] = in[i] * k;
}
// Stops with a trap, as a failed device-side check would.
extern "C" __global__ void scale_trap(float* out, const float* in, int n, float k) {
    if (blockIdx.x == 3 && threadIdx.x == 0) __trap();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * k;
}
// Never ends: the inputs never hold this value, and the volatile read cannot be hoisted.
extern "C" __global__ void scale_hang(float* out, const float* in, int n, float k) {
    while (*(volatile const float*)in != 12345.0f) {}
    out[0] = k;
}
// Byte copies, for the comparison of every dtype on the device: the same signature, and the
// second flips bit 6 of the last byte of element `at` (an exponent bit of floats, a high bit of
// integers, so the change is beyond any tolerance).
extern "C" __global__ void copy_bytes(unsigned char* out, const unsigned char* in, unsigned long long bytes, unsigned long long size, unsigned long long at) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < bytes; i += (unsigned long long)gridDim.x * blockDim.x) out[i] = in[i];
}
extern "C" __global__ void poke_bytes(unsigned char* out, const unsigned char* in, unsigned long long bytes, unsigned long long size, unsigned long long at) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < bytes; i += (unsigned long long)gridDim.x * blockDim.x)
        out[i] = i == at * size + size - 1 ? in[i] ^ 0x40 : in[i];
}
// Right except where the input holds 7, which seeded data never does but a capture can.
extern "C" __global__ void scale_but_sevens(float* out, const float* in, int n, float k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] == 7.0f ? 0.0f : in[i] * k;
}
// y += x: an in-out buffer, so every checked run must start from the same y.
extern "C" __global__ void accumulate(float* y, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += x[i];
}
// Texture objects the worker makes: texel (x, y, z) of a float texture, or its neighbour along
// `shift` (which differs unless the texture is constant).
__device__ float texel(cudaTextureObject_t t, int i, int w, int h, int d, int shift) {
    int x = i % w, y = (i / w) % h, z = i / (w * h);
    return d > 1 ? tex3D<float>(t, x + 0.5f, y + 0.5f, z + 0.5f + shift) : tex2D<float>(t, x + 0.5f + shift, y + 0.5f);
}
extern "C" __global__ void tex_copy(float* out, cudaTextureObject_t t, int w, int h, int d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < w * h * d) out[i] = texel(t, i, w, h, d, 0);
}
extern "C" __global__ void tex_copy_shifted(float* out, cudaTextureObject_t t, int w, int h, int d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < w * h * d) out[i] = texel(t, i, w, h, d, 1);
}
// Bytes read as normalized floats are in [0, 1], and not all 0.
extern "C" __global__ void tex_normalized(float* out, cudaTextureObject_t t, int w, int h, int d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < w * h) {
        float4 p = tex2D<float4>(t, i % w, i / w);
        out[i] = (p.x >= 0.0f && p.x <= 1.0f && p.w >= 0.0f && p.w <= 1.0f) ? 1.0f : 0.0f;
    }
    if (i == 0) {
        float sum = 0.0f;
        for (int x = 0; x < 16; x++) sum += tex2D<float4>(t, x, 0).x;
        out[w * h] = sum > 0.0f ? 1.0f : 0.0f;
    }
}
extern "C" __global__ void tex_ones(float* out, cudaTextureObject_t t, int w, int h, int d) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < w * h) out[i] = 1.0f;
    if (i == 0) out[w * h] = 1.0f;
}
EOF
"$nvcc" -cubin -arch="$ARCH" -O3 -o "$work/kernels.cubin" "$work/kernels.cu"
# The worker's verification kernels, as the tuner would compile them with NVRTC.
"$nvcc" -cubin -arch="$ARCH" -O3 -o "$work/harness.cubin" "$repo/server/src/gpu/harness.cu"

PYTHONUNBUFFERED=1 python3 - "$cutune" "$work/kernels.cubin" "$work" "$work/harness.cubin" <<'EOF'
import json, os, select, signal, struct, subprocess, sys, time

cutune, cubin, work, harness = sys.argv[1:5]
failures = []
started = time.time()


def check(condition, what, detail=""):
    print(("ok    " if condition else "FAIL  ") + what + (f": {detail}" if detail and not condition else ""))
    if not condition:
        failures.append(what)


class Worker:
    def __init__(self):
        self.stderr = open(os.path.join(work, "worker.stderr"), "a")
        self.process = subprocess.Popen([cutune, "worker", "--device", "0"], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=self.stderr, text=True)

    def ask(self, request, timeout=60):
        """The response, or None when none comes within `timeout` seconds."""
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.process.stdout.readline()
        return json.loads(line) if line else {"response": "eof"}

    def exited_within(self, seconds):
        try:
            return self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()


def buffer(name, n, role):
    return {"kind": "buffer", "name": name, "dtype": "f32", "length": n, "role": role,
            "init": {"dist": "uniform", "low": -1.0, "high": 1.0},
            "tolerance": {"dtype": "f32", "atol": 1e-4, "rtol": 1e-5}}


SIZES = [1 << 22, 1_000_003]  # a power of two and an awkward size
SCALE_PROBLEMS = [{"label": f"n={n}", "seed": 7,
                   "args": [buffer("out", n, "output"), buffer("in", n, "input"),
                            {"kind": "scalar", "name": "n", "dtype": "i32", "value": n},
                            {"kind": "scalar", "name": "k", "dtype": "f32", "value": 2.5}]} for n in SIZES]
ACCUMULATE_PROBLEMS = [{"label": f"n={n}", "seed": 7,
                        "args": [buffer("y", n, "inout"), buffer("x", n, "input"),
                                 {"kind": "scalar", "name": "n", "dtype": "i32", "value": n}]} for n in SIZES]
TIMING = {"max_ms": 500}


def kernel(function, block=256, shared=0, grid=None):
    launches = [{"grid": [grid or (n + block - 1) // block, 1, 1], "block": [block, 1, 1], "shared_bytes": shared}
                for n in SIZES]
    return {"module": {"cubin": cubin, "function": function}, "launches": launches}


def prepare(worker, problems=SCALE_PROBLEMS, baseline="scale", launches=None):
    k = kernel(baseline) if launches is None else {"module": {"cubin": cubin, "function": baseline}, "launches": launches}
    return worker.ask({"request": "prepare", "problems": problems, "baseline": k, "harness": harness, "timing": TIMING})


def measure(worker, k, timeout=60):
    response = worker.ask({"request": "measure", "kernel": k, "timing": TIMING}, timeout)
    return response and response.get("outcome")


def start():
    worker = Worker()
    ready = worker.ask({"request": "hello"})
    prepared = prepare(worker)
    ok = ready and ready["response"] == "ready" and prepared and prepared["response"] == "prepared"
    return worker, ok, (ready, prepared)


# Device information.
worker = Worker()
ready = worker.ask({"request": "hello"})
check(ready and ready["response"] == "ready", "hello answers ready", ready)
device = ready["device"]
print(f"      {device['name']}, sm_{device['compute_capability'][0]}{device['compute_capability'][1]}, "
      f"{device['multiprocessors']} SMs, L2 {device['l2_bytes'] >> 20} MiB, driver {device['driver_version']}")
check(device["compute_capability"][0] >= 7 and device["multiprocessors"] > 0 and device["warp_size"] == 32
      and device["l2_bytes"] > 0 and device["shared_bytes_per_block"] == 48 * 1024
      and device["shared_bytes_per_block_optin"] > 48 * 1024 and device["memory_bytes"] > 0,
      "device limits are plausible", device)

prepared = prepare(worker)
check(prepared and prepared["response"] == "prepared" and len(prepared["timings"]) == 2
      and all(t["median_us"] > 0 for t in prepared["timings"]), "the baseline is prepared and timed", prepared)
print(f"      baseline medians: {[round(t['median_us'], 2) for t in prepared['timings']]} µs")

outcome = measure(worker, kernel("scale_strided", grid=264))
check(outcome["outcome"] == "measured" and outcome["verdict"]["status"] == "pass", "a correct candidate passes", outcome)

outcome = measure(worker, kernel("scale_wrong"))
verdict = outcome.get("verdict", {})
check(verdict.get("status") == "mismatch" and verdict.get("index") == 1234 and verdict.get("problem") == 0
      and verdict.get("arg") == "out" and verdict.get("mismatches") == 2
      and abs(verdict["actual"] - verdict["expected"] - 1.0) < 1e-5,
      "a wrong candidate mismatches at index 1234, once per problem", outcome)

outcome = measure(worker, kernel("scale_skip_last"))
verdict = outcome.get("verdict", {})
check(verdict.get("status") == "mismatch" and verdict.get("index") == SIZES[0] - 1 and verdict.get("actual") == "NaN",
      "an element left unwritten shows the NaN poison", outcome)

outcome = measure(worker, kernel("scale_shared", shared=100 * 1024))
check(outcome["outcome"] == "measured" and outcome["verdict"]["status"] == "pass",
      "100 KiB of dynamic shared memory works (opt-in set)", outcome)

outcome = measure(worker, kernel("scale", block=2048))
check(outcome["outcome"] == "failed" and outcome["kind"] == "infeasible" and "at most 1024 threads per block" in outcome["message"],
      "a block over the kernel's thread limit is infeasible, before launch", outcome)
print(f"      {outcome.get('message')}")
outcome = measure(worker, kernel("no_such_kernel"))
check(outcome["outcome"] == "failed" and outcome["kind"] == "launch" and "no kernel named" in outcome["message"],
      "a missing kernel name is a launch failure", outcome)
outcome = measure(worker, kernel("accumulate"))
check(outcome["outcome"] == "failed" and outcome["kind"] == "launch" and "takes 3 parameters, but the spec gives 4" in outcome["message"],
      "a kernel whose parameters do not match the spec is refused before launching", outcome)
outcome = measure(worker, kernel("scale"))
check(outcome["outcome"] == "measured" and outcome["verdict"]["status"] == "pass", "the worker goes on after them", outcome)

# Timing spread: the same kernel five times.
medians = []
for _ in range(5):
    outcome = measure(worker, kernel("scale"))
    medians.append(outcome["timings"][0]["median_us"])
    t = outcome["timings"][0]
    print(f"      median {t['median_us']:.2f} µs, min {t['min_us']:.2f}, max {t['max_us']:.2f}, "
          f"spread {100 * t['spread']:.2f}%, {t['runs']} runs")
check(max(medians) / min(medians) < 1.10, "five timings of one kernel agree within 10%", medians)

# A fault ends the worker; a new one works.
outcome = measure(worker, kernel("scale_oob"))
check(outcome["outcome"] == "failed" and outcome["kind"] == "fault", "an out-of-bounds kernel is a fault", outcome)
print(f"      {outcome.get('message')}")
check(worker.exited_within(10) not in (None, 0), "the worker exits after the fault")
worker, ok, detail = start()
check(ok, "a new worker starts and prepares after the fault", detail)
outcome = measure(worker, kernel("scale"))
check(outcome and outcome["outcome"] == "measured", "and measures", outcome)

# A trap is a fault too.
outcome = measure(worker, kernel("scale_trap"))
check(outcome["outcome"] == "failed" and outcome["kind"] == "fault", "a trapping kernel is a fault", outcome)
print(f"      {outcome.get('message')}")
check(worker.exited_within(10) not in (None, 0), "the worker exits after the fault")
worker, ok, detail = start()
check(ok, "a new worker starts and prepares after the trap", detail)

# A hang: no answer; the client would kill it and label the candidate Timeout.
hang_started = time.time()
outcome = measure(worker, kernel("scale_hang"), timeout=5)
check(outcome is None, "a kernel that never ends gets no answer in 5 s", outcome)
worker.kill()
worker, ok, detail = start()
check(ok, "after kill -9 a new worker starts and prepares", detail)
outcome = measure(worker, kernel("scale"))
check(outcome and outcome["outcome"] == "measured", "and measures", outcome)
print(f"      hang, kill and restart took {time.time() - hang_started:.1f} s")

# In-out buffers are restored before each checked run: measuring the baseline itself passes.
prepared = prepare(worker, ACCUMULATE_PROBLEMS, "accumulate")
check(prepared and prepared["response"] == "prepared", "a second prepare replaces the first", prepared)
outcome = measure(worker, kernel("accumulate"))
check(outcome["outcome"] == "measured" and outcome["verdict"]["status"] == "pass",
      "an in-out kernel matches itself (its buffer is restored first)", outcome)

# A captured launch's input: its bytes, at their offset in the capture file, replace the seeded
# fill as far as they reach. A kernel wrong only where the input holds 7 shows it.
SEVENS = 1000
capture_file = os.path.join(work, "sevens.cutcap")
with open(capture_file, "wb") as f:
    f.write(b"\0" * 20 + struct.pack(f"<{SEVENS}f", *[7.0] * SEVENS))
captured_in = dict(buffer("in", SIZES[0], "input"), data={"file": capture_file, "offset": 20, "bytes": 4 * SEVENS})
captured = [dict(SCALE_PROBLEMS[0], label="captured", args=[SCALE_PROBLEMS[0]["args"][0], captured_in, *SCALE_PROBLEMS[0]["args"][2:]])]
one_launch = [kernel("scale")["launches"][0]]
prepare(worker)
outcome = measure(worker, kernel("scale_but_sevens"))
check(outcome["outcome"] == "measured" and outcome["verdict"]["status"] == "pass", "seeded data holds no 7: the kernel passes", outcome)
prepared = prepare(worker, captured, "scale", one_launch)
outcome = measure(worker, {"module": {"cubin": cubin, "function": "scale_but_sevens"}, "launches": one_launch})
verdict = outcome.get("verdict", {})
check(prepared and prepared["response"] == "prepared" and verdict.get("status") == "mismatch" and verdict.get("index") == 0
      and verdict.get("mismatches") == SEVENS and verdict.get("expected") == 17.5,
      f"on the captured input the {SEVENS} sevens are the mismatches", (prepared, outcome))

# Every dtype: data drawn on the device within its distribution, compared on the device.
DTYPES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "fp8e4m3": 1, "fp8e5m2": 1,
          "i8": 1, "i16": 2, "i32": 4, "i64": 8, "u8": 1, "u16": 2, "u32": 4, "u64": 8}
N = 100_003
for dtype, size in DTYPES.items():
    floating = dtype[0] in "fb"
    if floating:
        init, low, high = {"dist": "normal", "mean": 0.0, "std": 1.0}, -20.0, 20.0
    else:
        low, high = (-5, 5) if dtype[0] == "i" else (0, 200)
        init = {"dist": "integers", "low": low, "high": high}
    arg = lambda name, role: {"kind": "buffer", "name": name, "dtype": dtype, "length": N, "role": role, "init": init,
                              "tolerance": {"dtype": dtype, "atol": 0.0 if not floating else 0.1, "rtol": 0.0 if not floating else 0.1}}
    problems = [{"label": dtype, "seed": 3, "args": [arg("out", "output"), arg("in", "input"),
                 {"kind": "scalar", "name": "bytes", "dtype": "u64", "value": N * size},
                 {"kind": "scalar", "name": "size", "dtype": "u64", "value": size},
                 {"kind": "scalar", "name": "at", "dtype": "u64", "value": 777}]}]
    launches = [{"grid": [256, 1, 1], "block": [256, 1, 1], "shared_bytes": 0}]
    prepared = prepare(worker, problems, "copy_bytes", launches)
    same = measure(worker, {"module": {"cubin": cubin, "function": "copy_bytes"}, "launches": launches})
    poked = measure(worker, {"module": {"cubin": cubin, "function": "poke_bytes"}, "launches": launches})
    verdict = poked and poked.get("verdict") or {}
    expected = verdict.get("expected")
    check(prepared and prepared["response"] == "prepared" and same and same["verdict"]["status"] == "pass"
          and verdict.get("status") == "mismatch" and verdict.get("index") == 777 and verdict.get("mismatches") == 1
          and isinstance(expected, (int, float)) and low <= expected <= high and expected != 0,
          f"{dtype}: seeded data in range, a copy passes, a poked element is the one mismatch", (prepared, same, poked))

# Texture objects: a CUDA array the worker fills from the seed (2D and 3D), sampled as the
# spec says, and bytes read as normalized floats.
def texture_problem(extent, dtype="f32", channels=1, read="element", init=None, out=None):
    w, h, d = (list(extent) + [1, 1])[:3]
    texture = {"kind": "texture", "name": "t", "dtype": dtype, "extent": list(extent), "layout": "array", "channels": channels,
               "filter": "point", "address": "clamp", "normalized_coords": False, "read": read,
               "init": init or {"dist": "uniform", "low": -1.0, "high": 1.0}}
    scalars = [{"kind": "scalar", "name": n, "dtype": "i32", "value": v} for n, v in (("w", w), ("h", h), ("d", d))]
    return [{"label": f"texture {extent}", "seed": 5, "args": [buffer("out", out or w * h * d, "output"), texture, *scalars]}]


def on_texture(function, count):
    return {"module": {"cubin": cubin, "function": function}, "launches": [{"grid": [(count + 255) // 256, 1, 1], "block": [256, 1, 1], "shared_bytes": 0}]}


for extent in ([1000, 301], [64, 48, 20]):
    count = 1
    for e in extent:
        count *= e
    prepared = prepare(worker, texture_problem(extent), "tex_copy", on_texture("tex_copy", count)["launches"])
    same = measure(worker, on_texture("tex_copy", count))
    shifted = measure(worker, on_texture("tex_copy_shifted", count))
    check(prepared and prepared["response"] == "prepared" and same and same["verdict"]["status"] == "pass"
          and shifted and shifted["verdict"]["status"] == "mismatch" and shifted["verdict"]["mismatches"] > count // 2,
          f"a {len(extent)}D texture holds seeded texels: a copy passes, a shifted copy mismatches", (prepared, same, shifted))
rgba = texture_problem([640, 480], "u8", 4, "normalized_float", {"dist": "integers", "low": 0, "high": 256}, out=640 * 480 + 1)
prepared = prepare(worker, rgba, "tex_ones", on_texture("tex_ones", 640 * 480)["launches"])
normalized = measure(worker, on_texture("tex_normalized", 640 * 480))
check(prepared and prepared["response"] == "prepared" and normalized and normalized["verdict"]["status"] == "pass",
      "RGBA bytes read as normalized floats are in [0, 1] and not all zero", (prepared, normalized))

worker.ask({"request": "shutdown"}, timeout=0)
check(worker.exited_within(10) == 0, "shutdown ends the worker cleanly")

print(f"\n{len(failures)} failed, in {time.time() - started:.1f} s" + (f": {failures}" if failures else ""))
if failures:
    print("worker stderr:\n" + open(os.path.join(work, "worker.stderr")).read())
sys.exit(1 if failures else 0)
EOF

# The same through the Rust client (watchdog, restarts), when its test binary is at hand.
if [ -n "${WORKER_GPU_TEST:-}" ]; then
  CUTUNE="$cutune" CUTUNE_SMOKE_CUBIN="$work/kernels.cubin" CUTUNE_HARNESS_CUBIN="$work/harness.cubin" "$WORKER_GPU_TEST" --test-threads 1
fi
