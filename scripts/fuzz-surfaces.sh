#!/bin/sh
# The long run of the surfaces fuzz (cli/tests/fuzz_surfaces.rs): MUTANTS mutants of
# the sample files in data/ (default 3000) and ABSURD generated inputs (default 600),
# each run of copr under a 4 GiB address-space cap and a 20 s time cap; then GRAPHS
# seeded graphs on tori, flat machines and nodes of different sizes (default 1500,
# cli/tests/new_user_graphs.rs), each exported mapping and rankfile checked against an
# independent router. Prints the counts; exits non-zero on the first failing run list.
# Usage:
#   scripts/fuzz-surfaces.sh [MUTANTS] [ABSURD] [GRAPHS]
set -eu
cd "$(dirname "$0")/.."
COPR_FUZZ_MUTANTS="${1:-3000}" COPR_FUZZ_ABSURD="${2:-600}" \
    cargo test --release -p copr-cli --test fuzz_surfaces -- --nocapture --test-threads 2
COPR_FUZZ_GRAPHS="${3:-1500}" \
    cargo test --release -p copr-cli --test new_user_graphs \
    exported_mappings_score_as_an_independent_router_says -- --nocapture
