#!/usr/bin/env bash
# GPU A/B of the strategy rewrites, in one tune per example on the lent GPU: the example's own
# spec with its parameters narrowed to the values listed below (so brute force covers them),
# every configuration measured in the same run, then the best time with the rewrite's parameter
# at its default (the original code) against the best with it at any other value. One line per
# rewrite:
#   EXAMPLE  PARAM  off BEST µs {config}  on BEST µs {config}  SPEEDUP×  (baseline µs, bound µs)
# Exits non-zero if a tune fails or finds no verified winner.
#   CUTUNE=target/release/cutune OUT=$OUT [CASES='^(rmsnorm|softmax)$'] bash tests/gpu/rewrite_ab.sh
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
cutune="${CUTUNE:-$repo/target/release/cutune}"
out="${OUT:-$repo/gpu-out}"
mkdir -p "$out"
work="$(mktemp -d -t cutune-ab.XXXXXX)"

# example kernel PARAM,PARAM…|NAME=v,v NAME=v,v ... (the values each parameter keeps; each PARAM's
# first value is its default, the original code)
cases=(
  "block_reduce block_reduce_sum_kernel BLOCK_REDUCE_SUM_WARP_SHUFFLE,BLOCK_REDUCE_SUM_VEC|BLOCK=128,256,512,1024 BLOCK_REDUCE_SUM_ITEMS_PER_THREAD=1,4,8,16 BLOCK_REDUCE_SUM_VEC=1,4 BLOCK_REDUCE_SUM_WARP_SHUFFLE=0,1 fast_math=0 max_registers=0"
  "softmax softmax_kernel SOFTMAX_VEC,SOFTMAX_ONLINE,SOFTMAX_ROW_REGS|SOFTMAX_BLOCK_SIZE=512,1024 SOFTMAX_VEC=1,8 SOFTMAX_ONLINE=0,1,2 SOFTMAX_ROW_REGS=0,4,8 fast_math=0,1 max_registers=0,32,64"
  "silu_and_mul silu_and_mul_kernel SILU_AND_MUL_VEC|SILU_AND_MUL_BLOCK_SIZE=128,256,512 SILU_AND_MUL_ITEMS_PER_THREAD=1,4,8 SILU_AND_MUL_VEC=1,8 fast_math=0 max_registers=0"
  "rmsnorm rmsnorm_kernel RMSNORM_WARP_SHUFFLE,RMSNORM_ROW_REGS|BLOCK_SIZE=128,256,512,1024 RMSNORM_UNROLL=4 RMSNORM_VEC=1,8 RMSNORM_WARP_SHUFFLE=0,1 RMSNORM_ROW_REGS=0,1,2,4 fast_math=0 max_registers=0"
  "layernorm layernorm_kernel LAYERNORM_ROW_REGS|LAYERNORM_BLOCK_SIZE=128,256,512,1024 LAYERNORM_VEC=1,8 LAYERNORM_ROW_REGS=0,1,2,4,8 fast_math=0 max_registers=0"
  "fused_add_rmsnorm fused_add_rmsnorm_kernel FUSED_ADD_RMSNORM_ROW_REGS|FUSED_ADD_RMSNORM_BLOCK_SIZE=128,256,512,1024 FUSED_ADD_RMSNORM_VEC=1,8 FUSED_ADD_RMSNORM_ROW_REGS=0,1,2,4,8 fast_math=0 max_registers=0"
)

status=0
for case in "${cases[@]}"; do
  head="${case%%|*}"; keep="${case#*|}"
  read -r example kernel switches <<<"$head"
  [[ "$example" =~ ${CASES:-.} ]] || continue
  spec="$work/$example.cutune.toml"
  # The example's spec with each listed parameter's values narrowed.
  python3 - "$repo/examples/$example.cutune.toml" "$spec" $keep <<'PY' || { status=1; continue; }
import re, sys
text = open(sys.argv[1]).read()
for item in sys.argv[3:]:
    name, values = item.split("=")
    pattern = re.compile(r'(name = "%s"\n(?:[^\[\n][^\n]*\n)*?values = )\[[^\]]*\]' % re.escape(name))
    text, n = pattern.subn(lambda m: m.group(1) + "[" + values.replace(",", ", ") + "]", text)
    assert n == 1, f"{name}: {n} matches"
open(sys.argv[2], "w").write(text)
PY
  log="$out/ab_$example"
  "$cutune" tune "examples/$example.cu" --kernel "$kernel" --spec "$spec" --strategy brute-force --budget 1000 --sol-stop 0 \
    --workspace "$work/$example" --remeasure --json > "$log.tune.json" 2> "$log.tune.err" || status=1
  python3 - "$log.tune.json" "$example" "$switches" "$spec" <<'PY' || status=1
import json, re, sys, tomllib
path, example, switches, spec = sys.argv[1:]
try:
    tune = json.load(open(path))
except (OSError, ValueError):
    print(f"{example}: the tune did not finish (see {path.replace('.json', '.err')})")
    sys.exit(1)
defaults = {p["name"]: p["default"] for p in tomllib.load(open(spec, "rb"))["kernels"][0]["params"]}
def best(switch, at_default):
    rows = [r for r in tune["rows"] if r["time_us"] is not None and r["speedup"] is not None and (dict(r["config"])[switch] == defaults[switch]) == at_default]
    return min(rows, key=lambda r: r["time_us"], default=None)
show = lambda r: f"{r['time_us']:.2f} µs {dict(r['config'])}" if r else "none"
bound = tune["sol"]["bound_us"] if tune.get("sol") else float("nan")
ok = tune["verification"] is not None
for switch in switches.split(","):
    off, on = best(switch, True), best(switch, False)
    ratio = f"{off['time_us'] / on['time_us']:.2f}×" if off and on else "-"
    print(f"{example}  {switch}  off {show(off)}  on {show(on)}  {ratio}  (baseline {tune['baseline_us']:.2f} µs, bound {bound:.2f} µs, {len(tune['rows'])} measured, winner verified: {ok})")
    ok = ok and off is not None and on is not None
sys.exit(0 if ok else 1)
PY
done
exit $status
