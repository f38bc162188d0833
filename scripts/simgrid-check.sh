#!/usr/bin/env bash
# SimGrid SMPI checks of copr's process mappings. Run from anywhere; fails on the first
# error. Skipped (exit 0, with a notice) when SimGrid's smpicc is not installed
# (Debian: apt-get install libsimgrid-dev).
#
#   bash scripts/simgrid-check.sh            # checks (about a minute with the build)
#   bash scripts/simgrid-check.sh --cannon   # also: Cannon p = 1024 per strategy
#
#  1. builds benches/simgrid/{cannon,replay,pingpong}.c with smpicc (-Wall -Wextra
#     -Werror) into $CARGO_TARGET_DIR/simgrid (default target/simgrid);
#  2. cargo test --release --test simgrid: ping-pong latencies on a 4x4x4 torus (both
#     platform forms), on the k = 4 fat tree and the dragonfly agree with copr's hop
#     counts and path latencies; per-direction bandwidths (X, Z 30 % faster than Y);
#     the torus tie routing of SimGrid's TORUS cluster versus copr's; a Cannon run with
#     p = 64 on a 4x4x4 torus x 1 core; the k = 4 fat tree's ECMP platform (bundled
#     equal-cost links) and single-path platform each simulate a pod-to-pod permutation
#     in their own model's time (busiest link + latency, within 3 %), and the ECMP
#     platform's routes load every link as copr's ECMP loads (k = 4 and 8);
#  3. with --cannon: `copr map` writes the platform and SMPI hostfile of each strategy
#     for a 32x32 grid on a 4x4x4 torus x 16 cores, and the four-neighbour Cannon
#     benchmark (1 MiB, 3 iterations) is simulated for each; copr's table (its
#     "maxlink µs" is per iteration) is printed next to the simulated time per
#     iteration.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v smpicc >/dev/null 2>&1 || ! command -v smpirun >/dev/null 2>&1; then
    echo "simgrid-check: smpicc/smpirun not found (apt-get install libsimgrid-dev); skipped"
    exit 0
fi

target=${CARGO_TARGET_DIR:-target}
out="$target/simgrid"
mkdir -p "$out"
echo "== smpicc benches/simgrid/*.c -> $out"
for p in cannon replay pingpong; do
    smpicc -O2 -Wall -Wextra -Werror "benches/simgrid/$p.c" -o "$out/$p"
done

echo "== cargo test --release --test simgrid"
cargo test --release --test simgrid

if [[ "${1:-}" == "--cannon" ]]; then
    cargo build --release --bin copr
    copr="$target/release/copr"
    flags=(--cfg=smpi/host-speed:1Gf --cfg=smpi/simulate-computation:no
           --cfg=smpi/lat-factor:0:1 --cfg=smpi/bw-factor:0:1
           --cfg=network/crosstraffic:0 --log=root.thres:warning)
    run="$out/cannon-1024"
    mkdir -p "$run"
    "$copr" map --grid 32x32 --bytes 1048576 --torus 4x4x4 --ranks-per-node 16 \
        --strategies packed,round-robin,tiles,hilbert,cp2k --budget 5
    for s in packed round-robin tiles hilbert cp2k; do
        "$copr" map --grid 32x32 --bytes 1048576 --torus 4x4x4 --ranks-per-node 16 \
            --strategies "$s" --export "$s" \
            --smpi-platform "$run/$s.xml" --smpi-hostfile "$run/$s.hosts" >/dev/null
        start=$(date +%s.%N)
        t=$(smpirun -np 1024 -platform "$run/$s.xml" -hostfile "$run/$s.hosts" "${flags[@]}" \
            "$out/cannon" 32 32 1048576 1048576 3 four | sed -n 's/^cannon_time_s //p')
        end=$(date +%s.%N)
        [[ -n "$t" ]] || { echo "simgrid-check: no cannon time for $s" >&2; exit 1; }
        awk -v s="$s" -v t="$t" -v a="$start" -v b="$end" \
            'BEGIN { printf "%-12s simulated %.1f µs per iteration (wall %.1f s)\n", s, t / 3 * 1e6, b - a }'
    done
fi
echo "== simgrid-check passed"
