# Sourced by the GPU checks that tune one of our fixtures: the repository, the binary (CUTUNE),
# the reports' folder (OUT), and `fixture_copy NAME PATH`, which copies tests/fixtures/PATH (a
# file, or a folder's contents) into a fresh folder that is a git root, as a user's project is,
# and prints that folder.
set -u
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cutune="${CUTUNE:-$repo/target/release/cutune}"
out="${OUT:-$repo/gpu-out}"
mkdir -p "$out"

fixture_copy() {
  local work source="$repo/tests/fixtures/$2"
  work="$(mktemp -d -t "cutune-$1.XXXXXX")"
  if [ -d "$source" ]; then cp -r "$source/." "$work/"; else cp "$source" "$work/"; fi
  (cd "$work" && git init -q) && echo "$work"
}
