#!/usr/bin/env bash
# Two builds of the MPI bench driver (benches/mpi_driver.rs) side by side, in paired,
# alternating rounds: in every round each build runs the same cases in its own mpirun
# (4 ranks, 2 x 2 grid, the driver's 32 -> 128 blocks), the first build first in odd
# rounds and second in even ones. A round's ratio per case is build B's median over
# build A's (both medians of that round's repetitions, slowest rank per repetition);
# the summary gives the median of the per-round ratios. The load average is printed
# with every round. Use it to compare a change against the build before it on this
# shared machine, where only paired ratios mean anything.
#
# Usage: benches/driver-pair.sh DRIVER_A DRIVER_B [ROUNDS] [N] [REPS] [CASES]
#   e.g. benches/driver-pair.sh /tmp/before/mpi_driver /tmp/after/mpi_driver 8 10000 5 \
#        copy-msg,transpose-msg
# (a driver's path: `cargo bench --features mpi --bench mpi_driver --no-run` prints it)
set -euo pipefail
a=${1:?the first driver}
b=${2:?the second driver}
rounds=${3:-8}
n=${4:-10000}
reps=${5:-5}
cases=${6:-copy-msg,transpose-msg}
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none -n 4)
export OMP_NUM_THREADS=1

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# "key median" lines of the driver's timing table (its rows: | N | name | min | median |...)
run() {
  "${mpi[@]}" "$1" --sizes "$n" --reps "$reps" --cases "$cases" |
    awk -F'|' -v n="$n" '$2 + 0 == n && $5 + 0 > 0 {gsub(/^ +| +$/, "", $3); gsub(/ /, "", $5); print $3 "\t" $5}'
}

IFS=, read -ra keys <<<"$cases"
echo "A: $a"
echo "B: $b"
echo "machine: $(getconf _NPROCESSORS_ONLN) cores, $(uname -r); N = $n, $reps repetitions per case, build and round"
echo "start: $(uptime)"
declare -A ratios
for ((r = 1; r <= rounds; r++)); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  if ((r % 2)); then ta=$(run "$a"); tb=$(run "$b"); else tb=$(run "$b"); ta=$(run "$a"); fi
  line="| $r | $load |"
  while IFS=$'\t' read -r name ma; do
    mb=$(awk -F'\t' -v k="$name" '$1 == k {print $2}' <<<"$tb")
    q=$(awk -v x="$mb" -v y="$ma" 'BEGIN {printf "%.3f", x / y}')
    ratios[$name]+="$q "
    line+=" $name: A $ma ms, B $mb ms, B/A $q |"
  done <<<"$ta"
  echo "$line"
done
echo "end: $(uptime)"
echo
echo "Medians over the rounds of the per-round ratios B / A:"
for name in "${!ratios[@]}"; do
  m=$(tr ' ' '\n' <<<"${ratios[$name]}" | grep . | median)
  echo "- $name: $m (rounds: ${ratios[$name]})"
done
