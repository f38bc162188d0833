#!/usr/bin/env bash
# Builds copr with the `mpi` feature and runs every multi-rank test program and example
# under mpirun. Run from the repository root; fails on the first error.
#
#   bash scripts/mpi-tests.sh
#
# Environment: CARGO_TARGET_DIR is honoured; COPR_MPI_CASES sets the number of random
# cases of the engine test program (default 240 per rank count), COPR_CAPI_CASES those
# of the C entry points' test program (default 192); SCALAPACK_SOURCE a checkout of
# Reference-ScaLAPACK, for ScaLAPACK's REDIST tester.
set -euo pipefail
cd "$(dirname "$0")/.."

MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)

# Everything below comes from one build with the profile, features and package
# selection of `scripts/test-all`'s second `cargo test` (`--workspace`, and `--tests`
# so the dev-dependencies take part in feature unification as they do there; another
# selection unifies features differently and rebuilds the crates), so under CI only
# the two cdylib-only crates (copr-scalapack, copr-interpose, which `cargo test` does
# not link) and the benchmark driver are new. cargo lists what it built or found fresh
# as JSON; the helpers below pick paths out of that list.
BUILD=(--release --all-features --workspace)
artifacts=$(mktemp)
trap 'rm -f "$artifacts"' EXIT
echo "== building (${BUILD[*]})"
cargo build "${BUILD[@]}" --lib --bins --tests --examples --bench mpi_driver \
    --message-format=json >"$artifacts"

# Executable of the target named $1 of kind $2 (test, example, bench, bin), built as
# a program (not as a unit-test harness) unless $2 is test or bench.
executable() {
    local line
    line=$(grep '"reason":"compiler-artifact"' "$artifacts" \
        | grep "\"target\":{\"kind\":\[\"$2\"\][^}]*\"name\":\"$1\"" || true)
    case $2 in
        test | bench) ;;
        *) line=$(grep '"test":false' <<<"$line" || true) ;;
    esac
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' <<<"$line" | tail -n 1
}
# Path of the shared library $1 (e.g. libcopr_capi.so) among the artifacts.
shared_library() {
    grep '"reason":"compiler-artifact"' "$artifacts" | grep -o "\"[^\"]*/$1\"" | tr -d '"' | tail -n 1
}

engine_mpi=$(executable engine_mpi test)
engine_shared_mpi=$(executable engine_shared_mpi test)
map_mpi=$(executable map_mpi test)
map_mpi_partial=$(executable map_mpi_partial test)
reshuffle=$(executable reshuffle example)
gain_mpi=$(executable gain_mpi example)
driver=$(executable mpi_driver bench)
calibrate_mpi=$(executable calibrate_mpi test)
copr_bin=$(executable copr bin)
for f in "$engine_mpi" "$engine_shared_mpi" "$map_mpi" "$map_mpi_partial" "$reshuffle" "$gain_mpi" "$driver" "$calibrate_mpi" "$copr_bin"; do
    [[ -x "$f" ]] || { echo "missing executable: '$f'" >&2; exit 1; }
done

# The C entry points (crate copr-capi, built above with the rest of the workspace) and
# the C program that checks them against ScaLAPACK's own routines, linked with
# Debian's libscalapack-openmpi.
echo "== the C test programs"
capi_lib=$(shared_library libcopr_capi.so)
[[ -f "$capi_lib" ]] || { echo "missing library: '$capi_lib'" >&2; exit 1; }
capi_dir=$(dirname "$capi_lib")
# the unprefixed library (crate copr-scalapack), built by the same command
unprefixed_lib="$capi_dir/libcopr_scalapack.so"
[[ -f "$unprefixed_lib" ]] || { echo "missing library: '$unprefixed_lib'" >&2; exit 1; }
capi_test="$capi_dir/capi-redist-test"
mpicc -std=c11 -O1 -Wall -Wextra -Werror -Icapi/include capi/tests/c/redist_test.c \
    -o "$capi_test" -L"$capi_dir" -lcopr_capi -lscalapack-openmpi -lm -Wl,-rpath,"$capi_dir"
# the same program relinked: ScaLAPACK's names from libcopr_scalapack (ahead of
# ScaLAPACK), ScaLAPACK's own routines as the reference through scalapack_ref.c; and a
# program that knows only ScaLAPACK, run with and without the library preloaded
capi_test_unprefixed="$capi_dir/capi-redist-test-unprefixed"
mpicc -std=c11 -O1 -Wall -Wextra -Werror -DCOPR_UNPREFIXED -Icapi/include -Icapi/tests/c \
    capi/tests/c/redist_test.c capi/tests/c/scalapack_ref.c -o "$capi_test_unprefixed" \
    -L"$capi_dir" -lcopr_scalapack -lscalapack-openmpi -lm -ldl -Wl,-rpath,"$capi_dir"
preload_check="$capi_dir/capi-preload-check"
# redistributions over several overlapping grids in one job, then MPI_Finalize:
# relinked with libcopr_scalapack, and linked with ScaLAPACK alone (for LD_PRELOAD)
multigrid_test="$capi_dir/capi-multigrid-test"
mpicc -std=c11 -O1 -Wall -Wextra -Werror -Icapi/tests/c capi/tests/c/multigrid_test.c \
    -o "$multigrid_test" -L"$capi_dir" -lcopr_scalapack -lscalapack-openmpi -ldl \
    -Wl,-rpath,"$capi_dir"
multigrid_plain="$capi_dir/capi-multigrid-plain"
mpicc -std=c11 -O1 -Wall -Wextra -Werror -Icapi/tests/c capi/tests/c/multigrid_test.c \
    -o "$multigrid_plain" -lscalapack-openmpi -ldl
mpicc -std=c11 -O1 -Wall -Wextra -Werror capi/tests/c/preload_check.c -o "$preload_check" \
    -lscalapack-openmpi -ldl
# the README's example, built as a user builds it: installed by capi/install.sh into a
# temporary prefix, compiled with the flags of its pkg-config file
capi_prefix=$(mktemp -d)
trap 'rm -rf "$capi_prefix" "$artifacts"' EXIT
COPR_CAPI_LIBDIR="$capi_dir" bash capi/install.sh "$capi_prefix"
capi_example="$capi_prefix/redistribute"
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
mpicc -std=c11 -O1 -Wall -Wextra -Werror capi/examples/redistribute.c -o "$capi_example" \
    $(PKG_CONFIG_PATH="$capi_prefix/lib/pkgconfig" pkg-config --cflags --libs copr-capi) \
    -Wl,-rpath,"$capi_prefix/lib"
capi_cart_example="$capi_prefix/cart-example"
# shellcheck disable=SC2046
mpicc -std=c11 -O1 -Wall -Wextra -Werror capi/examples/cart.c -o "$capi_cart_example" \
    $(PKG_CONFIG_PATH="$capi_prefix/lib/pkgconfig" pkg-config --cflags --libs copr-capi) \
    -Wl,-rpath,"$capi_prefix/lib"
# the Fortran module with the Fortran test program (module files go to a directory of
# their own: they are compiler-specific)
capi_test_f="$capi_dir/capi-redist-test-f"
mkdir -p "$capi_dir/capi-fortran-modules"
mpifort -cpp -std=f2008 -O1 -Wall -Werror -fimplicit-none -J "$capi_dir/capi-fortran-modules" \
    capi/include/copr.f90 capi/tests/fortran/redist_test.f90 -o "$capi_test_f" \
    -L"$capi_dir" -lcopr_capi -lscalapack-openmpi -Wl,-rpath,"$capi_dir"
# node-shared source matrices (copr_alloc_shared / copr_free_shared), from C and Fortran
capi_shared_test="$capi_dir/capi-shared-test"
mpicc -std=c11 -O1 -Wall -Wextra -Werror -Icapi/include -Icapi/tests/c \
    capi/tests/c/shared_test.c -o "$capi_shared_test" -L"$capi_dir" -lcopr_capi \
    -lscalapack-openmpi -lm -Wl,-rpath,"$capi_dir"
capi_shared_test_f="$capi_dir/capi-shared-test-f"
mpifort -cpp -std=f2008 -O1 -Wall -Werror -fimplicit-none -J "$capi_dir/capi-fortran-modules" \
    capi/include/copr.f90 capi/tests/fortran/shared_test.f90 -o "$capi_shared_test_f" \
    -L"$capi_dir" -lcopr_capi -lscalapack-openmpi -Wl,-rpath,"$capi_dir"
# relinked with the unprefixed library, ScaLAPACK's own routines as ref_*
capi_test_f_unprefixed="$capi_dir/capi-redist-test-f-unprefixed"
mpicc -std=c11 -O1 -Wall -Wextra -Werror -Icapi/tests/c -c capi/tests/c/scalapack_ref.c \
    -o "$capi_dir/scalapack_ref.o"
mpifort -cpp -DCOPR_UNPREFIXED -std=f2008 -O1 -Wall -Werror -fimplicit-none \
    -J "$capi_dir/capi-fortran-modules" capi/include/copr.f90 \
    capi/tests/fortran/redist_test.f90 "$capi_dir/scalapack_ref.o" -o "$capi_test_f_unprefixed" \
    -L"$capi_dir" -lcopr_scalapack -lscalapack-openmpi -ldl -Wl,-rpath,"$capi_dir"

for n in 1 2 3 4 7; do
    echo "== engine_mpi on $n ranks"
    "${MPIRUN[@]}" -n "$n" "$engine_mpi"
done

# B in node-shared memory (receivers read their packages straight from the sender's B):
# one node of 3 and of 4 ranks, and emulated nodes of 2 ranks
for n in 3 4; do
    echo "== engine_shared_mpi on $n ranks"
    "${MPIRUN[@]}" -n "$n" "$engine_shared_mpi"
done
echo "== engine_shared_mpi on 4 ranks, emulated nodes of 2"
"${MPIRUN[@]}" -n 4 -x COPR_EMULATE_NODE_SIZE=2 "$engine_shared_mpi"

for n in 1 3 4 8; do
    echo "== map_mpi (mappings applied with cart_create / reorder, emulated nodes) on $n ranks"
    "${MPIRUN[@]}" -n "$n" "$map_mpi"
done

# nodes that run different numbers of ranks: a reordered communicator of exactly the
# job's ranks, each on the node `copr map` chooses offline for the same pattern and
# machine (compared as the partition of the tasks into nodes: nodes of equal size may
# trade names), exchanging checked messages with its pattern neighbours
partial_dir=$(mktemp -d)
trap 'rm -rf "$partial_dir" "$capi_prefix" "$artifacts"' EXIT
cat >"$partial_dir/six.txt" <<'EOF_SIX'
tasks 6
# a heavy triangle 0 3 5, a heavy pair 1 4, task 2 light; light messages between them
0 3 4000
3 0 4000
3 5 4000
5 3 4000
0 5 4000
5 0 4000
1 4 8000
4 1 8000
2 0 80
0 2 80
1 2 80
4 5 16
EOF_SIX
cat >"$partial_dir/seven.txt" <<'EOF_SEVEN'
tasks 7
# two heavy triangles (0 2 4) and (1 5 6), task 3 light
0 2 4000
2 4 4000
4 0 4000
1 5 6000
5 6 6000
6 1 6000
3 0 64
3 1 64
2 5 8
EOF_SEVEN
# flat machine files: NAMES (a node list) with COUNTS slots each
machine_file() {
    printf 'nodes = "%s"\nranks_per_node = %s\n[flat]\nnodes = %s\n' "$2" "$3" "$4" >"$partial_dir/$1"
    echo "$partial_dir/$1"
}
# "TASK NODE" lines (the test program's, or a rankfile's) as a canonical partition:
# nodes renamed by first appearance in task order
partition() {
    sed -n 's/^rank \([0-9]*\)=\([^ ]*\) slot=.*/\1 \2/; /^[0-9]/p' "$1" | sort -n \
        | awk '{ if (!($2 in id)) id[$2] = n++; print $1, id[$2] }'
}
# run_partial NAME RANKS PATTERN OFFLINE_MACHINE ENV...: the runtime mapping against
# `copr map --machine OFFLINE_MACHINE` of the same pattern
run_partial() {
    local name=$1 n=$2 pattern=$3 offline=$4
    shift 4
    echo "== map_mpi_partial: $name"
    "${MPIRUN[@]}" -n "$n" "$@" "$map_mpi_partial" "$pattern" "$partial_dir/$name.out"
    "$copr_bin" map --graph "$pattern" --machine "$offline" --rankfile "$partial_dir/$name.rf" \
        >/dev/null 2>&1
    [[ $(grep -c '^rank ' "$partial_dir/$name.rf") == "$n" ]] \
        || { echo "$name: the rankfile does not name $n ranks" >&2; exit 1; }
    diff <(partition "$partial_dir/$name.out") <(partition "$partial_dir/$name.rf") \
        || { echo "$name: the runtime's nodes differ from copr map's (left: runtime)" >&2; exit 1; }
}
m321=$(machine_file m321.toml 'node[0-2]' '[3, 2, 1]' 3)
run_partial "emulated 3,2,1" 6 "$partial_dir/six.txt" "$m321" -x COPR_EMULATE_NODE_SIZE=3,2,1
run_partial "emulated nodes of 3 on 7 ranks" 7 "$partial_dir/seven.txt" \
    "$(machine_file m331.toml 'node[0-2]' '[3, 3, 1]' 3)" -x COPR_EMULATE_NODE_SIZE=3
# a placement file: ranks scattered over nodes of 3, 2 and 1
printf '0 a\n1 b\n2 a\n3 c\n4 b\n5 a\n' >"$partial_dir/scattered"
run_partial "placement 3,2,1 scattered" 6 "$partial_dir/six.txt" \
    "$(machine_file abc321.toml 'a,b,c' '[3, 2, 1]' 3)" -x COPR_PLACEMENT="$partial_dir/scattered"
# a machine file of 3 nodes x 4 slots for 6 ranks: packed, they fill a and 2 of b
big=$(machine_file big.toml 'a,b,c' 4 3)
run_partial "machine file of 12 slots, 6 ranks" 6 "$partial_dir/six.txt" \
    "$(machine_file ab42.toml 'a,b' '[4, 2]' 2)" -x COPR_MACHINE="$big"
# a machine file that names this host second: the 3 ranks sit on the node they run on
# (found by name), not packed on the first
printf 'tasks 3\n0 1 100\n1 2 100\n2 0 100\n' >"$partial_dir/three.txt"
host=$(hostname)
"${MPIRUN[@]}" -n 3 -x COPR_MACHINE="$(machine_file named.toml "spare,$host" 4 2)" \
    "$map_mpi_partial" "$partial_dir/three.txt" "$partial_dir/named.out"
[[ $(grep -c " $host\$" "$partial_dir/named.out") == 3 ]] \
    || { echo "a machine file naming this host: the ranks are not on it" >&2; cat "$partial_dir/named.out" >&2; exit 1; }
# the same with the host's name as a full domain name in the file (MPI gives the short
# one): the names match up to the first dot
"${MPIRUN[@]}" -n 3 -x COPR_MACHINE="$(machine_file fqdn.toml "spare.example.org,$host.example.org" 4 2)" \
    "$map_mpi_partial" "$partial_dir/three.txt" "$partial_dir/fqdn.out"
[[ $(grep -c " $host.example.org\$" "$partial_dir/fqdn.out") == 3 ]] \
    || { echo "a machine file naming this host's full name: the ranks are not on it" >&2; cat "$partial_dir/fqdn.out" >&2; exit 1; }
# the job launched as `copr map`'s rankfile for the 12 slots says (here as a placement
# file of its hosts): the ranks already sit where copr would put them
"$copr_bin" map --graph "$partial_dir/six.txt" --machine "$big" --rankfile "$partial_dir/big.rf" >/dev/null 2>&1
sed -n 's/^rank \([0-9]*\)=\([^ ]*\) slot=.*/\1 \2/p' "$partial_dir/big.rf" >"$partial_dir/from-rankfile"
"${MPIRUN[@]}" -n 6 -x COPR_PLACEMENT="$partial_dir/from-rankfile" "$map_mpi_partial" \
    "$partial_dir/six.txt" "$partial_dir/launched.out"
grep -qx '# reordered no' "$partial_dir/launched.out" \
    || { echo "launched by copr map's rankfile: copr reordered again" >&2; cat "$partial_dir/launched.out" >&2; exit 1; }
diff <(partition "$partial_dir/launched.out") <(partition "$partial_dir/big.rf")
# bad inputs: one line from the program, exit status 2
for bad in "COPR_EMULATE_NODE_SIZE=3,2|the emulated nodes hold 5 ranks but MPI_COMM_WORLD rank 5" \
    "COPR_EMULATE_NODE_SIZE=3,0,3|expected a number of ranks per node" \
    "COPR_MACHINE=$m321|6 slots (3 nodes of up to 3 ranks) but the communicator has 7 ranks" \
    "COPR_PLACEMENT=$partial_dir/scattered|places 6 ranks but MPI_COMM_WORLD rank 6 is in the communicator"; do
    status=0
    "${MPIRUN[@]}" -n 7 -x "${bad%%|*}" "$map_mpi_partial" "$partial_dir/seven.txt" \
        "$partial_dir/bad.out" 2>"$partial_dir/bad.err" || status=$?
    lines=$(grep -c '^map_mpi_partial: ' "$partial_dir/bad.err" || true)
    if [[ $status != 2 || $lines != 1 ]] || ! grep -qF -- "${bad#*|}" "$partial_dir/bad.err"; then
        echo "${bad%%|*}: exit $status, $lines lines, expected 2 and one line with: ${bad#*|}" >&2
        cat "$partial_dir/bad.err" >&2
        exit 1
    fi
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

# the wrong-use cases print their messages: shown only when a program fails, else its
# verdict (the last line)
run_quiet() { # NAME RANKS PROGRAM
    local out
    out=$(timeout 300 "${MPIRUN[@]}" -n "$2" "$3" 2>&1) \
        || { echo "$out" >&2; echo "$1 failed on $2 ranks" >&2; exit 1; }
    tail -n 1 <<<"$out"
}
for n in 2 3 4; do
    echo "== node-shared sources from C (copr_alloc_shared) on $n ranks"
    run_quiet capi-shared-test "$n" "$capi_shared_test"
done
echo "== node-shared sources from Fortran on 4 ranks"
run_quiet capi-shared-test-f 4 "$capi_shared_test_f"

for n in 2 4; do
    echo "== the C test relinked with libcopr_scalapack (ScaLAPACK's names) against ScaLAPACK's own on $n ranks"
    "${MPIRUN[@]}" -n "$n" "$capi_test_unprefixed" "${COPR_CAPI_CASES:-192}"
done
echo "== the Fortran test relinked with libcopr_scalapack against ScaLAPACK's own on 3 ranks"
"${MPIRUN[@]}" -n 3 "$capi_test_f_unprefixed"
for n in 3 4; do
    echo "== a program linked only with ScaLAPACK, as is and with LD_PRELOAD=libcopr_scalapack.so, on $n ranks"
    "${MPIRUN[@]}" -n "$n" "$preload_check" scalapack
    "${MPIRUN[@]}" -x LD_PRELOAD="$unprefixed_lib" -n "$n" "$preload_check" copr
done
# Several overlapping BLACS grids in one job (as ScaLAPACK's REDIST tester runs
# GEMR2D.dat), random grids over random process subsets, and a context invalid on one
# process: every run must end, MPI_Finalize included, within the time limit.
for n in 4 5 6; do
    echo "== pdgemr2d_ and pdtran_ on overlapping grids, then MPI_Finalize, on $n ranks (relinked, preloaded)"
    timeout 300 "${MPIRUN[@]}" -n "$n" "$multigrid_test" cases
    timeout 300 "${MPIRUN[@]}" -x LD_PRELOAD="$unprefixed_lib" -n "$n" "$multigrid_plain" cases
    echo "== 300 calls over random grids and process subsets, then MPI_Finalize, on $n ranks (relinked, preloaded)"
    timeout 300 "${MPIRUN[@]}" -n "$n" "$multigrid_test" stress 300
    timeout 300 "${MPIRUN[@]}" -x LD_PRELOAD="$unprefixed_lib" -n "$n" "$multigrid_plain" stress 300 "$n"
    echo "== pdgemr2d_ and pdtran_ with a context invalid on exactly one process, on $n ranks (relinked, preloaded)"
    # (the expected error messages go to a file, shown when the run fails)
    timeout 300 "${MPIRUN[@]}" -n "$n" "$multigrid_test" badctxt 2>"$capi_prefix/badctxt.err" \
        || { cat "$capi_prefix/badctxt.err" >&2; exit 1; }
    timeout 300 "${MPIRUN[@]}" -x LD_PRELOAD="$unprefixed_lib" -n "$n" "$multigrid_plain" badctxt \
        2>"$capi_prefix/badctxt.err" || { cat "$capi_prefix/badctxt.err" >&2; exit 1; }
    echo "== contexts over process subsets invalid on one process, and on all of them, on $n ranks (relinked, preloaded)"
    # (with all of them invalid, each call waits COPR_CONTEXT_WAIT seconds for a group)
    for mode in badsub allbadsub; do
        timeout 300 "${MPIRUN[@]}" -x COPR_CONTEXT_WAIT=0.2 -n "$n" "$multigrid_test" "$mode" \
            2>"$capi_prefix/badctxt.err" || { cat "$capi_prefix/badctxt.err" >&2; exit 1; }
        timeout 300 "${MPIRUN[@]}" -x COPR_CONTEXT_WAIT=0.2 -x LD_PRELOAD="$unprefixed_lib" -n "$n" \
            "$multigrid_plain" "$mode" 2>"$capi_prefix/badctxt.err" \
            || { cat "$capi_prefix/badctxt.err" >&2; exit 1; }
    done
    echo "== descriptors as ScaLAPACK and PBLAS read them (DTYPE unset, DTYPE = 2), on $n ranks (ScaLAPACK, relinked, preloaded)"
    timeout 300 "${MPIRUN[@]}" -n "$n" "$multigrid_plain" descriptors
    timeout 300 "${MPIRUN[@]}" -n "$n" "$multigrid_test" descriptors 2>"$capi_prefix/desc.err" \
        || { cat "$capi_prefix/desc.err" >&2; exit 1; }
    timeout 300 "${MPIRUN[@]}" -x LD_PRELOAD="$unprefixed_lib" -n "$n" "$multigrid_plain" descriptors \
        2>"$capi_prefix/desc.err" || { cat "$capi_prefix/desc.err" >&2; exit 1; }
done
# ScaLAPACK's own testers, unmodified, with Debian's library and through copr: the pass
# counts must be the same (Debian's prebuilt testers from scalapack-mpi-test, their
# input files from scalapack-test-common).
slt=/usr/lib/x86_64-linux-gnu/scalapack/openmpi-tests
slt_dir="$capi_prefix/scalapack-testers"
mkdir -p "$slt_dir"
# "$1" counts in the output file $2 (with an awk program), equal with and without copr
same_count() {
    local what=$1 ref=$2 ours=$3 count=$4
    local a b
    a=$(awk "$count" "$ref")
    b=$(awk "$count" "$ours")
    echo "   $what: $a with Debian's ScaLAPACK, $b through copr"
    [[ -n "$a" && "$a" == "$b" && "$a" != 0 ]] || { echo "$what differs" >&2; cat "$ours" >&2; exit 1; }
}
# PBLAS level 3 (dpb3tst on PDBLAS3TST.dat): its routines call no redistribution routine
# by name, so copr serves none of its calls; run to show the drop-in changes nothing
echo "== ScaLAPACK's PBLAS level-3 tester (dpb3tst) on 4 ranks, Debian and LD_PRELOAD=libcopr_scalapack.so"
(
    cd "$slt_dir"
    cp /usr/share/scalapack/PBLAS/PDBLAS3TST.dat .
    timeout 600 "${MPIRUN[@]}" -n 4 "$slt/PBLAS/dpb3tst" >pblas3.debian 2>&1
    timeout 600 "${MPIRUN[@]}" -x LD_PRELOAD="$unprefixed_lib" -n 4 "$slt/PBLAS/dpb3tst" >pblas3.copr 2>&1
    passed='/^  \|/ { p += $4; f += $5 } END { if (f == 0) print p }'
    same_count "PBLAS level-3 tests passed" pblas3.debian pblas3.copr "$passed"
)
# the SVD tester (xdsvd on SVD.dat): ScaLAPACK's pdgesvd calls pdgemr2d_, which the
# preloaded library serves
echo "== ScaLAPACK's SVD tester (xdsvd, pdgesvd calls pdgemr2d_) on 4 ranks, Debian and LD_PRELOAD=libcopr_scalapack.so"
(
    cd "$slt_dir"
    cp /usr/share/scalapack/SVD.dat .
    timeout 600 "${MPIRUN[@]}" -n 4 "$slt/xdsvd" >svd.debian 2>&1
    timeout 600 "${MPIRUN[@]}" -x LD_PRELOAD="$unprefixed_lib" -n 4 "$slt/xdsvd" >svd.copr 2>&1
    passed='/^Passed/ { p++ } /^Failed/ { f++ } END { if (f == 0) print p }'
    same_count "SVD tests passed" svd.debian svd.copr "$passed"
)
# ScaLAPACK's REDIST tester (REDIST/TESTING/pdgemrdrv.c on GEMR2D.dat), which Debian does
# not ship: built from ScaLAPACK's source when there is one (SCALAPACK_SOURCE, a checkout
# of Reference-ScaLAPACK v2.2.1), against Debian's library, and run as is, relinked and
# preloaded. (Debian's source package would do as well, but its tarballs are not served
# to this machine.)
redist_src=""
if [[ -f "${SCALAPACK_SOURCE:-}/REDIST/TESTING/pdgemrdrv.c" ]]; then
    redist_src="$SCALAPACK_SOURCE"
fi
if [[ -n "$redist_src" ]]; then
    echo "== ScaLAPACK's REDIST testers (p?gemrdrv.c, GEMR2D.dat) from $redist_src: Debian, relinked, preloaded"
    (
        cd "$slt_dir"
        testing="$redist_src/REDIST/TESTING"
        cp "$testing/GEMR2D.dat" .
        passed='/TEST PASSED OK/ { p++ } END { print p + 0 }'
        for t in s d c z; do
            mpicc -O1 -w -I"$testing" "$testing/p${t}gemrdrv.c" -o "x${t}gemr-debian" -lscalapack-openmpi
            mpicc -O1 -w -I"$testing" "$testing/p${t}gemrdrv.c" -o "x${t}gemr-copr" \
                -L"$capi_dir" -lcopr_scalapack -lscalapack-openmpi -Wl,-rpath,"$capi_dir"
            ranks=(4)
            [[ $t == d ]] && ranks=(4 5 6)
            for n in "${ranks[@]}"; do
                timeout 600 "${MPIRUN[@]}" -n "$n" "./x${t}gemr-debian" >redist.debian 2>&1
                timeout 600 "${MPIRUN[@]}" -n "$n" "./x${t}gemr-copr" >redist.relinked 2>&1
                timeout 600 "${MPIRUN[@]}" -x LD_PRELOAD="$unprefixed_lib" -n "$n" "./x${t}gemr-debian" \
                    >redist.preloaded 2>&1
                same_count "p${t}gemr2d tests passed on $n ranks (relinked)" redist.debian redist.relinked "$passed"
                same_count "p${t}gemr2d tests passed on $n ranks (preloaded)" redist.debian redist.preloaded "$passed"
            done
        done
    )
else
    echo "== ScaLAPACK's REDIST tester: skipped, no ScaLAPACK source (set SCALAPACK_SOURCE to a"
    echo "   Reference-ScaLAPACK v2.2.1 checkout to run it)"
fi
# copr's process mapping as communicators: MPI_Cart_create(reorder = 1) under the
# interposer (LD_PRELOAD), copr_cart_create / copr_comm_reorder from C and Fortran, on
# emulated nodes; the expected orders are those `copr map` writes for the same machine
echo "== the interposer's test programs (C and Fortran)"
interpose_lib="$capi_dir/libcopr_interpose.so"
for f in "$copr_bin" "$interpose_lib"; do
    [[ -f "$f" ]] || { echo "missing: '$f'" >&2; exit 1; }
done
cart_test="$capi_dir/cart-test"
mpicc -std=c11 -O1 -Wall -Wextra -Werror -Icapi/include -Iinterpose/tests/c interpose/tests/c/cart_test.c \
    -o "$cart_test" -L"$capi_dir" -lcopr_capi -lscalapack-openmpi -Wl,-rpath,"$capi_dir"
dist_graph_test="$capi_dir/dist-graph-test"
mpicc -std=c11 -O1 -Wall -Wextra -Werror -Iinterpose/tests/c interpose/tests/c/dist_graph_test.c -o "$dist_graph_test"
cart_test_f="$capi_dir/cart-test-f"
mpifort -std=f2008 -O1 -Wall -Werror -fimplicit-none -J "$capi_dir/capi-fortran-modules" \
    capi/include/copr.f90 interpose/tests/fortran/cart_test.f90 -o "$cart_test_f" \
    -L"$capi_dir" -lcopr_capi -lscalapack-openmpi -Wl,-rpath,"$capi_dir"
cart_dir="$capi_prefix/cart"
mkdir -p "$cart_dir"
PRELOAD=(-x LD_PRELOAD="$interpose_lib")
# the MPICH_RANK_ORDER file `copr map` writes for GRID on NODES flat nodes of K ranks
rank_order() {
    local out="$cart_dir/order-$1-$2x$3"
    "$copr_bin" map --grid "$1" --flat "$2" --ranks-per-node "$3" --mpich-rank-order "$out" >/dev/null
    echo "$out"
}
# a log line the interposer must have written to $1
expect_log() {
    grep -qF -- "$2" "$1" || { echo "the interposer's log $1 lacks: $2" >&2; cat "$1" >&2; exit 1; }
}
order_2x4=$(rank_order 2x4 2 4)
order_4=$(rank_order 4 2 2)
log="$cart_dir/interpose.log"

echo "== MPI_Cart_create 2x4 under the interposer on 8 ranks, 2 emulated nodes of 4"
"${MPIRUN[@]}" -n 8 "${PRELOAD[@]}" -x COPR_EMULATE_NODE_SIZE=4 -x COPR_INTERPOSE_LOG="$log" \
    "$cart_test" mpi 2x4 --order "$order_2x4"
# by hand: 32 messages of 1 MiB; rows on nodes cut the 16 column messages, 2 x 2 tiles
# cut 8 of the row messages
expect_log "$log" "predicted hop-bytes 16.777 MB -> 8.389 MB, off-node traffic 50.0 % -> 25.0 %"
expect_log "$log" "reordered: new rank of ranks 0..8:"
echo "== the same program without the interposer, and with reorder = 0 under it (identity)"
"${MPIRUN[@]}" -n 8 -x COPR_EMULATE_NODE_SIZE=4 "$cart_test" mpi 2x4 --identity
"${MPIRUN[@]}" -n 8 "${PRELOAD[@]}" -x COPR_EMULATE_NODE_SIZE=4 "$cart_test" mpi-noreorder 2x4 --identity
echo "== copr_cart_create and copr_comm_reorder (C) on the same machine"
"${MPIRUN[@]}" -n 8 -x COPR_EMULATE_NODE_SIZE=4 "$cart_test" capi 2x4 --order "$order_2x4"
"${MPIRUN[@]}" -n 8 -x COPR_EMULATE_NODE_SIZE=4 "$cart_test" reorder 2x4 --order "$order_2x4"
echo "== MPI_Cart_create 2x4 under the interposer and copr_cart_create on 8 ranks, emulated nodes of 3, 3 and 2"
# the order `copr map` writes for the machine of 3 nodes of 3, 3 and 2 slots
printf 'nodes = "node[0-2]"\nranks_per_node = [3, 3, 2]\n[flat]\nnodes = 3\n' >"$cart_dir/m332.toml"
"$copr_bin" map --grid 2x4 --machine "$cart_dir/m332.toml" --mpich-rank-order "$cart_dir/order-332" >/dev/null
"${MPIRUN[@]}" -n 8 "${PRELOAD[@]}" -x COPR_EMULATE_NODE_SIZE=3,3,2 -x COPR_INTERPOSE_LOG="$log" \
    "$cart_test" mpi 2x4 --order "$cart_dir/order-332"
expect_log "$log" "reordered: new rank of ranks 0..8:"
"${MPIRUN[@]}" -n 8 -x COPR_EMULATE_NODE_SIZE=3 "$cart_test" capi 2x4 --order "$cart_dir/order-332"
echo "== the interposer on 8 and 4 ranks placed round-robin on 2 nodes (COPR_PLACEMENT)"
for n in 8 4; do
    placement="$cart_dir/round-robin-$n"
    for ((r = 0; r < n; r++)); do echo "$r node$((r % 2))"; done >"$placement"
    [[ $n == 8 ]] && grid=2x4 order=$order_2x4 || grid=4 order=$order_4
    "${MPIRUN[@]}" -n "$n" "${PRELOAD[@]}" -x COPR_PLACEMENT="$placement" \
        "$cart_test" mpi "$grid" --order "$order" --placement "$placement"
done
echo "== the interposer where copr cannot do better (2x2 on 2 nodes of 2, on 1 node) or fails"
# by hand: every pair of a periodic 2 x 2 grid on a node cuts the same 4 messages
"${MPIRUN[@]}" -n 4 "${PRELOAD[@]}" -x COPR_EMULATE_NODE_SIZE=2 -x COPR_INTERPOSE_LOG="$log" \
    "$cart_test" mpi 2x2 --identity
expect_log "$log" "kept the MPI library's order: copr's mapping is no better"
"${MPIRUN[@]}" -n 4 "${PRELOAD[@]}" -x COPR_MACHINE=/nonexistent/machine.toml \
    -x COPR_INTERPOSE_LOG="$log" "$cart_test" mpi 2x2 --periods 1,0 --identity
expect_log "$log" "kept the MPI library's order: cannot read /nonexistent/machine.toml"
# without the log, each fallback is one line on standard error from the first process
for bad_env in COPR_MACHINE=/nonexistent/machine.toml COPR_EMULATE_NODE_SIZE=abc \
    COPR_PLACEMENT=/nonexistent/placement; do
    "${MPIRUN[@]}" -n 4 "${PRELOAD[@]}" -x "$bad_env" "$cart_test" mpi 2x2 --identity \
        2>"$cart_dir/fallback.err"
    lines=$(grep -c "^copr-interpose: .*kept the MPI library's order" "$cart_dir/fallback.err" || true)
    [[ $lines == 1 ]] || { echo "$bad_env: $lines fallback lines, not 1" >&2; cat "$cart_dir/fallback.err" >&2; exit 1; }
done
# no environment: the nodes found at run time, here this one host (nothing to gain)
"${MPIRUN[@]}" -n 4 "${PRELOAD[@]}" -x COPR_INTERPOSE_LOG="$log" "$cart_test" mpi 2x2 --identity
expect_log "$log" "machine: 1 node, flat network, 4 ranks per node (nodes found at run time)"
expect_log "$log" "inside nodes: flat: rank 0 is not bound to a PU"
echo "== inside the nodes (hwloc): 8 ranks bound to cores, 4 emulated nodes of 2, this host as one package of two L3 caches"
# HWLOC_SYNTHETIC (with HWLOC_THISSYSTEM, so that hwloc reads the real binding) shows
# the ranks this host as one package with two L3 caches of one core each; rank r is
# bound to PU 1 - r % 2 (taskset), so the ranks of a node take its slots in reverse
# order (slot of rank r: r + 1 - 2 (r % 2)). The order must be that of `copr map` for
# the same machine written as a file.
machine_l3="$cart_dir/two-l3.toml"
printf 'ranks_per_node = 2\n[flat]\nnodes = 4\n[intra]\nkind = "tree"\nshape = "pack:1 l3:2 core:1"\n' \
    >"$machine_l3"
order_l3="$cart_dir/order-2x4-l3"
"$copr_bin" map --grid 2x4 --machine "$machine_l3" --mpich-rank-order "$order_l3" >/dev/null
synthetic=(-x HWLOC_SYNTHETIC="pack:1 l3:2 core:1 pu:1" -x HWLOC_THISSYSTEM=1 -x COPR_EMULATE_NODE_SIZE=2)
# shellcheck disable=SC2016 # expanded by the shell of each rank
bind_reversed=(sh -c 'exec taskset -c $((1 - OMPI_COMM_WORLD_RANK % 2)) "$@"' sh)
rm -f "$log"
"${MPIRUN[@]}" -n 8 "${PRELOAD[@]}" "${synthetic[@]}" -x COPR_INTERPOSE_LOG="$log" \
    "${bind_reversed[@]}" "$cart_test" mpi 2x4 --order "$order_l3" --slots 1,0,3,2,5,4,7,6
expect_log "$log" "nodes: hwloc: this machine restricted to the PUs the ranks are bound to (emulated nodes of 2 ranks)"
expect_log "$log" "inside nodes: hwloc: ranks bound to PUs; two ranks of a node share a package"
"${MPIRUN[@]}" -n 8 "${synthetic[@]}" "${bind_reversed[@]}" \
    "$cart_test" capi 2x4 --order "$order_l3" --slots 1,0,3,2,5,4,7,6
echo "== two ranks of a node on one core: flat nodes (logged), the order of the flat machine"
rm -f "$log"
mpirun --allow-run-as-root --oversubscribe --bind-to core:overload-allowed -n 8 "${PRELOAD[@]}" \
    -x COPR_EMULATE_NODE_SIZE=4 -x COPR_INTERPOSE_LOG="$log" "$cart_test" mpi 2x4 --order "$order_2x4"
expect_log "$log" "are bound to the same PU"
echo "== MPI_Dist_graph_create_adjacent(reorder = 1) under the interposer on 8 ranks, 2 emulated nodes of 4"
# by hand: vertex v sends weight 3 to v + 4 and 1 to v + 1 (mod 8), 1 MiB per unit,
# 32 MiB in all. Packed, every weight-3 edge and 3 -> 4, 7 -> 0 leave a node: 26 MiB
# (27.263 MB). Any split cutting a pair costs >= 6; two whole pairs per node, e.g.
# {0,4,1,5} and {2,6,3,7}, cut 4 ring edges at best: 4 MiB (4.194 MB, 12.5 %).
graph_log="$cart_dir/interpose-graph.log"
rm -f "$graph_log"
"${MPIRUN[@]}" -n 8 "${PRELOAD[@]}" -x COPR_EMULATE_NODE_SIZE=4 -x COPR_INTERPOSE_LOG="$graph_log" \
    "$dist_graph_test" pairs 4 4 --reordered
expect_log "$graph_log" "predicted hop-bytes 27.263 MB -> 4.194 MB, off-node traffic 81.2 % -> 12.5 % (1 MiB per unit of edge weight)"
expect_log "$graph_log" "reordered: new rank of ranks 0..8:"
echo "== the same graph without the interposer, and with reorder = 0 under it (identity)"
"${MPIRUN[@]}" -n 8 -x COPR_EMULATE_NODE_SIZE=4 "$dist_graph_test" pairs 4 26 --identity
"${MPIRUN[@]}" -n 8 "${PRELOAD[@]}" -x COPR_EMULATE_NODE_SIZE=4 "$dist_graph_test" pairs 4 26 --noreorder --identity
echo "== an unweighted ring under the interposer: nothing to gain (identity)"
# by hand: every split of a ring of 8 into two nodes of 4 cuts >= 2 edges, as packed does
rm -f "$graph_log"
"${MPIRUN[@]}" -n 8 "${PRELOAD[@]}" -x COPR_EMULATE_NODE_SIZE=4 -x COPR_INTERPOSE_LOG="$graph_log" \
    "$dist_graph_test" ring 4 2 --identity
expect_log "$graph_log" "predicted hop-bytes 2.097 MB -> 2.097 MB"
expect_log "$graph_log" "kept the MPI library's order: copr's mapping is no better"
echo "== a chain whose two ends pass MPI_WEIGHTS_EMPTY under the interposer (reordered)"
# by hand: the path 0 3 6 1 4 7 2 5 of weight-2 edges; packed cuts 5 of its 7 edges
# (10 MiB), the path's two halves on the two nodes 1 (2 MiB)
rm -f "$graph_log"
"${MPIRUN[@]}" -n 8 "${PRELOAD[@]}" -x COPR_EMULATE_NODE_SIZE=4 -x COPR_INTERPOSE_LOG="$graph_log" \
    "$dist_graph_test" chain 4 2 --reordered
expect_log "$graph_log" "predicted hop-bytes 10.486 MB -> 2.097 MB"
# the traffic recorder (COPR_RECORD): C and Fortran programs with a known traffic of
# every kind of send compare their own counts with the file, element by element
echo "== the traffic recorder (COPR_RECORD) under the interposer: C, Fortran (use mpi, use mpi_f08)"
record_test="$capi_dir/record-test"
mpicc -std=c11 -O1 -Wall -Wextra -Werror -pthread interpose/tests/c/record_test.c -o "$record_test"
record_test_f="$capi_dir/record-test-f"
record_test_f08="$capi_dir/record-test-f08"
mkdir -p "$capi_dir/record-modules" "$capi_dir/record-modules-f08"
mpifort -cpp -std=f2008 -O1 -Wall -Werror -fimplicit-none -J "$capi_dir/record-modules" \
    interpose/tests/fortran/record_test.F90 -o "$record_test_f"
mpifort -cpp -DF08 -std=f2008 -O1 -Wall -Werror -fimplicit-none -J "$capi_dir/record-modules-f08" \
    interpose/tests/fortran/record_test.F90 -o "$record_test_f08"
record_dir="$capi_prefix/record"
mkdir -p "$record_dir"
for n in 1 2 4 7; do
    for prog in "$record_test" "$record_test_f" "$record_test_f08"; do
        traffic="$record_dir/traffic-$n.txt"
        rm -f "$traffic"
        "${MPIRUN[@]}" -n "$n" "${PRELOAD[@]}" -x COPR_RECORD="$traffic" "$prog"
    done
done
echo "== three threads sending at once (MPI_THREAD_MULTIPLE), each on its own communicator"
for n in 2 7; do
    traffic="$record_dir/traffic-threads-$n.txt"
    rm -f "$traffic"
    "${MPIRUN[@]}" -n "$n" "${PRELOAD[@]}" -x COPR_RECORD="$traffic" "$record_test" --threads
done
echo "== the same with the all-to-alls in the graph (COPR_RECORD_ALLTOALL=1)"
for n in 2 7; do
    for prog in "$record_test" "$record_test_f" "$record_test_f08"; do
        traffic="$record_dir/traffic-a2a-$n.txt"
        rm -f "$traffic"
        "${MPIRUN[@]}" -n "$n" "${PRELOAD[@]}" -x COPR_RECORD="$traffic" -x COPR_RECORD_ALLTOALL=1 "$prog"
        grep -q "^# MPI_Alltoall and MPI_Alltoallv are in the graph" "$traffic"
    done
done
echo "== the grid algorithms' SimGrid program (benches/simgrid/gridalg.c) sends exactly the messages copr map --pattern prices"
gridalg="$capi_dir/gridalg"
mpicc -std=c11 -O1 -Wall -Wextra -Werror benches/simgrid/gridalg.c -o "$gridalg"
algorithm_edges=$(executable algorithm_edges example)
for case in "cannon 4 4 binomial" "fox 4 4 binomial" "snyder 4 4 binomial" "summa 2 8 binomial" \
    "fox 4 4 ring" "snyder 5 5 ring" "summa 3 5 ring"; do
    read -r alg rows cols tree <<<"$case"
    traffic="$record_dir/gridalg-$alg-$rows-$cols-$tree.txt"
    rm -f "$traffic"
    "${MPIRUN[@]}" -n $((rows * cols)) "${PRELOAD[@]}" -x COPR_RECORD="$traffic" \
        "$gridalg" "$alg" "$rows" "$cols" 1000 "$tree" >/dev/null
    # recorded pairs (no comments, no self-sends) against the pattern's
    awk '!/^#/ && $1 != "tasks" && $1 != $2 {print $1, $2, $3}' "$traffic" | sort >"$traffic.got"
    "$algorithm_edges" "$alg" "$rows" "$cols" 1000 "$tree" | sort >"$traffic.want"
    diff "$traffic.got" "$traffic.want" || { echo "gridalg $case: traffic differs from the pattern" >&2; exit 1; }
done
echo "== the recorder off (no COPR_RECORD): nothing written"
quiet_dir="$record_dir/off"
mkdir -p "$quiet_dir"
"${MPIRUN[@]}" -n 2 "${PRELOAD[@]}" --wdir "$quiet_dir" "$record_test" --no-check
[[ -z "$(ls -A "$quiet_dir")" ]] || { echo "the recorder wrote without COPR_RECORD:" >&2; ls -A "$quiet_dir" >&2; exit 1; }
echo "== a COPR_RECORD that cannot be created: one message, the program runs to its end"
"${MPIRUN[@]}" -n 4 "${PRELOAD[@]}" -x COPR_RECORD=/nonexistent/dir/traffic.txt \
    "$record_test" --no-check 2>"$record_dir/bad.txt"
messages=$(grep -c "copr-interpose: COPR_RECORD=/nonexistent/dir/traffic.txt: cannot create the file" \
    "$record_dir/bad.txt" || true)
[[ $messages == 1 ]] || { echo "expected one message, found $messages:" >&2; cat "$record_dir/bad.txt" >&2; exit 1; }
[[ ! -e /nonexistent/dir/traffic.txt ]]
echo "== small programs recorded (silent, collectives only, MPI_Sendrecv, persistent, MPI_Comm_split, sends to self) on 1, 2 and 7 ranks, then copr map"
record_small="$capi_dir/record-small"
mpicc -std=c11 -O1 -Wall -Wextra -Werror interpose/tests/c/record_small.c -o "$record_small"
# the lines `src dst bytes` each mode's program sends on p ranks, sorted
small_expected() {
    awk -v mode="$1" -v p="$2" 'BEGIN {
        for (r = 0; r < p; r++) {
            if (mode == "sendrecv") b[r " " (r + 1) % p] += 100
            if (mode == "persist" && r + 1 < p) b[r " " r + 1] += 24 * (r + 1)
            if (mode == "split" && r + 2 < p) b[r " " r + 2] += 10
            if (mode == "self") { b[r " " r] += 16; b[r " " (r + 1) % p] += 5 }
        }
        for (k in b) print k, b[k]
    }' | sort -n -k1,1 -k2,2
}
for n in 1 2 7; do
    for mode in silent coll sendrecv persist split self; do
        traffic="$record_dir/small-$mode-$n.txt"
        rm -f "$traffic"
        "${MPIRUN[@]}" -n "$n" "${PRELOAD[@]}" -x COPR_RECORD="$traffic" "$record_small" "$mode"
        diff <(awk '$1 ~ /^[0-9]+$/ { print $1, $2, $3 }' "$traffic" | sort -n -k1,1 -k2,2) \
            <(small_expected "$mode" "$n") || {
            echo "the recording of '$mode' on $n ranks differs from what the program sent" >&2
            exit 1
        }
        grep -q "^tasks $n\$" "$traffic" || { echo "no 'tasks $n' in $traffic" >&2; exit 1; }
        # mapped onto nodes of 2 (one slot empty for odd n): every byte between two
        # different ranks is in the mapping's total
        want=$(small_expected "$mode" "$n" | awk '$1 != $2 { s += $3 } END { print s + 0 }')
        got=$("$copr_bin" map --graph "$traffic" --flat $(((n + 1) / 2)) --ranks-per-node 2 \
            --budget 1 --strategies packed,optimised --json | grep -o '"total_bytes":[0-9]*' | sort -u)
        [[ $got == "\"total_bytes\":$want" ]] || {
            echo "copr map of '$mode' on $n ranks: $got, expected total_bytes $want" >&2
            exit 1
        }
        "$copr_bin" map --graph "$traffic" --machine-from-recording --budget 1 >/dev/null
    done
done
echo "== a run that aborts before MPI_Finalize: its recording says so, and copr map refuses it in one line"
traffic="$record_dir/small-abort.txt"
"${MPIRUN[@]}" -n 4 "${PRELOAD[@]}" -x COPR_RECORD="$traffic" "$record_small" abort >/dev/null 2>&1 && {
    echo "the aborting program exited 0" >&2
    exit 1
}
set +e
"$copr_bin" map --graph "$traffic" --flat 2 --ranks-per-node 2 2>"$record_dir/abort-map.txt"
status=$?
set -e
[[ $status == 2 && $(wc -l <"$record_dir/abort-map.txt") == 1 ]] &&
    grep -q "an incomplete recording" "$record_dir/abort-map.txt" || {
    echo "copr map of an aborted run's recording: exit $status," >&2
    cat "$record_dir/abort-map.txt" >&2
    exit 1
}
echo "== end to end: a scrambled-rank halo exchange recorded, then copr map: the metrics of the pattern written by hand"
# task t of a periodic R x C grid runs on world rank (5 t + 3) mod p and sends 1000
# bytes to each of its four neighbours; the same messages written here with awk
halo_pattern() {
    awk -v R="$1" -v C="$2" 'BEGIN {
        p = R * C; print "tasks", p
        for (t = 0; t < p; t++) {
            r = int(t / C); c = t % C
            n[0] = ((r + R - 1) % R) * C + c; n[1] = ((r + 1) % R) * C + c
            n[2] = r * C + (c + C - 1) % C; n[3] = r * C + (c + 1) % C
            for (d = 0; d < 4; d++) print (5 * t + 3) % p, (5 * n[d] + 3) % p, 1000
        }
    }'
}
# the rows of `copr map`'s table without the timing column
map_rows() {
    "$copr_bin" map --graph "$1" --flat "$2" --ranks-per-node "$3" --budget 2 \
        --strategies packed,round-robin,folded,bisection,optimised |
        awk '$1 ~ /^(packed|round-robin|folded|bisection|optimised)$/ { NF--; print }'
}
for case in "2 4 2 4" "3 3 3 3"; do
    read -r rows cols nodes per <<<"$case"
    traffic="$record_dir/halo-${rows}x$cols.txt"
    halo_pattern "$rows" "$cols" >"$record_dir/halo-by-hand.txt"
    # Open MPI's own monitoring component counts the same run's messages too
    monitoring="$record_dir/monitoring-${rows}x$cols"
    rm -f "$monitoring".*.prof
    "${MPIRUN[@]}" -n $((rows * cols)) "${PRELOAD[@]}" -x COPR_RECORD="$traffic" \
        --mca pml_monitoring_enable 2 --mca pml_monitoring_enable_output 3 \
        --mca pml_monitoring_filename "$monitoring" \
        "$record_test" --halo "$rows" "$cols" 1000
    # its lines `E src dst N bytes M msgs sent` (the program's own messages) against ours
    diff <(cat "$monitoring".*.prof | awk '$1 == "E" { print $2, $3, $4, $6 }' | sort -n -k1,1 -k2,2) \
        <(awk '$1 ~ /^[0-9]+$/ { print $1, $2, $3, $5 }' "$traffic" | sort -n -k1,1 -k2,2) || {
        echo "the recording of the halo ${rows}x$cols differs from Open MPI's pml monitoring" >&2
        exit 1
    }
    recorded=$(map_rows "$traffic" "$nodes" "$per")
    by_hand=$(map_rows "$record_dir/halo-by-hand.txt" "$nodes" "$per")
    [[ -n $recorded && $recorded == "$by_hand" ]] || {
        echo "copr map of the recorded halo ${rows}x$cols differs from the pattern by hand:" >&2
        diff <(echo "$recorded") <(echo "$by_hand") >&2 || true
        exit 1
    }
done
echo "== COPR_GRAPH: MPI_Dist_graph_create_adjacent of an unweighted ring reordered by a recorded traffic"
# by hand: the file's traffic is the pairs graph above (3 MiB v -> v + 4, 1 MiB v -> v + 1),
# whose best splits keep pairs together and cut 4 ring edges, where the ring alone is
# left in the library's order (cut 2)
for v in 0 1 2 3 4 5 6 7; do
    echo "$v $(((v + 4) % 8)) 3145728 # 3 messages"
    echo "$v $(((v + 1) % 8)) 1048576 # 1 messages"
done >"$record_dir/pairs.txt"
rm -f "$graph_log"
"${MPIRUN[@]}" -n 8 "${PRELOAD[@]}" -x COPR_EMULATE_NODE_SIZE=4 -x COPR_GRAPH="$record_dir/pairs.txt" \
    -x COPR_INTERPOSE_LOG="$graph_log" "$dist_graph_test" ring 4 4 --reordered
expect_log "$graph_log" "traffic from COPR_GRAPH=$record_dir/pairs.txt"
expect_log "$graph_log" "predicted hop-bytes 27.263 MB -> 4.194 MB, off-node traffic 81.2 % -> 12.5 % (recorded bytes)"
echo "== COPR_GRAPH naming a recording of another run (16 ranks, this run 8): refused in the log, the library's order kept"
awk 'BEGIN { print "tasks 16"; for (r = 0; r < 16; r++) print r, (r + 8) % 16, 1000 }' \
    >"$record_dir/sixteen.txt"
rm -f "$graph_log"
"${MPIRUN[@]}" -n 8 "${PRELOAD[@]}" -x COPR_EMULATE_NODE_SIZE=4 -x COPR_GRAPH="$record_dir/sixteen.txt" \
    -x COPR_INTERPOSE_LOG="$graph_log" "$dist_graph_test" ring 4 2 --identity
expect_log "$graph_log" "COPR_GRAPH=$record_dir/sixteen.txt: a recording of 16 ranks, but this run has 8"
echo "== the recorder under a reordering interposer: the interposer's own calls are not recorded"
# dist_graph_test's MPI_Neighbor_alltoall sends 3 ints to each out-neighbour of the
# vertex a process holds after the reorder (vertex v: v + 4 and v + 1 mod 8); the
# program's own collectives are 2 MPI_Allreduce and 1 MPI_Allgather
traffic="$record_dir/dist-graph.txt"
order=$("${MPIRUN[@]}" -n 8 "${PRELOAD[@]}" -x COPR_EMULATE_NODE_SIZE=4 -x COPR_RECORD="$traffic" \
    "$dist_graph_test" pairs 4 4 --reordered | sed -n 's/^pairs: order: \([0-9 ]*\) (reordered).*/\1/p')
[[ -n $order ]] || { echo "dist_graph_test printed no order" >&2; exit 1; }
diff <(awk -v order="$order" 'BEGIN {
        n = split(order, v, " ")
        for (r = 1; r <= n; r++) holder[v[r]] = r - 1
        for (r = 1; r <= n; r++) {
            print r - 1, holder[(v[r] + 4) % 8], 12
            print r - 1, holder[(v[r] + 1) % 8], 12
        }
    }' | sort -n -k1,1 -k2,2) <(awk '$1 ~ /^[0-9]+$/ { print $1, $2, $3 }' "$traffic") || {
    echo "the recorded neighbourhood traffic differs from the reordered graph's" >&2
    exit 1
}
[[ $(grep -c "^# collective MPI_" "$traffic") == 2 ]]
grep -q "^# collective MPI_Allreduce on a communicator of all 8 ranks: 2 calls" "$traffic"
grep -q "^# collective MPI_Allgather on a communicator of all 8 ranks: 1 calls" "$traffic"
echo "== COPR_GRAPH naming no file: one log line, the library's order"
rm -f "$graph_log"
"${MPIRUN[@]}" -n 8 "${PRELOAD[@]}" -x COPR_EMULATE_NODE_SIZE=4 -x COPR_GRAPH=/nonexistent/traffic.txt \
    -x COPR_INTERPOSE_LOG="$graph_log" "$dist_graph_test" ring 4 2 --identity
expect_log "$graph_log" "COPR_GRAPH: /nonexistent/traffic.txt: No such file or directory"
echo "== copr_cart_create's errors (messages in a file) on 4 ranks"
"${MPIRUN[@]}" -n 4 "$cart_test" errors 2>"$cart_dir/errors.txt"
expect_log "$cart_dir/errors.txt" "copr_cart_create: comm is MPI_COMM_NULL"
echo "== copr_cart_create / copr_comm_reorder from Fortran on 8 ranks, 2 emulated nodes of 4"
tr ',' '\n' <"$order_2x4" | awk -F- 'NF == 2 { for (i = $1; i <= $2; i++) print i; next } NF == 1 { print $1 }' \
    >"$cart_dir/order-2x4.lines"
"${MPIRUN[@]}" -n 8 -x COPR_EMULATE_NODE_SIZE=4 "$cart_test_f" 2 4 "$cart_dir/order-2x4.lines" \
    2>"$cart_dir/errors-f.txt"

echo "== the README's C example (copr_pdgemr2d, installed library) on 4 ranks"
"${MPIRUN[@]}" -n 4 "$capi_example"

echo "== the guide's C example (copr_cart_create, installed library) on 8 ranks, 2 emulated nodes of 4"
# the order copr map writes for that machine, every neighbour's message checked
"${MPIRUN[@]}" -n 8 -x COPR_EMULATE_NODE_SIZE=4 "$capi_cart_example" 2 4 >"$cart_dir/example.txt"
expected="2x4 grid on 8 processes, 0 wrong neighbours; new rank of ranks 0..8: $(paste -sd' ' "$cart_dir/order-2x4.lines")"
[[ "$(cat "$cart_dir/example.txt")" == "$expected" ]] || {
    echo "capi/examples/cart.c printed '$(cat "$cart_dir/example.txt")', expected '$expected'" >&2
    exit 1
}

echo "== example reshuffle on 4 ranks"
"${MPIRUN[@]}" -n 4 "$reshuffle" 1000

echo "== bench driver smoke run (copr only, N = 600, 2 reps) on 4 and 2 ranks"
"${MPIRUN[@]}" -n 4 "$driver" --sizes 600 --reps 2
"${MPIRUN[@]}" -n 2 "$driver" --sizes 600 --reps 2

# the program starts mpirun itself (copr calibrate --validate on 4 ranks as two emulated
# nodes, then on 8 ranks as four under a 6 s budget) and checks the files it wrote; ~20 s
echo "== copr calibrate --validate on 4 ranks (2 emulated nodes) and 8 (4), and its bad inputs"
"$calibrate_mpi" --mpirun

# the interposer built against MPICH and run under mpiexec.mpich, its recordings
# compared with Open MPI's (this build of the library and of copr); about 4 CPU
# minutes to build the MPICH copy, "skipped" without MPICH
echo "== the interposer under MPICH (scripts/mpich-tests.sh)"
COPR_OPENMPI_INTERPOSE="$interpose_lib" COPR_BIN="$copr_bin" bash scripts/mpich-tests.sh

echo "== all MPI tests passed"
