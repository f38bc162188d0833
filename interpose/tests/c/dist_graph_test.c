/* Checks a distributed graph communicator made by MPI_Dist_graph_create_adjacent with
 * reorder = 1 (run with or without libcopr_interpose.so in LD_PRELOAD) on
 * MPI_COMM_WORLD:
 *
 *   dist_graph_test GRAPH NODE_SIZE CUT [--noreorder] (--reordered | --identity)
 *
 *   GRAPH      pairs: p even, h = p/2; vertex v sends weight 3 to (v + h) mod p and
 *              weight 1 to (v + 1) mod p (explicit weights);
 *              ring: vertex v sends to (v + 1) mod p, MPI_UNWEIGHTED;
 *              chain: p not a multiple of 3; the path 0, 3, 6, ... (mod p) of edges of
 *              weight 2, its ends giving MPI_WEIGHTS_EMPTY for their empty side
 *   NODE_SIZE  k: world ranks r and s share a node when r / k == s / k (as the
 *              interposer's COPR_EMULATE_NODE_SIZE)
 *   CUT        the expected total weight of the edges whose two vertices are held by
 *              processes on different nodes (computed by hand in the test script)
 *   --noreorder  call with reorder = 0
 *   --reordered  some process must hold a vertex other than its world rank;
 *   --identity   every process must hold the vertex of its world rank
 *
 * Vertex g is rank g of the new communicator. Every process checks: MPI_Topo_test,
 * MPI_Dist_graph_neighbors_count / MPI_Dist_graph_neighbors against the definition of
 * vertex g (in the order given, with weights), that each neighbour rank translates
 * (MPI_Group_translate_ranks) to the world rank holding it, and an MPI_Neighbor_alltoall
 * in which each process sends (its vertex, its world rank, the edge's weight) to each
 * out-neighbour and checks what arrives from each in-neighbour. Rank 0 prints the
 * order ("order: " then the vertex of world ranks 0, 1, ...). Exit status 0 when every
 * check passed on every process. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "dist_graph_test"
#include "check.h"

/* the adjacency of vertex v: at most 2 in- and 2 out-edges */
typedef struct {
    int indeg, outdeg, weighted;
    int src[2], srcw[2], dst[2], dstw[2];
} vertex;

static vertex vertex_of(int pairs, int chain, int v, int p) {
    vertex x;
    memset(&x, 0, sizeof x);
    if (chain) {
        x.weighted = 1;
        if (v != (3 * (p - 1)) % p) x.outdeg = 1, x.dst[0] = (v + 3) % p, x.dstw[0] = 2;
        if (v != 0) x.indeg = 1, x.src[0] = (v + p - 3) % p, x.srcw[0] = 2;
    } else if (pairs) {
        int h = p / 2;
        x.indeg = x.outdeg = 2;
        x.weighted = 1;
        x.dst[0] = (v + h) % p, x.dstw[0] = 3;
        x.dst[1] = (v + 1) % p, x.dstw[1] = 1;
        x.src[0] = (v + h) % p, x.srcw[0] = 3;
        x.src[1] = (v + p - 1) % p, x.srcw[1] = 1;
    } else {
        x.indeg = x.outdeg = 1;
        x.dst[0] = (v + 1) % p, x.dstw[0] = 1;
        x.src[0] = (v + p - 1) % p, x.srcw[0] = 1;
    }
    return x;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int p, me;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (argc < 5) usage("usage: dist_graph_test GRAPH NODE_SIZE CUT [--noreorder] (--reordered | --identity)");
    int pairs = strcmp(argv[1], "pairs") == 0, chain = strcmp(argv[1], "chain") == 0;
    if (!pairs && !chain && strcmp(argv[1], "ring") != 0) usage("GRAPH is pairs, ring or chain");
    if (pairs && p % 2) usage("pairs needs an even number of processes");
    if (chain && p % 3 == 0) usage("chain needs a number of processes not a multiple of 3");
    int k = atoi(argv[2]), cut = atoi(argv[3]), reorder = 1, expect_reordered = -1;
    if (k < 1) usage("NODE_SIZE must be >= 1");
    for (int i = 4; i < argc; i++) {
        if (strcmp(argv[i], "--noreorder") == 0) {
            reorder = 0;
        } else if (strcmp(argv[i], "--reordered") == 0) {
            expect_reordered = 1;
        } else if (strcmp(argv[i], "--identity") == 0) {
            expect_reordered = 0;
        } else {
            usage("unknown option");
        }
    }
    if (expect_reordered < 0) usage("--reordered or --identity is required");

    /* this process describes the vertex of its world rank */
    vertex mine = vertex_of(pairs, chain, me, p);
    MPI_Comm g = MPI_COMM_NULL;
    const int *in_w = !mine.weighted ? MPI_UNWEIGHTED : mine.indeg ? mine.srcw : MPI_WEIGHTS_EMPTY;
    const int *out_w = !mine.weighted ? MPI_UNWEIGHTED : mine.outdeg ? mine.dstw : MPI_WEIGHTS_EMPTY;
    int rc = MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, mine.indeg, mine.src, in_w,
                                            mine.outdeg, mine.dst, out_w, MPI_INFO_NULL,
                                            reorder, &g);
    CHECK(rc == MPI_SUCCESS && g != MPI_COMM_NULL, "creating the graph: rc %d", rc);
    if (g == MPI_COMM_NULL) MPI_Abort(MPI_COMM_WORLD, 1);

    int topo, v, size;
    MPI_Topo_test(g, &topo);
    CHECK(topo == MPI_DIST_GRAPH, "MPI_Topo_test %d", topo);
    MPI_Comm_rank(g, &v);
    MPI_Comm_size(g, &size);
    CHECK(size == p, "size %d", size);

    /* the vertex of every world rank, and the world rank holding every vertex */
    int *order = malloc(sizeof(int) * (size_t)p), *holder = malloc(sizeof(int) * (size_t)p);
    MPI_Allgather(&v, 1, MPI_INT, order, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < p; r++) holder[order[r]] = r;

    /* the neighbours this process reads are those of vertex v */
    vertex want = vertex_of(pairs, chain, v, p);
    int indeg, outdeg, weighted;
    MPI_Dist_graph_neighbors_count(g, &indeg, &outdeg, &weighted);
    CHECK(indeg == want.indeg && outdeg == want.outdeg && (weighted != 0) == want.weighted,
          "neighbours_count %d %d %d", indeg, outdeg, weighted);
    int src[2] = {-1, -1}, srcw[2] = {-1, -1}, dst[2] = {-1, -1}, dstw[2] = {-1, -1};
    if (indeg <= 2 && outdeg <= 2) {
        MPI_Dist_graph_neighbors(g, indeg, src, srcw, outdeg, dst, dstw);
        for (int i = 0; i < want.indeg; i++) {
            CHECK(src[i] == want.src[i], "vertex %d source %d: %d, expected %d", v, i, src[i],
                  want.src[i]);
            if (want.weighted)
                CHECK(srcw[i] == want.srcw[i], "vertex %d source weight %d: %d", v, i, srcw[i]);
        }
        for (int i = 0; i < want.outdeg; i++) {
            CHECK(dst[i] == want.dst[i], "vertex %d destination %d: %d, expected %d", v, i,
                  dst[i], want.dst[i]);
            if (want.weighted)
                CHECK(dstw[i] == want.dstw[i], "vertex %d destination weight %d: %d", v, i,
                      dstw[i]);
        }
    }
    /* neighbour ranks of the new communicator name the world ranks holding them */
    MPI_Group wg, gg;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Comm_group(g, &gg);
    int in_world[2], out_world[2];
    MPI_Group_translate_ranks(gg, want.indeg, src, wg, in_world);
    MPI_Group_translate_ranks(gg, want.outdeg, dst, wg, out_world);
    for (int i = 0; i < want.indeg; i++)
        CHECK(in_world[i] == holder[want.src[i]], "source %d is world rank %d, expected %d", i,
              in_world[i], holder[want.src[i]]);
    for (int i = 0; i < want.outdeg; i++)
        CHECK(out_world[i] == holder[want.dst[i]], "destination %d is world rank %d, expected %d",
              i, out_world[i], holder[want.dst[i]]);
    MPI_Group_free(&wg);
    MPI_Group_free(&gg);

    /* a neighbour exchange: (vertex, world rank, weight) along every edge */
    int sendbuf[6], recvbuf[6];
    for (int i = 0; i < want.outdeg; i++) {
        sendbuf[3 * i] = v;
        sendbuf[3 * i + 1] = me;
        sendbuf[3 * i + 2] = want.dstw[i];
    }
    for (int i = 0; i < 6; i++) recvbuf[i] = -1;
    MPI_Neighbor_alltoall(sendbuf, 3, MPI_INT, recvbuf, 3, MPI_INT, g);
    for (int i = 0; i < want.indeg; i++) {
        CHECK(recvbuf[3 * i] == want.src[i] && recvbuf[3 * i + 1] == holder[want.src[i]] &&
                  recvbuf[3 * i + 2] == want.srcw[i],
              "exchange from in-neighbour %d: (%d, %d, %d), expected (%d, %d, %d)", i,
              recvbuf[3 * i], recvbuf[3 * i + 1], recvbuf[3 * i + 2], want.src[i],
              holder[want.src[i]], want.srcw[i]);
    }

    /* where the traffic goes: weight of this vertex's out-edges that leave the node */
    int local_cut = 0, total_cut = 0;
    for (int i = 0; i < want.outdeg; i++)
        if (me / k != holder[want.dst[i]] / k) local_cut += want.dstw[i];
    MPI_Allreduce(&local_cut, &total_cut, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(total_cut == cut, "off-node weight %d, expected %d", total_cut, cut);

    int moved = 0;
    for (int r = 0; r < p; r++) moved += order[r] != r;
    if (expect_reordered)
        CHECK(moved > 0, "the order is the identity");
    else
        CHECK(v == me, "vertex %d, expected the identity %d", v, me);

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) {
        printf("%s: order:", argv[1]);
        for (int r = 0; r < p; r++) printf(" %d", order[r]);
        printf(" (%s), off-node weight %d; %s\n", moved ? "reordered" : "identity", total_cut,
               all ? "FAILED" : "ok");
    }
    free(order);
    free(holder);
    MPI_Comm_free(&g);
    MPI_Finalize();
    return all ? 1 : 0;
}
