#!/usr/bin/env bash
# Builds copr with the `mpi` feature and runs every multi-rank test program and example
# under mpirun. Run from the repository root; fails on the first error.
#
#   bash scripts/mpi-tests.sh
#
# Environment: CARGO_TARGET_DIR is honoured; COPR_MPI_CASES sets the number of random
# cases of the engine test program (default 240 per rank count), COPR_CAPI_CASES those
# of the C entry points' test program (default 192).
set -euo pipefail
cd "$(dirname "$0")/.."

MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)

# Path of the executable cargo builds for the target named $1 (cargo prints it as
# JSON; other targets it builds on the way, such as the copr binary, are skipped).
executable() {
    local name=$1
    shift
    cargo "$@" --message-format=json \
        | grep "\"target\":{[^}]*\"name\":\"$name\"" \
        | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' \
        | tail -n 1
}

# The same profile and features as `scripts/test-all`'s second `cargo test`, so the
# build is shared.
BUILD=(--release --all-features)
echo "== building (${BUILD[*]})"
engine_mpi=$(executable engine_mpi test "${BUILD[@]}" --test engine_mpi --no-run)
map_mpi=$(executable map_mpi test "${BUILD[@]}" --test map_mpi --no-run)
reshuffle=$(executable reshuffle build "${BUILD[@]}" --example reshuffle)
gain_mpi=$(executable gain_mpi build "${BUILD[@]}" --example gain_mpi)
driver=$(executable mpi_driver test "${BUILD[@]}" --bench mpi_driver --no-run)
for f in "$engine_mpi" "$map_mpi" "$reshuffle" "$gain_mpi" "$driver"; do
    [[ -x "$f" ]] || { echo "missing executable: '$f'" >&2; exit 1; }
done

# The C entry points (crate copr-capi, in the same build: --workspace unifies its
# features with the builds above) and the C program that checks them against
# ScaLAPACK's own routines, linked with Debian's libscalapack-openmpi.
echo "== building libcopr_capi and its C test program"
capi_lib=$(cargo build "${BUILD[@]}" --workspace --lib --message-format=json \
    | grep '"name":"copr_capi"' \
    | grep -o '"[^"]*/libcopr_capi\.so"' \
    | tr -d '"' \
    | tail -n 1)
[[ -f "$capi_lib" ]] || { echo "missing library: '$capi_lib'" >&2; exit 1; }
capi_dir=$(dirname "$capi_lib")
capi_test="$capi_dir/capi-redist-test"
mpicc -std=c11 -O1 -Wall -Wextra -Werror -Icapi/include capi/tests/c/redist_test.c \
    -o "$capi_test" -L"$capi_dir" -lcopr_capi -lscalapack-openmpi -lm -Wl,-rpath,"$capi_dir"
# the README's example, built as a user builds it: installed by capi/install.sh into a
# temporary prefix, compiled with the flags of its pkg-config file
capi_prefix=$(mktemp -d)
trap 'rm -rf "$capi_prefix"' EXIT
COPR_CAPI_LIBDIR="$capi_dir" bash capi/install.sh "$capi_prefix"
capi_example="$capi_prefix/redistribute"
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
mpicc -std=c11 -O1 -Wall -Wextra -Werror capi/examples/redistribute.c -o "$capi_example" \
    $(PKG_CONFIG_PATH="$capi_prefix/lib/pkgconfig" pkg-config --cflags --libs copr-capi) \
    -Wl,-rpath,"$capi_prefix/lib"
# the Fortran module with the Fortran test program (module files go to a directory of
# their own: they are compiler-specific)
capi_test_f="$capi_dir/capi-redist-test-f"
mkdir -p "$capi_dir/capi-fortran-modules"
mpifort -std=f2008 -O1 -Wall -Werror -fimplicit-none -J "$capi_dir/capi-fortran-modules" \
    capi/include/copr.f90 capi/tests/fortran/redist_test.f90 -o "$capi_test_f" \
    -L"$capi_dir" -lcopr_capi -lscalapack-openmpi -Wl,-rpath,"$capi_dir"

for n in 1 2 3 4 7; do
    echo "== engine_mpi on $n ranks"
    "${MPIRUN[@]}" -n "$n" "$engine_mpi"
done

for n in 1 3 4 8; do
    echo "== map_mpi (mappings applied with cart_create / reorder, emulated nodes) on $n ranks"
    "${MPIRUN[@]}" -n "$n" "$map_mpi"
done

for n in 4 7; do
    echo "== distributed relabeling gain, dense and sparse rows (gain_mpi) on $n ranks"
    "${MPIRUN[@]}" -n "$n" "$gain_mpi"
done
echo "== gain_mpi on 2 ranks bound to cores (run-time placement reads the binding)"
mpirun --allow-run-as-root --oversubscribe --bind-to core -n 2 "$gain_mpi"

# the bad-argument cases print their messages into a file the program reads back;
# what reaches the terminal is the per-case verdicts
for n in 1 2 3 4 6; do
    echo "== C entry points (copr_p?gemr2d, copr_p?tran*) against ScaLAPACK on $n ranks"
    "${MPIRUN[@]}" -n "$n" "$capi_test" "${COPR_CAPI_CASES:-192}"
done
for n in 1 3 4; do
    echo "== Fortran module (copr.f90) against ScaLAPACK on $n ranks"
    "${MPIRUN[@]}" -n "$n" "$capi_test_f"
done

echo "== the README's C example (copr_pdgemr2d, installed library) on 4 ranks"
"${MPIRUN[@]}" -n 4 "$capi_example"

echo "== example reshuffle on 4 ranks"
"${MPIRUN[@]}" -n 4 "$reshuffle" 1000

echo "== bench driver smoke run (copr only, N = 600, 2 reps) on 4 and 2 ranks"
"${MPIRUN[@]}" -n 4 "$driver" --sizes 600 --reps 2
"${MPIRUN[@]}" -n 2 "$driver" --sizes 600 --reps 2

echo "== all MPI tests passed"
