#!/usr/bin/env bash
# copr's C entry points against ScaLAPACK's routines (capi/benches/redist_bench.c) in
# one mpirun: pdgemr2d and pdtran, double, N = 10 000, 32 x 32 -> 128 x 128 blocks,
# 2 x 2 grid on 4 ranks. Builds libcopr_capi (release) and the program, then runs it:
#
#   bash scripts/capi-bench.sh [N [ROUNDS]]      (default 10000 7)
#
# Prints the load before the run, medians and per-round paired ratios (Markdown).
set -euo pipefail
cd "$(dirname "$0")/.."
lib=$(cargo build --release -p copr-capi --features mpi --message-format=json \
    | grep '"name":"copr_capi"' \
    | grep -o '"[^"]*/libcopr_capi\.so"' \
    | tr -d '"' \
    | tail -n 1)
[[ -f "$lib" ]] || { echo "capi-bench.sh: libcopr_capi.so was not built" >&2; exit 1; }
dir=$(dirname "$lib")
mpicc -std=c11 -O2 -Wall -Wextra -Werror -Icapi/include capi/benches/redist_bench.c \
    -o "$dir/capi-redist-bench" -L"$dir" -lcopr_capi -lscalapack-openmpi \
    -Wl,-rpath,"$dir"
echo "load before the run: $(cut -d' ' -f1-3 /proc/loadavg) ($(date -u +%H:%M) UTC)"
mpirun --allow-run-as-root --oversubscribe --bind-to none -n 4 "$dir/capi-redist-bench" \
    "${1:-10000}" "${2:-7}" 32 128
