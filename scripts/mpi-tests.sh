#!/usr/bin/env bash
# Builds copr with the `mpi` feature and runs every multi-rank test program and example
# under mpirun. Run from the repository root; fails on the first error.
#
#   bash scripts/mpi-tests.sh
#
# Environment: CARGO_TARGET_DIR is honoured; COPR_MPI_CASES sets the number of random
# cases of the engine test program (default 240 per rank count).
set -euo pipefail
cd "$(dirname "$0")/.."

MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)

# Path of the executable cargo builds for one target (cargo prints it as JSON).
executable() {
    cargo "$@" --message-format=json \
        | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' \
        | tail -n 1
}

echo "== building (features: mpi)"
engine_mpi=$(executable test --features mpi --test engine_mpi --no-run)
reshuffle=$(executable build --features mpi --example reshuffle)
driver=$(executable test --features mpi --bench mpi_driver --no-run)
for f in "$engine_mpi" "$reshuffle" "$driver"; do
    [[ -x "$f" ]] || { echo "missing executable: '$f'" >&2; exit 1; }
done

for n in 1 2 3 4 7; do
    echo "== engine_mpi on $n ranks"
    "${MPIRUN[@]}" -n "$n" "$engine_mpi"
done

echo "== example reshuffle on 4 ranks"
"${MPIRUN[@]}" -n 4 "$reshuffle" 1000

echo "== bench driver smoke run (copr only, N = 600, 2 reps) on 4 and 2 ranks"
"${MPIRUN[@]}" -n 4 "$driver" --sizes 600 --reps 2
"${MPIRUN[@]}" -n 2 "$driver" --sizes 600 --reps 2

echo "== all MPI tests passed"
