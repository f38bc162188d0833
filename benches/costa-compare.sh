#!/usr/bin/env bash
# copr against COSTA's miniapps, side by side: in every round, for every N and op, the
# copr MPI bench driver (plan + execute inside the timed call, with the shared-memory
# window and with messages only; and the kept plan for reference) and COSTA's
# `pxgemr2d_miniapp` / `pxtran_miniapp` run one after the other, in alternating order,
# each with REPS repetitions; a round's ratio is COSTA's median over copr's median.
#
# COSTA is not part of copr: build it yourself (its public repository, tag v2.3.2, with
# its own CMake against Debian's Open MPI and ScaLAPACK) and point COSTA_BUILD at the
# build directory. The miniapps time every call including COSTA's planning, print
# whole milliseconds per repetition, and have no relabeling option; copr's cases here
# run with relabeling off as well.
#
# Usage: COSTA_BUILD=/path/to/costa/build benches/costa-compare.sh [ROUNDS] [SIZES] [REPS]
#   e.g. COSTA_BUILD=$HOME/costa/build benches/costa-compare.sh 4 4000,10000 5
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-4}
sizes=${2:-4000,10000}
reps=${3:-5}
: "${COSTA_BUILD:?set COSTA_BUILD to the COSTA build directory (it holds miniapps/)}"
apps="$COSTA_BUILD/miniapps"
for app in pxgemr2d_miniapp pxtran_miniapp; do
  [ -x "$apps/$app" ] || { echo "costa-compare: $apps/$app is missing" >&2; exit 2; }
done
cargo bench --features mpi --bench mpi_driver --no-run 2>/dev/null
driver=$(ls -t target/release/deps/mpi_driver-* | grep -v '\.d$' | head -1)
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none -n 4)
export OMP_NUM_THREADS=1

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

# copr: the median [ms] of one case, from the driver's table row
# "| N | name | min | median | busy |" (the rows on planning once are left out)
copr_case() { # N key
  "${mpi[@]}" "$driver" --sizes "$1" --reps "$reps" --cases "$2" |
    awk -F'|' -v n="$1" '$2 + 0 == n && $3 !~ /planning/ && $5 + 0 > 0 {gsub(/ /, "", $5); print $5; exit}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
# COSTA: the median [ms] of its per-repetition times ("COSTA TIMES [ms] = t1 t2 ...")
costa_case() { # N app
  local grid=(-p 2,2)
  [ "$2" = pxgemr2d_miniapp ] && grid+=(-q 2,2)
  "${mpi[@]}" "$apps/$2" -m "$1" -n "$1" --block_a 32,32 --block_c 128,128 "${grid[@]}" \
    -t double -r "$reps" --algorithm costa |
    awk -F'=' '/COSTA TIMES/ {n = split($2, t, " "); for (k = 1; k <= n; k++) print t[k]}' | median
}

echo "machine: $(getconf _NPROCESSORS_ONLN) cores, $(uname -r); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| round | N | op | COSTA [ms] | copr in the call [ms] | ratio | copr messages only [ms] | ratio | copr plan kept [ms] |"
echo "|---:|---:|---|---:|---:|---:|---:|---:|---:|"
for ((r = 1; r <= rounds; r++)); do
  for n in ${sizes//,/ }; do
    for op in copy transpose; do
      app=pxgemr2d_miniapp
      [ $op = transpose ] && app=pxtran_miniapp
      run_copr() {
        c=$(copr_case "$n" "$op-replan")
        m=$(copr_case "$n" "$op-replan-msg")
        k=$(copr_case "$n" "$op")
      }
      if ((r % 2)); then
        run_copr
        s=$(costa_case "$n" $app)
      else
        s=$(costa_case "$n" $app)
        run_copr
      fi
      echo "| $r | $n | $op | $s | $c | $(ratio "$s" "$c")× | $m | $(ratio "$s" "$m")× | $k |"
    done
  done
done
