#!/usr/bin/env bash
# GPU suite of whole projects: every kernel that `cutune survey` calls ready is taken on to the
# end as a user would take it — `templatize --write` on a fresh copy of the project, `spec
# check`, `tune` (which verifies its winner in five stages) — with no hand edit. It measures
# the part of the funnel the survey cannot see: of the kernels ready, how many give a verified
# result, and why the others do not.
#   cutune survey .corpus/mmcv --json > mmcv.json      # here, where the project was surveyed
#   CUTUNE=… BUDGET=6 DEADLINE=480 bash tests/gpu/ready_sweep.sh PROJECT_DIR mmcv.json
# The survey's paths are taken relative to its workspace `root` (PROJECT_DIR is a copy of that
# root), so the project may sit elsewhere on the GPU machine. CASES=REGEX keeps only the
# kernels whose name matches it; no kernel starts after DEADLINE seconds. Reports:
# $OUT/sweep_<project>.jsonl (each kernel's tune report, or why there is none) and
# $OUT/sweep_<project>.txt (one line per kernel, then the funnel's totals).
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="${CUTUNE:-$repo/target/release/cutune}"
budget="${BUDGET:-6}"
deadline="${DEADLINE:-480}"
per_kernel="${PER_KERNEL:-90}"
out="${OUT:-$repo/gpu-out}"
project_dir="$(cd "$1" && pwd)"
survey="$2"
project="$(basename "$project_dir")"
mkdir -p "$out"
work="$(mktemp -d -t cutune-sweep.XXXXXX)"
trap 'rm -rf "$work"' EXIT
start=$SECONDS

# One "file<TAB>kernel" line per ready kernel, the file relative to the survey's workspace root.
mapfile -t cases < <(python3 - "$survey" "${CASES:-}" <<'PY'
import json, os, re, sys
survey = json.load(open(sys.argv[1]))
for k in survey["kernels"]:
    if k["stage"] == "ready" and re.search(sys.argv[2], k["kernel"]):
        print(f"{os.path.relpath(k['file'], survey['root'])}\t{k['kernel']}")
PY
)

for i in "${!cases[@]}"; do
  IFS=$'\t' read -r file kernel <<< "${cases[$i]}"
  # By place in the list: samples repeat a kernel's name (`testKernel`) in many programs.
  report="$work/reports/$i.json"
  mkdir -p "$work/reports"
  if (( SECONDS - start > deadline )); then
    echo '{"sweep": "not started: the deadline passed"}' > "$report"; continue
  fi
  copy="$work/$project"
  rm -rf "$copy" && cp -r "$project_dir" "$copy" && (cd "$copy" && { git init -q 2>/dev/null || mkdir -p .git; })
  spec="${file%.*}.cutune.toml"
  if ! step=$(cd "$copy" && "$cutune" templatize "$file" --kernel "$kernel" --write 2>&1); then
    python3 -c 'import json,sys; print(json.dumps({"sweep": "templatize failed", "why": sys.argv[1][-400:]}))' "$step" > "$report"; continue
  fi
  if ! step=$(cd "$copy" && "$cutune" spec check "$spec" 2>&1); then
    python3 -c 'import json,sys; print(json.dumps({"sweep": "spec check failed", "why": sys.argv[1][-400:]}))' "$step" > "$report"; continue
  fi
  if ! (cd "$copy" && timeout "$per_kernel" "$cutune" tune "$file" --kernel "$kernel" --budget "$budget" --json > "$report" 2> "$work/err"); then
    python3 -c 'import json,sys; print(json.dumps({"sweep": "tune failed", "why": open(sys.argv[1]).read()[-400:]}))' "$work/err" > "$report"
  fi
done

python3 - "$work/reports" "$out/sweep_${project}.jsonl" "$project" "${cases[@]}" <<'PY' | tee "$out/sweep_${project}.txt"
import collections, json, sys
reports, jsonl, project, cases = sys.argv[1], open(sys.argv[2], "w"), sys.argv[3], sys.argv[4:]
funnel = collections.Counter()
for i, case in enumerate(cases):
    file, kernel = case.split("\t")
    try:
        r = json.load(open(f"{reports}/{i}.json"))
    except Exception as e:
        r = {"sweep": f"no report ({type(e).__name__})"}
    jsonl.write(json.dumps({"file": file, "kernel": kernel, "report": r}) + "\n")
    if "sweep" in r:
        outcome, detail = r["sweep"], " ".join(r.get("why", "").split())[-240:]
    elif r.get("best"):
        b = r["best"]
        statuses = [c.get("status") for c in (r.get("verification") or {}).get("cases", [])]
        # A best slower than the original is verified, but the original is what the run keeps.
        outcome = "original kept" if r.get("original_fastest") else "verified"
        sol = b.get("sol_percent")
        detail = (f"{r.get('baseline_us') or 0:.1f} us -> {b['time_us']:.1f} us, {b['speedup']:.2f}x"
                  + (f", {sol:.0f}% SOL" if isinstance(sol, (int, float)) else "")
                  + f"; {statuses.count('pass')} pass, {statuses.count('baseline_failed')} original fails; {b.get('config')}")
    else:
        outcome = "no verified winner" if r.get("baseline_us") else "no baseline"
        rejected, failures = r.get("rejected", []), r.get("failures", {})
        why = rejected[0]["summary"] if rejected else max(failures, key=failures.get) if failures else r.get("stop_reason", "")
        detail = f"{len(rejected)} rejected, {sum(failures.values())} failed to run; " + " ".join(why.split())[:240]
    funnel[outcome] += 1
    print(f"{kernel:48} {outcome:20} {detail}   [{file}]")
print(f"{project}: {len(cases)} ready; " + ", ".join(f"{n} {o}" for o, n in funnel.most_common()))
PY
