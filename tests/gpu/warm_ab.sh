#!/usr/bin/env bash
# Compares two cutune binaries on the warm RMSNorm tune of the Kernel Tuner side-by-side, in one
# run on one GPU instance (instances differ by up to 40%, so only same-run figures compare):
# each binary fills its own workspace's cubin cache, then five warm runs of each, alternated
# (`tune --remeasure`, brute force, the winner verified), each followed by a `cutune verify`
# of BLOCK_SIZE=512 RMSNORM_VEC=8. Prints the medians; the JSON reports go to $OUT.
#   CUTUNE_OLD=path/to/old/cutune CUTUNE=target/release/cutune bash tests/gpu/warm_ab.sh
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
new="${CUTUNE:-$repo/target/release/cutune}"
old="${CUTUNE_OLD:?CUTUNE_OLD names the binary to compare with}"
out="${OUT:-$repo/gpu-out}"
mkdir -p "$out"
work="$(mktemp -d -t cutune-ab.XXXXXX)"
spec=bench/kernel_tuner/rmsnorm_8192.cutune.toml
status=0
"$new" ceilings > /dev/null 2>&1 || status=1
for who in old new; do
  "${!who}" tune examples/rmsnorm.cu --kernel rmsnorm_kernel --spec "$spec" --strategy brute-force --json --workspace "$work/$who" > "$out/ab_${who}_fill.json" 2>/dev/null || status=1
done
for i in 1 2 3 4 5; do
  for who in old new; do
    "${!who}" tune examples/rmsnorm.cu --kernel rmsnorm_kernel --spec "$spec" --strategy brute-force --json --workspace "$work/$who" --remeasure > "$out/ab_${who}_warm$i.json" 2>/dev/null || status=1
    "${!who}" verify examples/rmsnorm.cu --kernel rmsnorm_kernel --spec "$spec" --config BLOCK_SIZE=512,RMSNORM_VEC=8 --json --workspace "$work/$who" > "$out/ab_${who}_verify$i.json" 2>/dev/null || status=1
  done
done
python3 - "$out" <<'PY' || status=1
import json, statistics as st, sys
out = sys.argv[1]
for who in ("old", "new"):
    warm = [json.load(open(f"{out}/ab_{who}_warm{i}.json")) for i in range(1, 6)]
    verify = [json.load(open(f"{out}/ab_{who}_verify{i}.json")) for i in range(1, 6)]
    median = lambda key: st.median(r[key] for r in warm)
    bests = {str(r["best"]["config"]) for r in warm}
    print(f"{who}: warm tune median {median('total_seconds'):.4f} s [{', '.join('%.3f' % r['total_seconds'] for r in warm)}]; "
          f"search {median('search_seconds'):.4f} s, measuring {median('measure_seconds'):.4f} s, verifying the winner {median('verify_seconds'):.4f} s; "
          f"best {' / '.join(sorted(bests))}; `cutune verify` median {st.median(r['seconds'] for r in verify):.4f} s")
PY
rm -rf "$work"
exit $status
