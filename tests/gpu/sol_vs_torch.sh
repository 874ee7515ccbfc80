#!/usr/bin/env bash
# GPU suite of issue 16's targets, in one run: each example tuned on its main shape (the first
# of its spec's shapes) with its own spec, and torch.compile timed on the same operation and
# shape in the same run (tests/gpu/torch_compile_times.py). One line per example:
#   EXAMPLE SHAPE: baseline µs, best µs (speedup, %SOL of the true bound), bound µs, verified;
#   torch.compile µs (best / torch.compile)
# Exits non-zero if a tune fails or its winner is not verified.
# SOL_STOP is `cutune tune --sol-stop` (default 0.95: the search stops within 95% of the bound;
# 0 searches the whole budget).
#   CUTUNE=target/release/cutune OUT=$OUT [EXAMPLES="softmax rmsnorm"] [BUDGET=60] [SOL_STOP=0] bash tests/gpu/sol_vs_torch.sh
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
cutune="${CUTUNE:-$repo/target/release/cutune}"
out="${OUT:-$repo/gpu-out}"
budget="${BUDGET:-60}"
sol_stop="${SOL_STOP:-0.95}"
mkdir -p "$out"
work="$(mktemp -d -t cutune-sol.XXXXXX)"
examples="${EXAMPLES:-rmsnorm layernorm fused_add_rmsnorm silu_and_mul softmax merge_attn_states block_reduce transpose}"

status=0
for example in $examples; do
  kernel=$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["kernels"][0]["name"])' "examples/$example.cutune.toml")
  spec="$work/$example.cutune.toml"
  # The example's spec with its first shape only.
  shape=$(python3 - "examples/$example.cutune.toml" "$spec" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
blocks = list(re.finditer(r"\[\[kernels\.shapes\]\]\n((?:[^\[\n][^\n]*\n)*)\n?", text))
for block in reversed(blocks[1:]):
    text = text[:block.start()] + text[block.end():]
open(sys.argv[2], "w").write(text)
print(" ".join(line.replace(" ", "") for line in blocks[0].group(1).strip().splitlines()))
PY
)
  log="$out/sol_$example"
  "$cutune" tune "examples/$example.cu" --kernel "$kernel" --spec "$spec" --budget "$budget" --sol-stop "$sol_stop" --workspace "$work/$example" --json \
    > "$log.tune.json" 2> "$log.tune.err" || status=1
  python3 tests/gpu/torch_compile_times.py "$example" $shape > "$log.torch.json" 2> "$log.torch.err" || echo "{}" > "$log.torch.json"
  python3 - "$example" "$shape" "$log" <<'PY' || status=1
import json, sys
example, shape, log = sys.argv[1:]
try:
    tune = json.load(open(log + ".tune.json"))
except ValueError:
    print(f"{example} {shape}: the tune did not finish: {open(log + '.tune.err').read()[-400:]}")
    sys.exit(1)
best, verification = tune["best"], tune["verification"]
torch = json.load(open(log + ".torch.json"))
bound = tune["sol"]["bound_us"] if tune.get("sol") else None
verified = verification is not None and all(c["status"] != "fail" for c in verification["cases"])
line = f"{example} {shape}: baseline {tune['baseline_us']:.2f} µs"
if best:
    sol = f"{100 * bound / best['time_us']:.0f}% SOL" if bound else "no bound"
    line += f", best {best['time_us']:.2f} µs ({best['speedup']:.2f}×, {sol}) {dict(best['config'])}"
line += f", bound {bound:.2f} µs" if bound else ""
line += f", verified {verified}"
if torch.get("torch_compile_us"):
    line += f"; torch.compile {torch['torch_compile_us']:.2f} µs (eager {torch['eager_us']:.2f})"
    if best:
        line += f", best/torch.compile {best['time_us'] / torch['torch_compile_us']:.2f}"
print(line)
sys.exit(0 if best and verified else 1)
PY
done
exit $status
