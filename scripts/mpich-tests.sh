#!/usr/bin/env bash
# The interposer (libcopr_interpose.so: the traffic recorder, and the reordering of
# MPI_Cart_create and MPI_Dist_graph_create_adjacent) built against MPICH and run under
# MPICH's launcher, besides Open MPI (scripts/mpi-tests.sh). Run from the repository
# root:
#
#   bash scripts/mpich-tests.sh
#
# Needs Debian's mpich and libmpich-dev (mpicc.mpich, mpifort.mpich, mpiexec.mpich);
# without them it says "skipped: no MPICH" and exits 0. MPICH is used only through
# those explicit names: Open MPI stays the default mpicc / mpirun.
#
# The library is built with MPICC=mpicc.mpich in a target directory of its own
# ($CARGO_TARGET_DIR, or target, then /mpich): rsmpi's build script does not run
# again when MPICC changes, so one directory holds one MPI's build. Each test program
# runs under MPICH with that library and under Open MPI with the Open MPI build (its
# path in COPR_OPENMPI_INTERPOSE, and `copr` in COPR_BIN, as scripts/mpi-tests.sh
# passes them; else built here in the usual target directory); the two recordings of
# the same program and arguments must be equal but for their `# host` lines.
set -euo pipefail
cd "$(dirname "$0")/.."

for tool in mpicc.mpich mpifort.mpich mpiexec.mpich; do
    command -v "$tool" >/dev/null || {
        echo "mpich-tests: skipped: no MPICH ($tool not found; Debian: apt-get install mpich libmpich-dev)"
        exit 0
    }
done

target=${CARGO_TARGET_DIR:-$PWD/target}
mpich_target="$target/mpich"
echo "== building libcopr_interpose.so against MPICH (MPICC=mpicc.mpich, $mpich_target)"
MPICC=mpicc.mpich CARGO_TARGET_DIR="$mpich_target" \
    cargo build --release --locked -p copr-interpose --features mpi,hwloc
mpich_lib="$mpich_target/release/libcopr_interpose.so"
# the library must be MPICH's: linked with libmpich, not Open MPI's libmpi
deps=$(ldd "$mpich_lib")
grep -q 'libmpich\.so' <<<"$deps" && ! grep -q 'libmpi\.so' <<<"$deps" || {
    echo "mpich-tests: $mpich_lib is not linked with MPICH:" >&2
    echo "$deps" >&2
    exit 1
}
ompi_lib=${COPR_OPENMPI_INTERPOSE:-}
copr_bin=${COPR_BIN:-}
if [[ -z $ompi_lib || -z $copr_bin ]]; then
    echo "== building libcopr_interpose.so against Open MPI and copr ($target)"
    cargo build --release --locked -p copr-interpose -p copr-cli --features copr-interpose/mpi,copr-interpose/hwloc
    ompi_lib=${ompi_lib:-$target/release/libcopr_interpose.so}
    copr_bin=${copr_bin:-$target/release/copr}
fi
for f in "$mpich_lib" "$ompi_lib" "$copr_bin"; do
    [[ -f $f ]] || { echo "mpich-tests: missing: '$f'" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
MPICH_RUN=(mpiexec.mpich -genv LD_PRELOAD "$mpich_lib")
OMPI_RUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none -x LD_PRELOAD="$ompi_lib")

# each test program, built for both libraries (MPICH's headers draw a false
# stringop-overflow warning from gcc at MPI_STATUSES_IGNORE)
echo "== the test programs, built with mpicc.mpich / mpifort.mpich and with mpicc / mpifort"
for mpi in mpich ompi; do
    if [[ $mpi == mpich ]]; then
        cc=(mpicc.mpich -Wno-stringop-overflow) fc=(mpifort.mpich)
    else
        cc=(mpicc) fc=(mpifort)
    fi
    cflags=(-std=c11 -O1 -Wall -Wextra -Werror -Iinterpose/tests/c)
    "${cc[@]}" "${cflags[@]}" -pthread interpose/tests/c/record_test.c -o "$work/record-test-$mpi"
    "${cc[@]}" "${cflags[@]}" interpose/tests/c/record_small.c -o "$work/record-small-$mpi"
    "${cc[@]}" "${cflags[@]}" interpose/tests/c/dist_graph_test.c -o "$work/dist-graph-test-$mpi"
    "${cc[@]}" "${cflags[@]}" -DCART_TEST_MPI_ONLY interpose/tests/c/cart_test.c \
        -o "$work/cart-test-$mpi"
    for f08 in "" -DF08; do
        mods="$work/modules-$mpi$f08"
        mkdir -p "$mods"
        "${fc[@]}" -cpp $f08 -std=f2008 -O1 -Wall -Werror -fimplicit-none -J "$mods" \
            interpose/tests/fortran/record_test.F90 -o "$work/record-test-f$f08-$mpi"
    done
done

# the recording without its host lines (where the ranks ran is the launcher's business)
edges() {
    grep -v '^# host ' "$1"
}
# record NAME RANKS PROGRAM ARGS...: records PROGRAM (built for each MPI) under MPICH and
# under Open MPI, every program checking its own counts against the file; the two files
# must be equal but for the host lines. Extra environment: RECORD_ENV=(NAME=VALUE ...).
RECORD_ENV=()
record() {
    local name=$1 n=$2 prog=$3
    shift 3
    local mpich_env=() ompi_env=() kv
    for kv in "${RECORD_ENV[@]}"; do
        mpich_env+=(-genv "${kv%%=*}" "${kv#*=}")
        ompi_env+=(-x "$kv")
    done
    "${MPICH_RUN[@]}" -genv COPR_RECORD "$work/$name.mpich" "${mpich_env[@]}" -n "$n" \
        "$work/$prog-mpich" "$@"
    "${OMPI_RUN[@]}" -x COPR_RECORD="$work/$name.ompi" "${ompi_env[@]}" -n "$n" \
        "$work/$prog-ompi" "$@"
    diff <(edges "$work/$name.mpich") <(edges "$work/$name.ompi") || {
        echo "mpich-tests: $name: the recording under MPICH (left) differs from Open MPI's" >&2
        exit 1
    }
}

echo "== the recorder's C and Fortran (use mpi, use mpi_f08) tests under MPICH and Open MPI on 1, 2, 4 and 7 ranks"
for n in 1 2 4 7; do
    for prog in record-test record-test-f record-test-f-DF08; do
        RECORD_ENV=()
        record "$prog-$n" "$n" "$prog"
        RECORD_ENV=(COPR_RECORD_ALLTOALL=1)
        record "$prog-a2a-$n" "$n" "$prog"
        grep -q "^# MPI_Alltoall and MPI_Alltoallv are in the graph" "$work/$prog-a2a-$n.mpich"
    done
done
RECORD_ENV=()
echo "== three threads sending at once (MPI_THREAD_MULTIPLE) on 2 and 7 ranks"
for n in 2 7; do
    record "threads-$n" "$n" record-test --threads
done
echo "== the small programs (silent, collectives only, MPI_Sendrecv, persistent, MPI_Comm_split, sends to self) on 1, 2 and 7 ranks"
for n in 1 2 7; do
    for mode in silent coll sendrecv persist split self; do
        record "small-$mode-$n" "$n" record-small "$mode"
    done
done
echo "== the scrambled 2 x 4 halo: the recording of data/graphs/recorded-halo-8.txt (made under Open MPI on two hosts)"
record halo-2x4 8 record-test --halo 2 4 1000
diff <(edges "$work/halo-2x4.mpich") <(edges data/graphs/recorded-halo-8.txt) || {
    echo "mpich-tests: the halo recorded under MPICH differs from data/graphs/recorded-halo-8.txt" >&2
    exit 1
}
"$copr_bin" map --graph "$work/halo-2x4.mpich" --machine-from-recording --budget 1 >/dev/null

echo "== the recorder under MPICH with COPR_RECORD unset: nothing written"
mkdir -p "$work/off"
(cd "$work/off" && "${MPICH_RUN[@]}" -n 2 "$work/record-test-mpich" --no-check)
[[ -z "$(ls -A "$work/off")" ]] || { echo "mpich-tests: the recorder wrote without COPR_RECORD" >&2; exit 1; }

# the reorders: each test program checks its communicator (topology, neighbours,
# translated ranks, a neighbour exchange) and the order it expects
log="$work/interpose.log"
# a log line the interposer must have written
expect_log() {
    grep -qF -- "$1" "$log" || { echo "mpich-tests: the interposer's log lacks: $1" >&2; cat "$log" >&2; exit 1; }
}
echo "== MPI_Cart_create 2x4 under the interposer on 8 ranks, 2 emulated nodes of 4 (MPICH)"
"$copr_bin" map --grid 2x4 --flat 2 --ranks-per-node 4 --mpich-rank-order "$work/order-2x4" >/dev/null
rm -f "$log"
"${MPICH_RUN[@]}" -genv COPR_EMULATE_NODE_SIZE 4 -genv COPR_INTERPOSE_LOG "$log" -n 8 \
    "$work/cart-test-mpich" mpi 2x4 --order "$work/order-2x4"
# by hand (as in scripts/mpi-tests.sh): 32 messages of 1 MiB; rows on nodes cut the 16
# column messages, 2 x 2 tiles 8 of the row messages
expect_log "predicted hop-bytes 16.777 MB -> 8.389 MB, off-node traffic 50.0 % -> 25.0 %"
expect_log "reordered: new rank of ranks 0..8:"
"${MPICH_RUN[@]}" -genv COPR_EMULATE_NODE_SIZE 4 -n 8 "$work/cart-test-mpich" mpi-noreorder 2x4 --identity
echo "== MPI_Cart_create 2x4 on 8 ranks placed round-robin on 2 nodes (COPR_PLACEMENT), and on the nodes found at run time (MPICH)"
for ((r = 0; r < 8; r++)); do echo "$r node$((r % 2))"; done >"$work/round-robin"
"${MPICH_RUN[@]}" -genv COPR_PLACEMENT "$work/round-robin" -n 8 \
    "$work/cart-test-mpich" mpi 2x4 --order "$work/order-2x4" --placement "$work/round-robin"
rm -f "$log"
"${MPICH_RUN[@]}" -genv COPR_INTERPOSE_LOG "$log" -n 4 "$work/cart-test-mpich" mpi 2x2 --identity
expect_log "machine: 1 node, flat network, 4 ranks per node (nodes found at run time)"
echo "== 2 ranks bound to cores by MPICH's launcher (-bind-to core): the interposer reads the bindings (hwloc)"
rm -f "$log"
mpiexec.mpich -bind-to core -genv LD_PRELOAD "$mpich_lib" -genv COPR_INTERPOSE_LOG "$log" -n 2 \
    "$work/cart-test-mpich" mpi 2 --identity
expect_log "inside nodes: hwloc: ranks bound to PUs"
echo "== MPI_Dist_graph_create_adjacent(reorder = 1) under the interposer on 8 ranks, 2 emulated nodes of 4 (MPICH)"
# by hand (as in scripts/mpi-tests.sh): packed cuts 26 MiB of the pairs graph, two
# whole pairs per node 4 MiB
rm -f "$log"
"${MPICH_RUN[@]}" -genv COPR_EMULATE_NODE_SIZE 4 -genv COPR_INTERPOSE_LOG "$log" -n 8 \
    "$work/dist-graph-test-mpich" pairs 4 4 --reordered
expect_log "predicted hop-bytes 27.263 MB -> 4.194 MB, off-node traffic 81.2 % -> 12.5 % (1 MiB per unit of edge weight)"
# the chain 0 3 6 1 4 7 2 5 of weight-2 edges, its ends giving MPI_WEIGHTS_EMPTY: packed
# cuts 5 of its 7 edges (10 MiB), the two halves of the path 1 (2 MiB)
rm -f "$log"
"${MPICH_RUN[@]}" -genv COPR_EMULATE_NODE_SIZE 4 -genv COPR_INTERPOSE_LOG "$log" -n 8 \
    "$work/dist-graph-test-mpich" chain 4 2 --reordered
expect_log "predicted hop-bytes 10.486 MB -> 2.097 MB"
"${MPICH_RUN[@]}" -genv COPR_EMULATE_NODE_SIZE 4 -n 8 "$work/dist-graph-test-mpich" chain 4 10 --noreorder --identity
echo "== the recorder under the reordering interposer (MPICH): the recordings of both MPIs equal"
RECORD_ENV=(COPR_EMULATE_NODE_SIZE=4)
record dist-graph 8 dist-graph-test pairs 4 4 --reordered
RECORD_ENV=()
echo "== all MPICH tests passed"
