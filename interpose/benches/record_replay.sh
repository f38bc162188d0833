#!/usr/bin/env bash
# Measure, map, replay: a program's traffic recorded by the interposer (COPR_RECORD)
# under mpirun on this machine, mapped by `copr map` onto a simulated machine, and
# replayed in SimGrid SMPI (benches/simgrid/replay.c) with the recorded run's own order
# (packed) and with copr's mapping.
#
#   bash interpose/benches/record_replay.sh LIBCOPR_INTERPOSE.so COPR_BINARY
#
# The program is the recorder's test program in its halo mode: a periodic 8 x 8 grid of
# 64 ranks whose task t runs on rank (5 t + 3) mod 64, 1 MiB to each neighbour. The
# machines: a 2x2x2 torus of 8 nodes x 8 ranks, and the k = 4 fat tree (16 hosts) x 4
# ranks. Prints, per machine and mapping, copr's predicted hop-bytes and busiest link
# and the simulated time of 3 replayed rounds.
set -euo pipefail
lib=${1:?usage: record_replay.sh LIBCOPR_INTERPOSE.so COPR_BINARY}
copr=${2:?usage: record_replay.sh LIBCOPR_INTERPOSE.so COPR_BINARY}
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -std=c11 -O1 -pthread interpose/tests/c/record_test.c -o "$work/record-test"
smpicc -O2 benches/simgrid/replay.c -o "$work/replay" 2>/dev/null
mpirun --allow-run-as-root --oversubscribe --bind-to none -n 64 -x LD_PRELOAD="$lib" \
    -x COPR_RECORD="$work/traffic.txt" "$work/record-test" --halo 8 8 1048576
echo "recorded: $(grep -c '^[0-9]' "$work/traffic.txt") edges, $(grep '^# total' "$work/traffic.txt")"
# the replay program reads `src dst bytes` lines: the same file without its task count
grep -v '^tasks' "$work/traffic.txt" >"$work/traffic.edges"
# `predicted_mb STRATEGY FILE`: the row's hop-bytes and busiest link in MB
# shellcheck source=benches/nas/common.sh
source benches/nas/common.sh
for machine in "--torus 2x2x2 --ranks-per-node 8" "--network data/topology/fat-tree-k4.net.toml --ranks-per-node 4"; do
    # shellcheck disable=SC2086 # the machine's options
    "$copr" map --graph "$work/traffic.txt" $machine --budget 5 --strategies packed,optimised \
        --smpi-platform "$work/platform.xml" --smpi-hostfile "$work/optimised.hosts" >"$work/map.txt"
    # shellcheck disable=SC2086
    "$copr" map --graph "$work/traffic.txt" $machine --strategies packed --export packed \
        --smpi-hostfile "$work/packed.hosts" >/dev/null
    echo "== $machine"
    sed -n '2p' "$work/map.txt"
    for strategy in packed optimised; do
        # the strategy's row of the first table only (on a torus the per-direction
        # table's rows start with the strategy too)
        predicted=$(predicted_mb "$strategy" "$work/map.txt")
        simulated=$(smpirun -platform "$work/platform.xml" -hostfile "$work/$strategy.hosts" -np 64 \
            --cfg=smpi/host-speed:1Gf "$work/replay" "$work/traffic.edges" 3 2>/dev/null |
            awk '$1 == "replay_time_s" { printf "%.3f ms", $2 * 1e3 }')
        echo "$strategy: predicted $predicted; simulated 3 rounds: $simulated"
    done
done
