#!/usr/bin/env bash
# GPU suite of `cutune profile`, on the lent GPU machine:
#   1. tests/gpu/profile/three_kernels.cu, built with nvcc against the static CUDA runtime: its
#      ranking, each kernel's GPU time against ncu's gpu__time_duration summed over its launches
#      (within 5%), and each kernel found in the workspace;
#   2. a capture of `medium`: its grid, block and arguments, and its buffers before and after
#      (the buffer it writes changed, the one it only reads did not);
#   3. tests/gpu/profile/inline_scale.py, a PyTorch program whose kernel comes from the
#      workspace through load_inline: ranked, found and captured (--capture 1);
#   2b. the time to capture 256 MiB of arguments;
#   3b. templatize of that kernel, filled from the capture (no hand edit), and a tune whose
#      candidates are checked on the captured inputs too, with the winner verified;
#   4. the profiler's overhead on the program's wall time (median of 5, with and without);
#   5. a program that fails after its launches: its ranking and capture kept, with a warning.
# Reports go to $OUT (or ./gpu-out). The capture library must be beside the binary.
#   CUTUNE=target/release/cutune bash tests/gpu/profile_suite.sh
# A step piped into `tee` fails the suite when the step fails, not only when `tee` does.
set -u -o pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
cutune="$(realpath "${CUTUNE:-$repo/target/release/cutune}")"
out="${OUT:-$repo/gpu-out}"
mkdir -p "$out"
work="$(mktemp -d -t cutune-profile.XXXXXX)"
root=tests/gpu/profile
status=0

echo "== build"
nvcc -O2 -cudart static -o "$work/three_kernels" "$root/three_kernels.cu" || exit 1

echo "== 1. ranking against ncu"
CUTUNE_CAPTURE_DEBUG=1 "$cutune" profile --root "$root" --json -- "$work/three_kernels" > "$out/rank.json" 2> "$out/rank.err" || status=1
ncu --metrics gpu__time_duration.sum --csv --clock-control none "$work/three_kernels" > "$out/ncu.csv" 2> "$out/ncu.err" || status=1
python3 - "$out/rank.json" "$out/ncu.csv" <<'EOF' || status=1
import csv, io, json, sys
ranking = json.load(open(sys.argv[1]))["ranking"]
text = open(sys.argv[2]).read()
rows = list(csv.DictReader(io.StringIO(text[text.index('"ID"'):])))
ncu = {}
for row in rows:
    if row["Metric Name"] == "gpu__time_duration.sum":
        scale = {"ns": 1, "nsecond": 1, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6, "s": 1e9, "second": 1e9}[row["Metric Unit"]]
        name = row["Kernel Name"].split("(")[0]
        ncu[name] = ncu.get(name, 0) + float(row["Metric Value"].replace(",", "")) * scale
ok = True
order = [k["kernel"]["base"] for k in ranking["kernels"]]
print("order", order, "(expected heavy, medium, light)")
ok &= order == ["heavy", "medium", "light"]
for k in ranking["kernels"]:
    base = k["kernel"]["base"]
    diff = (k["total_ns"] - ncu[base]) / ncu[base]
    source = k["source"]["file"] if k["source"] else None
    print(f"{base}: cutune {k['total_ns']/1e6:.3f} ms, {k['launches']} launches, share {k['share']:.1%}; ncu {ncu[base]/1e6:.3f} ms; diff {diff:+.2%}; source {source}")
    ok &= abs(diff) <= 0.05 and k["launches"] == 5 and source is not None and source.endswith("three_kernels.cu")
print("ranking", "PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
EOF

echo "== 2. capture"
"$cutune" profile --root "$root" --kernel medium --json -- "$work/three_kernels" > "$out/capture.json" 2> "$out/capture.err" || status=1
python3 - "$out/capture.json" <<'EOF' || status=1
import json, struct, sys
report = json.load(open(sys.argv[1]))
captures = report["captures"]
print("captures", [(c["kernel"], c["grid"], c["block"], c["arguments"], c["buffer_bytes"]) for c in captures])
assert len(captures) == 1, captures
c = captures[0]
assert c["kernel"] == "medium" and c["grid"] == [16384, 1, 1] and c["block"] == [256, 1, 1] and c["arguments"] == 4, c
data = open(c["path"], "rb").read()
assert data[:16] == b"cutune capture\n\0", data[:16]
header_len = struct.unpack("<Q", data[-8:])[0]
header = json.loads(data[len(data) - 8 - header_len:len(data) - 8])
blobs = data[20:len(data) - 8 - header_len]
x, y, n, rounds = header["params"]
assert struct.unpack("<i", bytes.fromhex(n["value"]))[0] == 1 << 22 and struct.unpack("<i", bytes.fromhex(rounds["value"]))[0] == 400
def blob(r): return blobs[r["offset"]:r["offset"] + r["len"]]
assert x["buffer"]["bytes"] >= 4 << 22 and y["buffer"]["bytes"] >= 4 << 22
assert blob(x["buffer"]["before"]) != blob(x["buffer"]["after"]), "medium writes x"
assert blob(y["buffer"]["before"]) == blob(y["buffer"]["after"]), "medium only reads y"
print("capture PASS: x written, y read only,", header["kernel"])
EOF

echo "== 2b. capture speed: 256 MiB of arguments (light, 64 Mi floats)"
"$cutune" profile --root "$root" --kernel light --json -- "$work/three_kernels" 67108864 > "$out/capture_256.json" 2> "$out/capture_256.err" || status=1
python3 -c "
import json, sys
c = json.load(open(sys.argv[1]))['captures'][0]
print(f\"captured {c['buffer_bytes'] / 2**20:.0f} MiB of buffers (before and after) in {c['seconds']:.3f} s\")
assert c['buffer_bytes'] >= 256 << 20
" "$out/capture_256.json" | tee "$out/capture_speed.txt" || status=1

echo "== 3. PyTorch, load_inline"
"$cutune" profile --root "$root" --capture 1 --json -- python3 "$root/inline_scale.py" > "$out/torch.json" 2> "$out/torch.err" || status=1
python3 - "$out/torch.json" <<'EOF' || status=1
import json, sys
report = json.load(open(sys.argv[1]))
kernels = report["ranking"]["kernels"]
for k in kernels[:6]:
    print(f"{k['share']:6.1%} {k['launches']:4} {k['kernel']['base'][:60]} {k['source']['file'] if k['source'] else '-'}")
ours = [k for k in kernels if k["source"]]
assert ours and ours[0]["kernel"]["base"] == "scale_rows" and ours[0]["launches"] == 20, ours
assert [c["kernel"] for c in report["captures"]] == ["scale_rows"], report["captures"]
print("torch PASS; problems:", report["problems"])
EOF

echo "== 3b. tune scale_rows on its captured launch, with no hand edit to the spec"
"$cutune" templatize "$root/inline_scale.cu" --kernel scale_rows --write 2> "$out/templatize.err" || status=1
cp "$root/inline_scale.cutune.toml" "$out/" 2>/dev/null
"$cutune" spec check "$root/inline_scale.cutune.toml" > "$out/spec_check.txt" 2>&1 || status=1
"$cutune" tune "$root/inline_scale.cu" --kernel scale_rows --budget 24 --json > "$out/tune.json" 2> "$out/tune.err" || status=1
python3 - "$out/tune.json" "$root/inline_scale.cutune.toml" <<'EOF' || status=1
import json, sys, tomllib
report = json.load(open(sys.argv[1]))
[kernel] = tomllib.load(open(sys.argv[2], "rb"))["kernels"]
print("spec shapes", kernel["shapes"], "captures", [c["file"] for c in kernel.get("captures", [])])
assert kernel["shapes"] == [{"cols": 2048, "rows": 4096}], kernel["shapes"]
assert len(kernel["captures"]) == 1, kernel
# One problem per shape, then the captured launch on the program's own data.
assert len(report["baseline"]) == 2, report["baseline"]
best, verification = report["best"], report["verification"]
print("baseline", [round(t["median_us"], 2) for t in report["baseline"]], "µs; best", best["config"] if best else None,
      "speedup", best and best.get("speedup"), "; stop:", report["stop_reason"])
failed = [c for c in verification["cases"] if c["status"] == "fail"] if verification else None
assert best and verification and not failed, (verification, failed)
print("tune on captured data PASS:", len(report["rows"]), "evaluations, failures", report["failures"])
EOF

echo "== 4. overhead"
python3 - "$cutune" "$root" "$work/three_kernels" <<'EOF' | tee "$out/overhead.txt" || status=1
import re, statistics, subprocess, sys, time
cutune, root, program = sys.argv[1:]
def measure(cmd):
    walls, loops = [], []
    for _ in range(5):
        start = time.perf_counter()
        run = subprocess.run(cmd, check=True, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        loops.append(float(re.search(r"loop ([0-9.]+) ms", run.stdout).group(1)))
    return statistics.median(walls), statistics.median(loops)
alone = measure([program])
profiled = measure([cutune, "profile", "--root", root, "--", program])
print(f"median of 5: GPU time of the kernel loop (CUDA events) alone {alone[1]:.3f} ms, under cutune profile {profiled[1]:.3f} ms ({profiled[1]/alone[1] - 1:+.2%})")
print(f"median of 5: wall time alone {alone[0]*1e3:.1f} ms, under cutune profile {profiled[0]*1e3:.1f} ms ({profiled[0]/alone[0] - 1:+.1%}; cutune's start, CUPTI's load and the workspace index included)")
EOF

echo "== 5. a program that fails after its launches"
"$cutune" profile --root "$root" --kernel medium --json -- sh -c "\"$work/three_kernels\"; exit 4" > "$out/failing.json" 2> "$out/failing.err" || status=1
python3 - "$out/failing.json" <<'EOF' || status=1
import json, sys
report = json.load(open(sys.argv[1]))
names = [k["kernel"]["base"] for k in report["ranking"]["kernels"]]
warned = [p for p in report["problems"] if "failed (exit status: 4) after using CUDA" in p]
print("kept:", names, [c["kernel"] for c in report["captures"]], warned)
assert names == ["heavy", "medium", "light"] and [c["kernel"] for c in report["captures"]] == ["medium"] and warned
print("failing program PASS")
EOF

echo "== status $status"
exit $status
