# Shared by run.sh and remap.sh: the simulated machines and the mapping and replay of
# one recording. Expects $repo, $copr, $out (holding the compiled replay program) and
# $results; NAS_MACHINES (optional) keeps the machines whose name contains it.
SMPIRUN_FLAGS=(--cfg=smpi/host-speed:1Gf --cfg=smpi/simulate-computation:no --cfg=smpi/lat-factor:0:1
    --cfg=smpi/bw-factor:0:1 --cfg=network/crosstraffic:0 --log=root.thres:warning)

machines_of() { # ranks: one machine per line, `name|copr map options`
    if [[ $1 -eq 64 ]]; then
        echo "4x4x4 torus x 16 (padded)|--machine $repo/data/machines/torus-4x4x4.toml"
        echo "4x4x4 torus x 1|--torus 4x4x4 --ranks-per-node 1"
        echo "fat tree k=4 x 16 (padded)|--machine $repo/data/machines/fat-tree-k4.toml"
        echo "fat tree k=4 x 4|--network $repo/data/topology/fat-tree-k4.net.toml --ranks-per-node 4"
    elif [[ $1 -eq 16 ]]; then
        echo "fat tree k=4 x 1|--network $repo/data/topology/fat-tree-k4.net.toml --ranks-per-node 1"
        echo "2x2x2 torus x 2|--torus 2x2x2 --ranks-per-node 2"
    fi
}

# `hop-bytes H MB, busiest link L MB` of the strategy's row of `copr map`'s first table
# in FILE, in MB whatever unit its header gives each column (B, kB, MB, GB, TB)
predicted_mb() { # strategy file
    awk -v s="$1" '
        function mb(u) { return u == "B" ? 1e-6 : u == "kB" ? 1e-3 : u == "GB" ? 1e3 : u == "TB" ? 1e6 : 1 }
        $1 == "strategy" && !seen { hb = mb($3); link = mb($9); seen = 1 }
        $1 == s { printf "hop-bytes %.3f MB, busiest link %.3f MB\n", $2 * hb, $6 * link; exit }' "$2"
}

map_and_replay() { # dir ranks name: dir holds traffic.txt and traffic.edges
    local dir=$1 n=$2 name=$3
    local machine label opts
    while IFS='|' read -r label opts; do
        machine=$(echo "$label" | tr -c 'a-zA-Z0-9\n' '_')
        # shellcheck disable=SC2086 # the machine's options
        "$copr" map --graph "$dir/traffic.txt" $opts --budget 5 --strategies packed,optimised \
            --smpi-platform "$dir/$machine.xml" --smpi-hostfile "$dir/$machine.optimised.hosts" \
            >"$dir/$machine.map.txt"
        # shellcheck disable=SC2086
        "$copr" map --graph "$dir/traffic.txt" $opts --strategies packed --export packed \
            --smpi-hostfile "$dir/$machine.packed.hosts" >/dev/null
        local line="$label:"
        local strategy
        for strategy in packed optimised; do
            local predicted simulated
            predicted=$(predicted_mb "$strategy" "$dir/$machine.map.txt")
            simulated=$(smpirun -platform "$dir/$machine.xml" -hostfile "$dir/$machine.$strategy.hosts" \
                -np "$n" "${SMPIRUN_FLAGS[@]}" "$out/replay" "$dir/traffic.edges" 1 2>/dev/null |
                awk '$1 == "replay_time_s" { printf "%.1f", $2 * 1e6 }')
            [[ -n $simulated ]] || { echo "benches/nas/run.sh: the replay of $name-$n on $label failed" >&2; return 1; }
            line="$line $strategy: $predicted, simulated $simulated µs;"
        done
        echo "$line" | tee -a "$results"
    done < <(machines_of "$n" | grep -F -- "${NAS_MACHINES:-}")
}
