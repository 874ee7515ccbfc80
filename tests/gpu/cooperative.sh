#!/usr/bin/env bash
# GPU check of cooperative launches: the fixture tests/fixtures/template/grid_sync.cu (a kernel
# that synchronises its whole grid) templatized by the cutune binary, whose spec says
# `cooperative = true`, then tuned over its block size with five-stage verification. The total's
# length, which the source does not give (`*total`), is written into the spec as 1. Exits
# non-zero if the spec is not cooperative, the tune fails, or its winner is not verified.
#   CUTUNE=target/release/cutune [OUT=dir] bash tests/gpu/cooperative.sh
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="$(realpath "${CUTUNE:-$repo/target/release/cutune}")"
out="${OUT:-$repo/gpu-out}"
mkdir -p "$out"
work="$(mktemp -d -t cutune-cooperative.XXXXXX)"
cp "$repo/tests/fixtures/template/grid_sync.cu" "$work/"
mkdir "$work/.cutune"
"$cutune" templatize "$work/grid_sync.cu" --kernel normalize_by_total --write 2> "$out/cooperative.templatize.err" || { cat "$out/cooperative.templatize.err"; exit 1; }
grep -q '^cooperative = true$' "$work/grid_sync.cutune.toml" || { echo "the spec is not cooperative"; exit 1; }
sed -i 's/^length = "?"$/length = "1"/' "$work/grid_sync.cutune.toml"
"$cutune" spec check "$work/grid_sync.cutune.toml" > "$out/cooperative.spec_check.txt" 2>&1
"$cutune" tune "$work/grid_sync.cu" --kernel normalize_by_total --budget 8 --json > "$out/cooperative.tune.json" 2> "$out/cooperative.tune.err"
python3 "$repo/tests/gpu/tune_line.py" normalize_by_total "$out/cooperative" "cooperative = true"
