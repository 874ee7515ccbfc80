#!/usr/bin/env bash
# GPU suite of the tuning engine, in one run on the lent GPU machine:
#   1. the side-by-side with Kernel Tuner 1.5.0 on the RMSNorm space of
#      bench/kernel_tuner/rmsnorm_8192.cutune.toml (8192×8192 fp16, BLOCK_SIZE × RMSNORM_VEC,
#      24 configurations), brute force: cutune cold (empty cubin cache), cutune warm (cubins
#      cached, everything measured again), then Kernel Tuner on the same templatized source;
#   2. timing stability: 5 more warm runs; the best configuration of each and the spread of
#      the best configuration's median over the runs;
#   3. compile settings (threads × configurations per program), cold, to choose defaults;
#   4. a tune of every example with its own spec (budget 40), to show the loop end to end.
# Every report is written as JSON to $OUT (or ./gpu-out). Kernel Tuner needs its wheels in
# .whl/ (see docs/benchmarks.md for the pip download line).
#   CUTUNE=target/release/cutune bash tests/gpu/tune_suite.sh
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
cutune="${CUTUNE:-$repo/target/release/cutune}"
out="${OUT:-$repo/gpu-out}"
mkdir -p "$out"
work="$(mktemp -d -t cutune-tune.XXXXXX)"
spec=bench/kernel_tuner/rmsnorm_8192.cutune.toml
tune=("$cutune" tune examples/rmsnorm.cu --kernel rmsnorm_kernel --spec "$spec" --strategy brute-force --json)
status=0

echo "== device"; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$out/device.csv"

# The device's ceilings (speed of light) are measured once per device and cached: measured here
# first, so that no run below includes that one-time cost.
"$cutune" ceilings > "$out/ceilings_pre.txt" 2>&1 || status=1

echo "== 1. cutune cold, warm"
# `time` of the whole process: start-up, NVRTC, CUDA context, baseline, search. Cold: an empty
# cubin cache (--no-cache); warm: every cubin cached. Both measure everything again. Three of
# each; the first cold run is also the first process on the machine (cold OS caches).
for run in cold1 cold2 cold3 fill warm1 warm2 warm3; do
  flags=(--remeasure)
  case $run in cold*) flags+=(--no-cache) ;; esac  # `fill` compiles into the cache for `warm`
  start=$(date +%s.%N)
  "${tune[@]}" --workspace "$work/side" "${flags[@]}" > "$out/cutune_$run.json" 2> "$out/cutune_$run.err" || status=1
  end=$(date +%s.%N)
  echo "$start $end" > "$out/cutune_$run.wall"
done
python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
for kind in ("cold", "warm"):
    tunes, walls, searches = [], [], []
    for i in (1, 2, 3):
        r = json.load(open(f"{out}/cutune_{kind}{i}.json"))
        start, end = map(float, open(f"{out}/cutune_{kind}{i}.wall").read().split())
        b = r["best"]
        tunes.append(r["total_seconds"]); walls.append(end - start); searches.append(r["total_seconds"] - r["verify_seconds"])
        print(f'{kind}{i}: process {end - start:.3f} s (start-up {r["startup_seconds"]:.3f} s), tune {r["total_seconds"]:.3f} s (verifying the winner in five stages {r["verify_seconds"]:.3f} s; measuring {r["measure_seconds"]:.3f} s, '
              f'compiling {r["compile_seconds"]:.3f} s cpu), {len(r["rows"])} evaluated, {r["cached_compiles"]} cached; '
              f'best {b["config"]} {b["time_us"]:.2f} us ({b["speedup"]:.2f}x), baseline {r["baseline_us"]:.2f} us')
    print(f"{kind}: median tune {statistics.median(tunes):.3f} s ({statistics.median(searches):.3f} s before the winner's five-stage verification), median process {statistics.median(walls):.3f} s")
PY

echo "== 1. Kernel Tuner 1.5.0"
cp examples/rmsnorm.cu "$work/rms.cu"
"$cutune" templatize "$work/rms.cu" --kernel rmsnorm_kernel --write > /dev/null 2>&1
"$cutune" slice "$work/rms.cu" --kernel rmsnorm_kernel > "$work/rms_slice.cu" 2>/dev/null
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl > /dev/null 2>&1
  PYTHONPATH=/tmp/site python3 bench/kernel_tuner/kt_rmsnorm.py "$work/rms_slice.cu" > "$out/kernel_tuner.json" 2> "$out/kernel_tuner.err" || status=1
  python3 -c "import json;r=json.load(open('$out/kernel_tuner.json'));print(r['tool'], f\"wall {r['wall_seconds']:.3f} s, {r['configurations']} configs, compile {r['compile_ms_total']:.0f} ms, best\", r['best'])" || tail -5 "$out/kernel_tuner.err"
else
  echo "no .whl/: Kernel Tuner not run"; status=1
fi

echo "== 2. stability: 5 warm runs"
for i in 1 2 3 4 5; do
  "${tune[@]}" --workspace "$work/side" --remeasure > "$out/stability_$i.json" 2>/dev/null || status=1
done
python3 - "$out" <<'PY'
import json, sys, statistics
runs = [json.load(open(f"{sys.argv[1]}/stability_{i}.json")) for i in range(1, 6)]
bests = [str(r["best"]["config"]) for r in runs]
print("best of each run:", bests, "same" if len(set(bests)) == 1 else "DIFFERENT")
first = runs[0]["best"]["config"]
times = [next(row["time_us"] for row in r["rows"] if row["config"] == first) for r in runs]
print(f"{first}: medians over runs {['%.2f' % t for t in times]}, spread (max-min)/median {100 * (max(times) - min(times)) / statistics.median(times):.2f}%")
print("tune seconds of each run (warm):", [round(r["total_seconds"], 3) for r in runs])
spreads = [row["spread"] for r in runs for row in r["rows"] if row["spread"] is not None]
print(f"within-run spread (p75-p25)/median over all configurations: median {100 * statistics.median(spreads):.2f}%, max {100 * max(spreads):.2f}%")
PY

echo "== 3. compile settings, cold"
for setting in "1 1" "4 1" "4 8" "8 3" "16 2"; do
  set -- $setting
  "${tune[@]}" --workspace "$work/settings" --remeasure --no-cache -j "$1" --batch "$2" > "$out/settings_j$1_b$2.json" 2>/dev/null || status=1
  python3 -c "import json;r=json.load(open('$out/settings_j$1_b$2.json'));print('-j $1 --batch $2:', f\"search {r['search_seconds']:.3f} s, compile {r['compile_seconds']:.3f} s cpu, total {r['total_seconds']:.3f} s\")"
done

echo "== 4. every example, budget 40"
for spec_file in examples/*.cutune.toml; do
  name=$(basename "$spec_file" .cutune.toml)
  kernel=$(python3 -c "import tomllib;print(tomllib.load(open('$spec_file','rb'))['kernels'][0]['name'])")
  "$cutune" tune "examples/$name.cu" --kernel "$kernel" --budget 40 --workspace "$work/examples" --json > "$out/example_$name.json" 2> "$out/example_$name.err" || { status=1; tail -3 "$out/example_$name.err"; }
  python3 -c "import json;r=json.load(open('$out/example_$name.json'));b=r['best'];print('$name:', r['stop_reason'], len(r['rows']), 'evaluated;', 'best', b and b['config'], b and b['speedup'], dict(r['failures']))" 2>/dev/null
done
exit $status
