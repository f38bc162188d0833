#!/usr/bin/env bash
# The traffic recorder's cost per message: interpose/benches/message_rate.c run in
# ROUNDS rounds, each round running the three configurations back to back — without
# the interposer ("plain"), with it and the recorder off ("off": no COPR_RECORD), with
# the recorder on ("on") — on 1 rank (sends to itself; MPI_Send to MPI_PROC_NULL) and on
# 2 ranks. Prints each configuration's median over the rounds and the medians of the
# per-round differences (on - plain, off - plain), in nanoseconds per message: of wall
# time, and of the sending thread's CPU time (the time other programs on a shared
# machine hold the core left out).
#
#   bash interpose/benches/message_rate.sh LIBCOPR_INTERPOSE.so [ROUNDS [MESSAGES]]
set -euo pipefail
lib=${1:?usage: message_rate.sh LIBCOPR_INTERPOSE.so [ROUNDS [MESSAGES]]}
rounds=${2:-7}
messages=${3:-200000}
cd "$(dirname "$0")/../.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -std=c11 -O2 -Wall -Wextra -Werror interpose/benches/message_rate.c -o "$work/message_rate"
M=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
for ((r = 1; r <= rounds; r++)); do
    for n in 1 2; do
        for cfg in plain off on; do
            case $cfg in
                plain) env=() ;;
                off) env=(-x LD_PRELOAD="$lib") ;;
                on) env=(-x LD_PRELOAD="$lib" -x COPR_RECORD="$work/traffic.txt") ;;
            esac
            "${M[@]}" -n "$n" "${env[@]}" "$work/message_rate" "$messages" 8 5 |
                awk -v r="$r" -v n="$n" -v cfg="$cfg" '{ print r, n, cfg, $1, $4, $8 }'
        done
    done
done >"$work/all.txt"
echo "uptime: $(uptime)"
# median of the values on standard input
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for clock in wall cpu; do
    col=$([[ $clock == wall ]] && echo 5 || echo 6)
    echo "ns per message, $clock time"
    printf '%-6s %-10s %10s %10s %10s %14s %14s\n' ranks call plain off on "on - plain" "off - plain"
    for n in 1 2; do
        for call in MPI_Isend MPI_Send; do
            row=()
            for cfg in plain off on; do
                row+=("$(awk -v n="$n" -v c="$call" -v g="$cfg" -v k="$col" '$2 == n && $4 == c && $3 == g { print $k }' "$work/all.txt" | median)")
            done
            diffs=()
            for cfg in on off; do
                diffs+=("$(awk -v n="$n" -v c="$call" -v g="$cfg" -v k="$col" '
                    $2 == n && $4 == c && $3 == "plain" { p[$1] = $k }
                    $2 == n && $4 == c && $3 == g { x[$1] = $k }
                    END { for (r in x) print x[r] - p[r] }' "$work/all.txt" | median)")
            done
            printf '%-6s %-10s %10.1f %10.1f %10.1f %14.1f %14.1f\n' "$n" "$call" "${row[@]}" "${diffs[@]}"
        done
    done
done
