#!/usr/bin/env bash
# GPU suite: a spec whose restrictions tie a chain of tile defines (four defines of 20 values
# beside RMSNorm's 24 configurations: 3,840,000 points, 24 feasible) is tuned live with the
# random strategy. The tuner narrows the space to the values the restrictions leave, so every
# one of the 24 is measured and the best is verified; a restriction tying the four at once
# leaves the space unlisted, and the run must stop saying its draws met nothing.
#   CUTUNE=target/release/cutune OUT=DIR bash tests/gpu/narrowed_space.sh
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="${CUTUNE:-$repo/target/release/cutune}"
out="${OUT:-$repo/gpu-out}"
mkdir -p "$out"
work="$(mktemp -d -t cutune-narrow.XXXXXX)"
status=0

# Writes the bench spec with four tile defines and the given restrictions to $work/$1.
spec_with() {
  python3 - "$repo/bench/kernel_tuner/rmsnorm_8192.cutune.toml" "$work/$1" "$2" <<'EOF'
import json, sys
source, target, restrictions = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
tiles = {"TILE_A": 4, "TILE_B": 8, "TILE_C": 16, "TILE_D": 2}
params = "".join(f'\n[[kernels.params]]\nname = "{n}"\nkind = "define"\ndefault = {v}\nvalues = {list(range(1, 21))}\norigin = "a tile"\n' for n, v in tiles.items())
text = open(source).read().replace('shared_bytes = "0"\n', f'shared_bytes = "0"\nrestrictions = {json.dumps(restrictions)}\n', 1)
open(target, "w").write(text.replace("\n[kernels.verify]", params + "\n[kernels.verify]", 1))
EOF
}

spec_with chain.cutune.toml '["TILE_A == 4", "TILE_B == TILE_A * 2", "TILE_C == TILE_B * 2 and TILE_D == TILE_A // 2"]'
spec_with tied.cutune.toml '["TILE_A + TILE_B + TILE_C + TILE_D == 80"]'

echo "== chain"
timeout 240 "$cutune" tune "$repo/examples/rmsnorm.cu" --kernel rmsnorm_kernel --spec "$work/chain.cutune.toml" \
  --strategy random --json > "$out/chain.tune.json" 2> "$out/chain.tune.err"
python3 - "$out/chain.tune.json" <<'EOF' | tee "$out/summary.txt" || status=1
import json, sys
report = json.load(open(sys.argv[1]))
rows, best = report["rows"], report.get("best") or {}
verified = report.get("verification") is not None
print(f"chain: {len(rows)} configurations measured in {report['search_seconds']:.2f} s, stop: {report['stop_reason']}, best {dict(best.get('config', {}))} at {best.get('time_us') or 0:.1f} us, verified: {verified}")
sys.exit(0 if len(rows) == 24 and report["stop_reason"] == "space exhausted" and verified else 1)
EOF

echo "== tied"
timeout 240 "$cutune" tune "$repo/examples/rmsnorm.cu" --kernel rmsnorm_kernel --spec "$work/tied.cutune.toml" \
  --strategy random > "$out/tied.tune.txt" 2> "$out/tied.tune.err"
if grep -q "random draws met no feasible configuration not tried yet" "$out/tied.tune.txt"; then
  echo "tied: $(grep -o 'stopped: .*' "$out/tied.tune.txt" | head -1)" | tee -a "$out/summary.txt"
else
  echo "tied: the stop sentence is missing: $(tail -c 300 "$out/tied.tune.txt") $(tail -c 300 "$out/tied.tune.err")" | tee -a "$out/summary.txt"
  status=1
fi
echo "== status $status"
exit $status
