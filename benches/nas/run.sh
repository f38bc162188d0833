#!/usr/bin/env bash
# Real MPI programs, not written for copr, measured, mapped and replayed:
# the NAS Parallel Benchmarks' MPI kernels CG, MG, LU (Fortran, point-to-point),
# FT and IS (C and Fortran, all-to-all collectives), and optionally the miniFE
# mini-app (an implicit finite-element CG solve, SpMV halo exchange between boxes
# numbered by recursive coordinate bisection).
#
#   NPB_SOURCE=DIR [MINIFE_SOURCE=DIR] bash benches/nas/run.sh LIBCOPR_INTERPOSE.so COPR_BINARY [OUT_DIR]
#
# NPB_SOURCE   an NPB3.3-MPI source directory (the one holding config/, sys/, CG/, ...);
#              it is copied, never built in place. Without it the script says so and
#              exits 0 (CI has no NPB).
# MINIFE_SOURCE  optional: miniFE's reference version, the directory holding main.cpp
#              and Makefile (Mantevo miniFE `ref/src`, with `ref/utils` and `ref/fem`
#              beside it); run as `miniFE.x -nx 32 -ny 32 -nz 32`.
# NAS_RANKS    the rank counts (default "16 64"); NAS_KERNELS (default "cg mg lu ft is").
# OUT_DIR      where the recordings, maps and results.txt stay (default: a temporary
#              directory, removed at the end).
#
# Per program and rank count, one run under mpirun records its traffic with the
# interposer (COPR_RECORD, COPR_RECORD_ALLTOALL=1: the all-to-alls' pairwise volumes
# are in the graph) while Open MPI's monitoring component counts the same run
# (--mca pml_monitoring_enable 2); the two are compared pair by pair (messages
# between different ranks; Open MPI's `E` lines), and programs calling all-to-alls
# are run once more with only their point-to-point sends in the graph (Open MPI's `E`
# lines hold an all-to-all's messages or not depending on the algorithm it picks, so
# one of the two comparisons shows the difference). The recording is then mapped by
# `copr map` onto each machine below, and replayed in SimGrid SMPI
# (benches/simgrid/replay.c, one round: every recorded edge one message of its total
# bytes) with the recorded run's own order (packed: rank r on slot r) and with copr's
# mapping. Class S everywhere, except LU, BT and SP on 64 ranks: class W (S's 12^3 grid
# is too small for 64 ranks there). BT and SP (square rank counts) are not in the
# default kernels: NAS_KERNELS="bt sp" runs them.
#
# Machines (64 ranks): the 4x4x4 torus x 16 of data/machines (1024 slots: the 64
# ranks are the first tasks of a padded pattern), the same torus with one rank per
# node (64 slots), the k = 4 fat tree x 16 of data/machines (256 slots, padded) and
# the same fat tree with 4 ranks per host (64 slots). 16 ranks: the fat tree with one
# rank per host, and a 2x2x2 torus x 2. Other rank counts are recorded and compared only.
set -euo pipefail
usage="NPB_SOURCE=DIR [MINIFE_SOURCE=DIR] bash benches/nas/run.sh LIBCOPR_INTERPOSE.so COPR_BINARY [OUT_DIR]"
if [[ -z ${NPB_SOURCE:-} ]]; then
    echo "benches/nas/run.sh: NPB_SOURCE is not set (an NPB3.3-MPI source directory): skipped"
    exit 0
fi
[[ $# -ge 2 && $# -le 3 ]] || { echo "usage: $usage" >&2; exit 2; }
lib=$(realpath "$1")
copr=$(realpath "$2")
[[ -f $lib ]] || { echo "benches/nas/run.sh: no interposer library at $1" >&2; exit 2; }
[[ -x $copr ]] || { echo "benches/nas/run.sh: no copr binary at $2" >&2; exit 2; }
npb=$(realpath "$NPB_SOURCE")
[[ -d $npb/config && -d $npb/sys && -d $npb/CG ]] || {
    echo "benches/nas/run.sh: NPB_SOURCE=$NPB_SOURCE is not an NPB3.3-MPI source directory (no config/, sys/, CG/)" >&2
    exit 2
}
minife=""
if [[ -n ${MINIFE_SOURCE:-} ]]; then
    minife=$(realpath "$MINIFE_SOURCE")
    [[ -f $minife/main.cpp && -f $minife/Makefile ]] || {
        echo "benches/nas/run.sh: MINIFE_SOURCE=$MINIFE_SOURCE holds no miniFE main.cpp and Makefile" >&2
        exit 2
    }
fi
repo=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=benches/nas/common.sh
source "$repo/benches/nas/common.sh"
if [[ $# -eq 3 ]]; then
    out=$(mkdir -p "$3" && realpath "$3")
else
    out=$(mktemp -d)
    trap 'rm -rf "$out"' EXIT
fi
ranks_list=${NAS_RANKS:-16 64}
kernels=${NAS_KERNELS:-cg mg lu ft is}
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)

# the sources, copied; NPB's make.def for Open MPI's wrappers and gfortran
rm -rf "$out/npb" && cp -r "$npb" "$out/npb"
cat >"$out/npb/config/make.def" <<'EOF'
MPIF77 = mpif90
FLINK = $(MPIF77)
FMPI_LIB =
FMPI_INC =
FFLAGS = -O2 -std=legacy -fallow-argument-mismatch
FLINKFLAGS = -O2
MPICC = mpicc
CLINK = $(MPICC)
CMPI_LIB =
CMPI_INC =
CFLAGS = -O2
CLINKFLAGS = -O2
CC = gcc
BINDIR = ../bin
RAND = randdp
EOF
mkdir -p "$out/npb/bin"
if [[ -n $minife ]]; then
    rm -rf "$out/minife" && mkdir -p "$out/minife"
    cp -r "$minife/.." "$out/minife/ref"
    make -C "$out/minife/ref/$(basename "$minife")" >"$out/minife/build.log" 2>&1 || {
        echo "benches/nas/run.sh: miniFE did not build: see $out/minife/build.log" >&2
        exit 1
    }
    minife_bin="$out/minife/ref/$(basename "$minife")/miniFE.x"
fi
smpicc -O2 "$repo/benches/simgrid/replay.c" -o "$out/replay" 2>/dev/null

class_of() { # kernel ranks
    case $1-$2 in
        lu-64 | bt-64 | sp-64) echo W ;;
        *) echo S ;;
    esac
}


# recorded traffic against Open MPI's monitoring, pairs of different ranks: prints
# `pairs N, equal E; recorded B bytes M messages; monitoring B' bytes M' messages`,
# then, when some pairs differ, the range of their differences (recorded - monitoring),
# and the sends to self of both
compare() { # recording monitoring-prefix
    join -a1 -a2 -e 0 -o 0,1.2,1.3,2.2,2.3 \
        <(awk '$1 ~ /^[0-9]+$/ && $1 != $2 { print $1 "-" $2, $3, $5 }' "$1" | sort) \
        <(cat "$2".*.prof | awk '$1 == "E" && $2 != $3 { print $2 "-" $3, $4, $6 }' | sort) |
        awk '{
            n++; rb += $2; rm += $3; mb += $4; mm += $5
            if ($2 == $4 && $3 == $5) { eq++; next }
            db = $2 - $4; dm = $3 - $5
            if (!nd++ || db < lo) lo = db
            if (nd == 1 || db > hi) hi = db
            if (!(dm in ms)) { ms[dm] = 1; ml = ml (ml == "" ? "" : " or ") dm }
        } END {
            printf "pairs %d, equal %d; recorded %.0f bytes %.0f messages; pml_monitoring %.0f bytes %.0f messages\n", n, eq, rb, rm, mb, mm
            if (nd) printf "  %d pairs differ: recorded - pml_monitoring = %s bytes, %s messages\n", nd, (lo == hi ? lo : lo ".." hi), ml
        }'
    # sends to oneself, apart: an all-to-all's own block is recorded, Open MPI copies it
    printf "  sends to self: recorded %s; pml_monitoring %s\n" \
        "$(awk '$1 ~ /^[0-9]+$/ && $1 == $2 { r++; b += $3; m += $5 } END { printf "%.0f bytes %.0f messages on %d ranks", b, m, r }' "$1")" \
        "$(cat "$2".*.prof | awk '$1 == "E" && $2 == $3 { r++; b += $4; m += $6 } END { printf "%.0f bytes %.0f messages on %d ranks", b, m, r }')"
}

results="$out/results.txt"
: >"$results"
run_one() { # name ranks command...
    local name=$1 n=$2
    shift 2
    local dir="$out/$name-$n"
    rm -rf "$dir" && mkdir -p "$dir"
    local t0 t1
    t0=$(date +%s)
    (cd "$dir" && "${MPIRUN[@]}" -n "$n" -x LD_PRELOAD="$lib" -x COPR_RECORD="$dir/traffic.txt" \
        -x COPR_RECORD_ALLTOALL=1 --mca pml_monitoring_enable 2 --mca pml_monitoring_enable_output 3 \
        --mca pml_monitoring_filename "$dir/monitoring" "$@" >"$dir/run.out" 2>&1) || {
        echo "benches/nas/run.sh: $name on $n ranks failed: see $dir/run.out" >&2
        return 1
    }
    t1=$(date +%s)
    if ! grep -qi 'verification *= *successful\|verification successful\|result verification successful\|Final Resid Norm' "$dir/run.out"; then
        echo "benches/nas/run.sh: $name on $n ranks did not verify: see $dir/run.out" >&2
        return 1
    fi
    {
        echo "== $name, $n ranks ($((t1 - t0)) s under mpirun): $(grep '^# total' "$dir/traffic.txt")"
        echo "$(grep -c '^[0-9]' "$dir/traffic.txt") edges; $(grep -c '^# collective' "$dir/traffic.txt") collective lines"
        echo "against pml_monitoring: $(compare "$dir/traffic.txt" "$dir/monitoring")"
    } | tee -a "$results"
    if grep -q '^# collective MPI_Alltoall' "$dir/traffic.txt"; then
        # Open MPI's monitoring lists an all-to-all's messages with the program's own
        # or apart, depending on the algorithm it picks: the same program recorded
        # without the all-to-alls in the graph, against the same kind of run
        mkdir -p "$dir/p2p"
        (cd "$dir/p2p" && "${MPIRUN[@]}" -n "$n" -x LD_PRELOAD="$lib" -x COPR_RECORD="$dir/p2p/traffic.txt" \
            --mca pml_monitoring_enable 2 --mca pml_monitoring_enable_output 3 \
            --mca pml_monitoring_filename "$dir/p2p/monitoring" "$@" >"$dir/p2p/run.out" 2>&1) || {
            echo "benches/nas/run.sh: $name on $n ranks failed: see $dir/p2p/run.out" >&2
            return 1
        }
        echo "without the all-to-alls in the graph: $(compare "$dir/p2p/traffic.txt" "$dir/p2p/monitoring")" |
            tee -a "$results"
    fi
    grep -v '^tasks' "$dir/traffic.txt" >"$dir/traffic.edges"
    map_and_replay "$dir" "$n" "$name"
}

for n in $ranks_list; do
    for k in $kernels; do
        c=$(class_of "$k" "$n")
        (cd "$out/npb" && make "$k" NPROCS="$n" CLASS="$c" >"$out/npb/make-$k.$c.$n.log" 2>&1) || {
            echo "benches/nas/run.sh: NPB $k class $c for $n ranks did not build: see $out/npb/make-$k.$c.$n.log" >&2
            exit 1
        }
        run_one "$k.$c" "$n" "$out/npb/bin/$k.$c.$n"
    done
    if [[ -n $minife ]]; then
        run_one "miniFE-32" "$n" "$minife_bin" -nx 32 -ny 32 -nz 32
    fi
done
if [[ $# -eq 3 ]]; then echo "results: $results"; fi
