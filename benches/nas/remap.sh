#!/usr/bin/env bash
# Recordings of benches/nas/run.sh mapped and replayed again, without running the
# programs: for a new mapper or new SimGrid platforms on the same traffic.
#
#   [NAS_MACHINES=TEXT] bash benches/nas/remap.sh COPR_BINARY OUT_DIR RECORDING_DIR...
#
# RECORDING_DIR  a program's directory in run.sh's OUT_DIR (`cg.S-64`, `miniFE-32-16`,
#                …: `NAME-RANKS`, holding the recorded traffic.txt); only traffic.txt is
#                read, copied into OUT_DIR/NAME-RANKS.
# NAS_MACHINES   keeps run.sh's machines whose name contains TEXT (e.g. "fat tree").
# Prints one line per program and machine as run.sh does, also into OUT_DIR/results.txt.
set -euo pipefail
usage="[NAS_MACHINES=TEXT] bash benches/nas/remap.sh COPR_BINARY OUT_DIR RECORDING_DIR..."
[[ $# -ge 3 ]] || { echo "usage: $usage" >&2; exit 2; }
[[ -x $1 ]] || { echo "benches/nas/remap.sh: no copr binary at $1" >&2; exit 2; }
copr=$(realpath "$1")
out=$(mkdir -p "$2" && realpath "$2")
shift 2
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=benches/nas/common.sh
source "$repo/benches/nas/common.sh"
smpicc -O2 "$repo/benches/simgrid/replay.c" -o "$out/replay" 2>/dev/null
results="$out/results.txt"
: >"$results"
for rec in "$@"; do
    [[ -f $rec/traffic.txt ]] || { echo "benches/nas/remap.sh: no traffic.txt in $rec" >&2; exit 2; }
    base=$(basename "$rec")
    name=${base%-*}
    n=${base##*-}
    dir="$out/$base"
    mkdir -p "$dir"
    cp "$rec/traffic.txt" "$dir/traffic.txt"
    grep -v '^tasks' "$dir/traffic.txt" >"$dir/traffic.edges"
    echo "== $name, $n ranks" | tee -a "$results"
    map_and_replay "$dir" "$n" "$name"
done
