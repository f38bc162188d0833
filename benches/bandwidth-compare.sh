#!/usr/bin/env bash
# copr against the memory-bandwidth limit and its peers, in the same rounds: in every
# round the MPI bench driver runs memcpy (each rank copying its own N²/4 doubles, all
# ranks at once: the physical reference), copr's copy and transpose with a kept plan
# (shared window; messages only; stores through the cache; single-copy reads forced on,
# `SingleCopy::Always`: process_vm_readv from the sender's B; B allocated node-shared by
# `MpiTransport::alloc_shared`, read by its receivers straight into A) and ScaLAPACK's pdgemr2d and
# pdtran, taking turns repetition by repetition inside one mpirun; COSTA's miniapps
# (pxgemr2d, pxtran; planning included, as in every COSTA call) run right before or
# right after it, alternating. A round's ratios are quotients of that round's
# medians; the summary gives the median over the rounds. The load average is printed
# with every round.
#
# Needs the driver built with ScaLAPACK (libscalapack-openmpi-dev) and COSTA v2.3.2
# built by yourself (see benches/costa-compare.sh), pointed to by COSTA_BUILD.
#
# Usage: [LOG=file] COSTA_BUILD=/path/to/costa/build benches/bandwidth-compare.sh [ROUNDS] [N] [REPS]
#   e.g. COSTA_BUILD=$HOME/costa/build benches/bandwidth-compare.sh 6 10000 5
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-6}
n=${2:-10000}
reps=${3:-5}
: "${COSTA_BUILD:?set COSTA_BUILD to the COSTA build directory (it holds miniapps/)}"
apps="$COSTA_BUILD/miniapps"
cargo bench --features mpi,scalapack --bench mpi_driver --no-run 2>/dev/null
driver=$(ls -t "${CARGO_TARGET_DIR:-target}"/release/deps/mpi_driver-* | grep -v '\.d$' | head -1)
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none -n 4)
export OMP_NUM_THREADS=1
cases=memcpy,copy,transpose,copy-msg,transpose-msg,copy-nostream,transpose-nostream,\
copy-msg-nostream,transpose-msg-nostream,copy-replan,transpose-replan,copy-replan-msg,\
transpose-replan-msg,gemr2d,tran,copy-single,transpose-single,copy-shared,transpose-shared
names=("local memcpy" "copr copy (pdgemr2d" "copr transpose (pdtran" "copr copy, messages only (no"
  "copr transpose, messages only (no" "copr copy, stores through" "copr transpose, stores through"
  "ScaLAPACK pdgemr2d" "ScaLAPACK pdtran" "copr copy, single copy" "copr transpose, single copy"
  "copr copy, B node-shared" "copr transpose, B node-shared")

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
costa() { # app
  local grid=(-p 2,2)
  [ "$1" = pxgemr2d_miniapp ] && grid+=(-q 2,2)
  "${mpi[@]}" "$apps/$1" -m "$n" -n "$n" --block_a 32,32 --block_c 128,128 "${grid[@]}" \
    -t double -r "$reps" --algorithm costa |
    awk -F'=' '/COSTA TIMES/ {n = split($2, t, " "); for (k = 1; k <= n; k++) print t[k]}' | median
}
run_driver() {
  out=$("${mpi[@]}" "$driver" --sizes "$n" --reps "$reps" --cases "$cases")
  # The driver's whole report (phases, planning, paired ratios) goes to $LOG if set.
  if [ -n "${LOG:-}" ]; then echo "$out" >>"$LOG"; fi
  t=()
  for name in "${names[@]}"; do
    t+=("$(awk -F'|' -v k="$name" 'index($3, k) && $5 + 0 > 0 {gsub(/ /, "", $5); print $5; exit}' <<<"$out")")
  done
}
run_costa() { cc=$(costa pxgemr2d_miniapp); ct=$(costa pxtran_miniapp); }

echo "machine: $(getconf _NPROCESSORS_ONLN) cores, $(uname -r); N = $n, $reps repetitions per case and round"
echo "start: $(uptime)"
echo "| round | load | memcpy | copy | transpose | copy msg | transpose msg | copy cached stores | transpose cached stores | pdgemr2d | pdtran | COSTA copy | COSTA transpose | copy / memcpy | transpose / memcpy | copy msg / memcpy | transpose msg / memcpy | COSTA / copy | COSTA / transpose | COSTA / copy msg | COSTA / transpose msg | pdgemr2d / copy | pdtran / transpose | copy single | transpose single | copy single / memcpy | transpose single / memcpy | copy B shared | transpose B shared | copy B shared / memcpy | transpose B shared / memcpy |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
rows=()
for ((r = 1; r <= rounds; r++)); do
  load=$(cut -d' ' -f1 /proc/loadavg)
  if ((r % 2)); then run_driver; run_costa; else run_costa; run_driver; fi
  q=("$(ratio "${t[1]}" "${t[0]}")" "$(ratio "${t[2]}" "${t[0]}")" "$(ratio "${t[3]}" "${t[0]}")"
    "$(ratio "${t[4]}" "${t[0]}")" "$(ratio "$cc" "${t[1]}")" "$(ratio "$ct" "${t[2]}")"
    "$(ratio "$cc" "${t[3]}")" "$(ratio "$ct" "${t[4]}")" "$(ratio "${t[7]}" "${t[1]}")"
    "$(ratio "${t[8]}" "${t[2]}")" "$(ratio "${t[9]}" "${t[0]}")" "$(ratio "${t[10]}" "${t[0]}")"
    "$(ratio "${t[11]}" "${t[0]}")" "$(ratio "${t[12]}" "${t[0]}")")
  rows+=("${q[*]}")
  printf '| %s ' "$r" "$load" "${t[@]:0:9}" "$cc" "$ct" "${q[@]:0:10}" "${t[9]}" "${t[10]}" "${q[@]:10:2}" \
    "${t[11]}" "${t[12]}" "${q[@]:12}"
  echo '|'
done
echo "end: $(uptime)"
echo
echo "Medians over the rounds of the per-round ratios:"
labels=("copy / memcpy" "transpose / memcpy" "copy messages only / memcpy" "transpose messages only / memcpy"
  "COSTA / copr copy" "COSTA / copr transpose" "COSTA / copr copy, messages only"
  "COSTA / copr transpose, messages only" "pdgemr2d / copr copy" "pdtran / copr transpose"
  "copy single copy (process_vm_readv) / memcpy" "transpose single copy / memcpy"
  "copy, B node-shared / memcpy" "transpose, B node-shared / memcpy")
for k in "${!labels[@]}"; do
  m=$(for row in "${rows[@]}"; do read -ra x <<<"$row"; echo "${x[$k]}"; done | median)
  echo "- ${labels[$k]}: $m"
done
