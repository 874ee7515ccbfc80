#!/usr/bin/env bash
# GPU suite of verification and the speed of light (issue 5), in one run on the lent GPU machine:
#   0. the device's ceilings, measured (and cached), next to the datasheet's;
#   1. fault isolation: a brute-force tune of tests/fixtures/faults/faults.cu, whose MODE 1..9
#      each misbehave in one way (out-of-bounds write, hang, unwritten shared memory, race,
#      NaN, skipped output, too much shared memory, too many registers, illegal address).
#      Every mode must get its label, the run must end with MODE=0 verified as best, the
#      worker restarted where needed, and a second run must find all ten results stored;
#   2. `cutune verify` on each misbehaving mode that runs: the five stages' first failure
#      must name the misbehaviour (shared-memory reads and races included);
#   3. the examples (budget 40, winner verified in five stages) and RMSNorm 8192×8192 (the
#      Kernel Tuner space): %SOL of the baseline and of the winner; then compute-sanitizer
#      memcheck and racecheck over each example's winner (`cutune verify --stages smoke`).
# Reports go to $OUT (or ./gpu-out); the exit status says whether every check held.
#   CUTUNE=target/release/cutune bash tests/gpu/fault_suite.sh
# A step piped into `tee` fails the suite when the step fails, not only when `tee` does.
set -u -o pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
cutune="$(realpath "${CUTUNE:-$repo/target/release/cutune}")"
out="${OUT:-$repo/gpu-out}"
mkdir -p "$out"
work="$(mktemp -d -t cutune-faults.XXXXXX)"
faults=tests/fixtures/faults/faults.cu
status=0

echo "== 0. ceilings"
"$cutune" ceilings --refresh 2>&1 | tee "$out/ceilings.txt" || status=1

echo "== 1. fault isolation: one tune over every mode"
start=$(date +%s.%N)
"$cutune" tune "$faults" --kernel faulty --strategy brute-force --workspace "$work/faults" --json > "$out/faults_tune.json" 2> "$out/faults_tune.err" || status=1
end=$(date +%s.%N)
"$cutune" tune "$faults" --kernel faulty --strategy brute-force --workspace "$work/faults" --json > "$out/faults_resume.json" 2> "$out/faults_resume.err" || status=1
python3 - "$out" "$end" "$start" <<'PY' || status=1
import json, sys
out, end, start = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
report = json.load(open(f"{out}/faults_tune.json"))
expected = {
    0: "ok", 1: "writes out of bounds", 2: "timeout", 3: "produces NaN", 4: "wrong output",
    5: "produces NaN", 6: "skips part of the output", 7: "infeasible", 8: "infeasible", 9: "fault",
}
ok = True
for row in report["rows"]:
    mode = dict(row["config"])["MODE"]
    good = row["status"].startswith(expected[mode])
    ok &= good
    print(f"MODE={mode}: {'ok  ' if good else 'BAD '} {row['status'][:150]}")
best = report["best"]
verification = report["verification"]
print(f"best: {best and best['config']}; verification: {verification and (verification['cases'] and len(verification['cases']))} cases; stop: {report['stop_reason']}; {end - start:.1f} s")
ok &= len(report["rows"]) == 10 and best is not None and verification is not None
resumed = json.load(open(f"{out}/faults_resume.json"))
print(f"second run: {resumed['resumed']} of {len(resumed['rows'])} from the store, best {resumed['best'] and resumed['best']['config']}")
ok &= resumed["resumed"] == 10
sys.exit(0 if ok else 1)
PY
grep -c "restart" "$out/faults_tune.err" > /dev/null && echo "worker restarts logged: $(grep -c restart "$out/faults_tune.err")"

echo "== 2. cutune verify on each mode that runs"
for mode in 0 1 3 4 5 6 9; do
  "$cutune" verify "$faults" --kernel faulty --config "MODE=$mode" --workspace "$work/faults" --json > "$out/faults_verify_$mode.json" 2> "$out/faults_verify_$mode.err"
  echo "$?" > "$out/faults_verify_$mode.rc"
done
python3 - "$out" <<'PY' || status=1
import json, sys
out = sys.argv[1]
expected = {0: None, 1: "out_of_bounds", 3: "reads_unwritten_shared", 4: "non_deterministic", 5: "not_finite", 6: "unwritten", 9: "failed"}
ok = True
for mode, finding in expected.items():
    rc = int(open(f"{out}/faults_verify_{mode}.rc").read())
    try:
        report = json.load(open(f"{out}/faults_verify_{mode}.json"))
    except Exception as error:
        print(f"MODE={mode}: BAD no report ({error}); stderr: {open(f'{out}/faults_verify_{mode}.err').read()[-300:]}")
        ok = False
        continue
    failed = next((c for c in report["cases"] if c["status"] == "fail"), None)
    got = failed and failed["finding"]["finding"]
    good = got == finding and (rc == 0) == (finding is None)
    ok &= good
    where = f"stage {failed['stage']} on {failed['label']}" if failed else f"{len(report['cases'])} cases passed"
    print(f"MODE={mode}: {'ok  ' if good else 'BAD '} {got or 'pass'} ({where}), exit {rc}, {report['seconds']:.2f} s")
sys.exit(0 if ok else 1)
PY

echo "== 3. examples: tune (budget 40, winner verified), %SOL, compute-sanitizer over each winner"
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
sol_line() {  # the baseline's and the winner's % of the speed of light, from a tune report
  python3 -c "
import json;r=json.load(open('$1'));s=r['sol'];b=r['best']
print('  %SOL:', s and f\"bound {s['bound_us']:.1f} us ({'memory' if s['memory_us'] >= s['compute_us'] else 'compute'}-bound, {s['ceilings']['origin']['kind']}); baseline {r['baseline_us']:.1f} us = {100 * s['bound_us'] / r['baseline_us']:.1f}%; best {b and b['time_us']:.1f} us = {b and b['sol_percent']:.1f}%\", '| stop:', r['stop_reason'])"
}
"$cutune" tune examples/rmsnorm.cu --kernel rmsnorm_kernel --spec bench/kernel_tuner/rmsnorm_8192.cutune.toml --strategy brute-force --workspace "$work/rms8192" --json > "$out/rmsnorm_8192.json" 2> "$out/rmsnorm_8192.err" || status=1
echo "rmsnorm 8192x8192:"; sol_line "$out/rmsnorm_8192.json"
for spec_file in examples/*.cutune.toml; do
  name=$(basename "$spec_file" .cutune.toml)
  kernel=$(python3 -c "import tomllib;print(tomllib.load(open('$spec_file','rb'))['kernels'][0]['name'])")
  "$cutune" tune "examples/$name.cu" --kernel "$kernel" --budget 40 --workspace "$work/examples" --json > "$out/example_$name.json" 2> "$out/example_$name.err" || { status=1; tail -3 "$out/example_$name.err"; }
  best=$(python3 -c "import json;r=json.load(open('$out/example_$name.json'));b=r['best'];print(','.join(f'{k}={v}' for k,v in dict(b['config']).items()) if b else '')" 2>/dev/null)
  python3 -c "
import json;r=json.load(open('$out/example_$name.json'));b=r['best'];v=r['verification']
print('$name:', 'best', b and b['config'], b and b['speedup'] and round(b['speedup'], 2), '| verified:', v and f\"{len(v['cases'])} cases in {v['seconds']:.2f} s\", '| rejected:', [x['summary'][:120] for x in r['rejected']], '| verify', round(r['verify_seconds'], 2), 's')" 2>/dev/null
  sol_line "$out/example_$name.json" 2>/dev/null
  [ -n "$best" ] || continue
  for tool in memcheck racecheck; do
    # API errors are not reported: the worker reads a kernel's parameters with
    # cuFuncGetParamInfo until it answers CUDA_ERROR_INVALID_VALUE, the documented end of the
    # list. Kernels run much slower under the tools (sgemm's smoke stage passed the default
    # 40 s watchdog under racecheck), hence the longer watchdog.
    CUTUNE_WATCHDOG_SCALE=30 timeout 400 "$sanitizer" --tool "$tool" --target-processes all --report-api-errors no --error-exitcode 99 \
      "$cutune" verify "examples/$name.cu" --kernel "$kernel" --config "$best" --stages smoke --workspace "$work/examples" > "$out/sanitizer_${name}_$tool.txt" 2>&1
    rc=$?
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$out/sanitizer_${name}_$tool.txt" | tail -2 | tr '\n' ' ')
    echo "  $tool $name ($best): exit $rc; $summary"
    [ "$rc" = 0 ] || status=1
  done
done
exit $status
