# Sourced by the GPU suites that tune cases with no hand edit (texture_suite.sh,
# struct_suite.sh), after they set `suite` (a word for the scratch folder's name). Sets repo,
# cutune (CUTUNE, else the release build), out (OUT, else gpu-out), budget (BUDGET, else 30),
# work (a fresh scratch folder) and status (0).
# `tune_case NAME FOLDER FILE KERNEL` copies FOLDER into $work as a workspace of its own, then
# `cutune templatize --write`, `cutune spec check` and `cutune tune --budget $budget`, each with
# its output under $out/NAME.*, and adds the case's line to $out/summary.txt (tune_line.py); a
# case that fails sets status=1. `tune_cases CASES` runs one per line of `name|folder|file|kernel`.
# A step piped into `tee` fails the suite when the step fails, not only when `tee` does.
set -u -o pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="$(realpath "${CUTUNE:-$repo/target/release/cutune}")"
out="$(realpath -m "${OUT:-$repo/gpu-out}")"
budget="${BUDGET:-30}"
mkdir -p "$out"
work="$(mktemp -d -t "cutune-$suite.XXXXXX")"
status=0

tune_case() {
  local name="$1" folder="$2" file="$3" kernel="$4"
  echo "== $name"
  local ws="$work/$name" log="$out/$name"
  cp -r "$folder" "$ws" && mkdir -p "$ws/.git"
  (cd "$ws" && "$cutune" templatize "$file" --kernel "$kernel" --write 2> "$log.templatize.err" && cp "${file%.*}.cutune.toml" "$log.cutune.toml")
  (cd "$ws" && "$cutune" spec check "${file%.*}.cutune.toml" > "$log.spec_check.txt" 2>&1) || status=1
  (cd "$ws" && timeout 240 "$cutune" tune "$file" --kernel "$kernel" --budget "$budget" --json > "$log.tune.json" 2> "$log.tune.err")
  python3 "$repo/tests/gpu/tune_line.py" "$name" "$log" | tee -a "$out/summary.txt" || status=1
}

tune_cases() {
  local name folder file kernel
  while IFS='|' read -r name folder file kernel; do
    tune_case "$name" "$folder" "$file" "$kernel"
  done <<< "$1"
}
