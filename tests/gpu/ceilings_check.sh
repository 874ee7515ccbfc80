#!/usr/bin/env bash
# GPU check of the speed-of-light ceilings (docs/sol.md), on the lent GPU machine:
#   1. `cutune ceilings --refresh --json` measures copy bandwidth and the FP32/FP16 rates; each
#      must lie between half of and a little above the device's datasheet figure;
#   2. with PyTorch present, a 1 GiB `copy_` timed the same way (best of 10 after 2 warm-ups):
#      cutune's copy bandwidth must reach at least 95% of it; and the copy's times by size,
#      from 256 KiB to 1 GiB each way, none slower for fewer bytes, each within 5% of (or
#      faster than) PyTorch's `copy_` of that size timed the same way after an L2 flush;
#   3. a second run is served from the cache (`cached`, and fast);
#   4. a corrupt cache file gets a warning and is measured again, never a crash.
# The cache lives in a temporary folder, not the user's. Reports go to $OUT (or ./gpu-out).
#   CUTUNE=target/release/cutune bash tests/gpu/ceilings_check.sh
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="${CUTUNE:-$repo/target/release/cutune}"
out="${OUT:-$repo/gpu-out}"
mkdir -p "$out"
export XDG_CACHE_HOME="$(mktemp -d -t cutune-ceilings.XXXXXX)"

echo "== 1. measure"
"$cutune" ceilings --refresh
"$cutune" ceilings --json > "$out/ceilings.json"
python3 - "$out/ceilings.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
measured, datasheet = report["measured"], report["datasheet"]
assert measured and measured["origin"]["kind"] == "measured", report
if datasheet:
    for key in ("copy_gbs", "fp32_tflops", "fp16_tflops"):
        ratio = measured[key] / datasheet[key]
        print(f"{key}: {measured[key]:.1f} measured, {datasheet[key]:.1f} datasheet ({ratio:.0%})")
        assert 0.5 <= ratio <= 1.1, f"{key} is {ratio:.0%} of the datasheet figure"
PY

echo "== 2. against PyTorch's copy"
if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
  python3 - "$out/ceilings.json" <<'PY'
import json, sys, torch
x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda").fill_(1)
y = torch.empty_like(x)
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
for _ in range(2):
    y.copy_(x)
best = float("inf")
for _ in range(10):
    start.record(); y.copy_(x); end.record(); end.synchronize()
    best = min(best, start.elapsed_time(end))
torch_gbs = 2 * x.numel() / (best * 1e6)
ours = json.load(open(sys.argv[1]))["measured"]["copy_gbs"]
print(f"copy: cutune {ours:.0f} GB/s, torch copy_ {torch_gbs:.0f} GB/s")
assert ours >= 0.95 * torch_gbs, "cutune's copy is more than 5% below PyTorch's"

times = json.load(open(sys.argv[1]))["measured"]["copy_times"]
assert len(times) >= 10, times
assert all(a["bytes"] < b["bytes"] and a["us"] <= b["us"] for a, b in zip(times, times[1:])), times
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
for point in times:
    size = int(point["bytes"]) // 2
    src, dst = x[:size], y[:size]
    for _ in range(2):
        dst.copy_(src)
    best = float("inf")
    for run in range(10):
        flush.fill_(run)
        start.record(); dst.copy_(src); end.record(); end.synchronize()
        best = min(best, start.elapsed_time(end) * 1000.0)
    print(f"copy of {point['bytes'] / 1e6:9.1f} MB: cutune {point['us']:9.2f} µs, torch copy_ {best:9.2f} µs")
    assert point["us"] <= 1.05 * best, f"cutune's copy of {size} bytes each way is more than 5% slower than PyTorch's"
PY
else
  echo "PyTorch with CUDA not found: skipped"
fi

echo "== 3. cached"
start=$(date +%s.%N)
"$cutune" ceilings --json > "$out/ceilings_cached.json"
end=$(date +%s.%N)
python3 - "$out/ceilings_cached.json" "$start" "$end" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
assert report["cached"], report
print(f"served from {report['cache_file']} in {float(sys.argv[3]) - float(sys.argv[2]):.2f} s")
PY

echo "== 4. a corrupt cache"
file=$(python3 -c "import json; print(json.load(open('$out/ceilings_cached.json'))['cache_file'])")
echo "not json" > "$file"
"$cutune" ceilings 2> "$out/ceilings_corrupt.err"
grep -q "warning: the cached ceilings .* are not readable" "$out/ceilings_corrupt.err"
python3 -c "import json; json.load(open('$file'))"  # measured again and stored
echo "ceilings check: passed"
