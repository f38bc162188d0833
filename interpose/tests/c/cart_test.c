/* Checks a Cartesian communicator made with reorder = 1, by MPI_Cart_create (run with
 * or without libcopr_interpose.so in LD_PRELOAD) or by copr-capi's copr_cart_create /
 * copr_comm_reorder, on MPI_COMM_WORLD:
 *
 *   cart_test MODE DIMS [--periods P] [--order FILE | --identity]
 *             [--placement FILE | --slots S]
 *
 *   MODE     mpi (MPI_Cart_create), mpi-noreorder (the same with reorder = 0), capi
 *            (copr_cart_create), reorder (copr_comm_reorder), errors (copr_cart_create's
 *            error returns; no other argument)
 *   DIMS     the grid, e.g. 2x4; its size must be the number of processes
 *   P        1 or 0 per dimension, comma separated (default: all periodic)
 *   FILE     --order: the expected order, an MPICH_RANK_ORDER file as `copr map
 *            --mpich-rank-order` writes it (grid rank of the process on each slot, in slot
 *            order, ranges allowed); --identity: the grid rank of every process is its
 *            rank in MPI_COMM_WORLD
 *   --placement: the placement file given to the interposer (rank node per line): the
 *            slot of rank r is node·k + (ranks below r on its node), nodes numbered in
 *            order of first appearance in rank order; without it slot = rank
 *   --slots: the slot of every rank, comma separated in rank order (for slots that
 *            follow the ranks' CPU bindings)
 *
 * Every process checks: the topology (MPI_Topo_test, MPI_Cartdim_get, MPI_Cart_get), its
 * coordinates against MPI_Cart_rank / MPI_Cart_coords and row-major order, MPI_Cart_shift
 * neighbours in every dimension, its grid rank against the expected order, and three
 * Cannon shifts per periodic dimension (the data that arrives is the right neighbour's).
 * Rank 0 prints the order found ("order: " then the grid rank of world ranks 0, 1, …).
 * Exit status 0 when every check passed on every process. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "cart_test"
#include "check.h"

#ifdef CART_TEST_MPI_ONLY
/* Built without copr-capi (against an MPI library it was not built for, such as
 * MPICH): only the modes mpi and mpi-noreorder, for the interposer. */
static int copr_cart_create(MPI_Comm comm, int ndims, const int *dims, const int *periods,
                            const char *machine, MPI_Comm *out) {
    (void)comm, (void)ndims, (void)dims, (void)periods, (void)machine, (void)out;
    usage("built with CART_TEST_MPI_ONLY: the modes mpi and mpi-noreorder only");
    return 1;
}
#define copr_comm_reorder copr_cart_create
#else
#include "copr.h"
#endif

/* the whole text of a small file */
static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) usage("cannot open an input file");
    char *buf = calloc(1 << 20, 1);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* grid rank by slot from an MPICH_RANK_ORDER text: numbers and ranges a-b */
static void read_order(const char *path, int p, int *order) {
    char *text = slurp(path);
    int k = 0;
    char *s = text;
    while (*s) {
        while (*s && (*s == ',' || *s == ' ' || *s == '\n' || *s == '\t')) s++;
        if (!*s) break;
        char *end;
        long a = strtol(s, &end, 10);
        if (end == s) usage("bad order file");
        long b = a;
        s = end;
        if (*s == '-') {
            b = strtol(s + 1, &end, 10);
            s = end;
        }
        for (long v = a; v <= b; v++) {
            if (k >= p) usage("order file lists too many ranks");
            order[k++] = (int)v;
        }
    }
    if (k != p) usage("order file lists too few ranks");
    free(text);
}

/* slot of every rank from a placement file (`rank node [pu]`, # comments) */
static void read_slots(const char *path, int p, int *slot) {
    char *text = slurp(path);
    char(*node)[64] = calloc((size_t)p, 64);
    char *line = strtok(text, "\n");
    while (line) {
        int r;
        char name[64];
        if (line[0] != '#' && sscanf(line, "%d %63s", &r, name) == 2) {
            if (r < 0 || r >= p) usage("placement file: rank out of range");
            strcpy(node[r], name);
        }
        line = strtok(NULL, "\n");
    }
    /* nodes in order of first appearance in rank order; ranks per node k */
    int *index = malloc(sizeof(int) * (size_t)p), nodes = 0;
    for (int r = 0; r < p; r++) {
        index[r] = -1;
        for (int q = 0; q < r; q++)
            if (strcmp(node[q], node[r]) == 0) {
                index[r] = index[q];
                break;
            }
        if (index[r] < 0) index[r] = nodes++;
    }
    int k = p / nodes;
    for (int r = 0; r < p; r++) {
        int below = 0;
        for (int q = 0; q < r; q++) below += index[q] == index[r];
        slot[r] = index[r] * k + below;
    }
    free(index);
    free(node);
    free(text);
}

/* copr_cart_create's error returns: nonzero, MPI_COMM_NULL, on every process */
static void error_cases(int p) {
    MPI_Comm c = MPI_COMM_WORLD;
    int dims[4] = {p + 1, 1, 1, p}, periods[4] = {1, 1, 1, 1};
    int rc = copr_cart_create(MPI_COMM_WORLD, 1, dims, periods, NULL, &c);
    CHECK(rc != 0 && c == MPI_COMM_NULL, "a grid of p + 1 positions: rc %d", rc);
    c = MPI_COMM_WORLD;
    rc = copr_cart_create(MPI_COMM_WORLD, 0, dims, periods, NULL, &c);
    CHECK(rc != 0 && c == MPI_COMM_NULL, "ndims 0: rc %d", rc);
    c = MPI_COMM_WORLD;
    rc = copr_cart_create(MPI_COMM_WORLD, 4, dims + 1, periods, NULL, &c);
    CHECK(rc != 0 && c == MPI_COMM_NULL, "4 dimensions: rc %d", rc);
    c = MPI_COMM_WORLD;
    rc = copr_comm_reorder(MPI_COMM_WORLD, 1, dims + 3, periods, "/nonexistent/machine.toml", &c);
    CHECK(rc != 0 && c == MPI_COMM_NULL, "a missing machine file: rc %d", rc);
    c = MPI_COMM_WORLD;
    rc = copr_cart_create(MPI_COMM_NULL, 1, dims + 3, periods, NULL, &c);
    CHECK(rc != 0 && c == MPI_COMM_NULL, "MPI_COMM_NULL: rc %d", rc);
    /* a grid that differs on one process */
    int me;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (p > 1) {
        int mine[2] = {1, p};
        if (me == p - 1) {
            mine[0] = p;
            mine[1] = 1;
        }
        c = MPI_COMM_WORLD;
        rc = copr_cart_create(MPI_COMM_WORLD, 2, mine, periods, NULL, &c);
        CHECK(rc != 0 && c == MPI_COMM_NULL, "different grids: rc %d", rc);
    }
    /* after the errors, a good call still works */
    rc = copr_cart_create(MPI_COMM_WORLD, 1, dims + 3, periods, NULL, &c);
    CHECK(rc == 0 && c != MPI_COMM_NULL, "a good call after the errors: rc %d", rc);
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int p, me;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (argc < 2) usage("usage: cart_test MODE DIMS [options]");
    const char *mode = argv[1];
    if (strcmp(mode, "errors") == 0) {
        error_cases(p);
        int all = 0;
        MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (me == 0) printf("errors: %s\n", all ? "FAILED" : "ok");
        MPI_Finalize();
        return all ? 1 : 0;
    }
    if (argc < 3) usage("usage: cart_test MODE DIMS [options]");
    int ndims = 0, dims[3], periods[3] = {1, 1, 1};
    for (char *s = argv[2]; *s;) {
        if (ndims == 3) usage("at most 3 dimensions");
        dims[ndims++] = (int)strtol(s, &s, 10);
        if (*s == 'x') s++;
    }
    const char *order_file = NULL, *placement = NULL, *slots = NULL;
    int identity = 0;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--periods") == 0 && i + 1 < argc) {
            char *s = argv[++i];
            for (int d = 0; d < ndims && *s; d++) {
                periods[d] = (int)strtol(s, &s, 10);
                if (*s == ',') s++;
            }
        } else if (strcmp(argv[i], "--order") == 0 && i + 1 < argc) {
            order_file = argv[++i];
        } else if (strcmp(argv[i], "--placement") == 0 && i + 1 < argc) {
            placement = argv[++i];
        } else if (strcmp(argv[i], "--slots") == 0 && i + 1 < argc) {
            slots = argv[++i];
        } else if (strcmp(argv[i], "--identity") == 0) {
            identity = 1;
        } else {
            usage("unknown option");
        }
    }
    int size = 1;
    for (int d = 0; d < ndims; d++) size *= dims[d];
    if (size != p) usage("the grid's size is not the number of processes");

    MPI_Comm cart = MPI_COMM_NULL;
    int rc;
    if (strcmp(mode, "mpi") == 0) {
        rc = MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 1, &cart);
    } else if (strcmp(mode, "mpi-noreorder") == 0) {
        rc = MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 0, &cart);
    } else if (strcmp(mode, "capi") == 0) {
        rc = copr_cart_create(MPI_COMM_WORLD, ndims, dims, periods, NULL, &cart);
    } else if (strcmp(mode, "reorder") == 0) {
        MPI_Comm plain = MPI_COMM_NULL;
        rc = copr_comm_reorder(MPI_COMM_WORLD, ndims, dims, periods, NULL, &plain);
        if (rc == 0) {
            int topo;
            MPI_Topo_test(plain, &topo);
            CHECK(topo == MPI_UNDEFINED, "copr_comm_reorder made a topology %d", topo);
            /* the grid on it in its own order */
            rc = MPI_Cart_create(plain, ndims, dims, periods, 0, &cart);
            MPI_Comm_free(&plain);
        }
    } else {
        usage("MODE is mpi, mpi-noreorder, capi, reorder or errors");
        rc = 1;
    }
    CHECK(rc == MPI_SUCCESS && cart != MPI_COMM_NULL, "creating the grid: rc %d", rc);
    if (cart == MPI_COMM_NULL) MPI_Abort(MPI_COMM_WORLD, 1);

    /* the topology */
    int topo, nd, cdims[3], cper[3], coords[3], crank, csize;
    MPI_Topo_test(cart, &topo);
    CHECK(topo == MPI_CART, "MPI_Topo_test %d", topo);
    MPI_Cartdim_get(cart, &nd);
    CHECK(nd == ndims, "MPI_Cartdim_get %d", nd);
    MPI_Cart_get(cart, ndims, cdims, cper, coords);
    MPI_Comm_rank(cart, &crank);
    MPI_Comm_size(cart, &csize);
    CHECK(csize == p, "size %d", csize);
    for (int d = 0; d < ndims; d++) {
        CHECK(cdims[d] == dims[d] && (cper[d] != 0) == (periods[d] != 0), "dims/periods %d", d);
    }
    int back, rowmajor = 0, c2[3];
    MPI_Cart_rank(cart, coords, &back);
    CHECK(back == crank, "MPI_Cart_rank(coords) = %d, rank %d", back, crank);
    MPI_Cart_coords(cart, crank, ndims, c2);
    for (int d = 0; d < ndims; d++) {
        CHECK(c2[d] == coords[d], "MPI_Cart_coords dim %d", d);
        rowmajor = rowmajor * dims[d] + coords[d];
    }
    CHECK(rowmajor == crank, "coordinates are not row-major: %d vs rank %d", rowmajor, crank);

    /* neighbours */
    for (int d = 0; d < ndims; d++) {
        for (int disp = -1; disp <= 1; disp += 2) {
            int src, dst;
            MPI_Cart_shift(cart, d, disp, &src, &dst);
            int n[3];
            for (int sign = -1; sign <= 1; sign += 2) {
                memcpy(n, coords, sizeof n);
                n[d] += sign * disp;
                int expect;
                if (n[d] < 0 || n[d] >= dims[d]) {
                    if (!periods[d]) {
                        expect = MPI_PROC_NULL;
                    } else {
                        n[d] = (n[d] + dims[d]) % dims[d];
                        MPI_Cart_rank(cart, n, &expect);
                    }
                } else {
                    MPI_Cart_rank(cart, n, &expect);
                }
                int got = sign > 0 ? dst : src;
                CHECK(got == expect, "MPI_Cart_shift(%d, %d): %d, expected %d", d, disp, got,
                      expect);
            }
        }
    }

    /* the order: grid rank of every world rank */
    int *order = malloc(sizeof(int) * (size_t)p);
    MPI_Allgather(&crank, 1, MPI_INT, order, 1, MPI_INT, MPI_COMM_WORLD);
    if (identity) {
        CHECK(crank == me, "grid rank %d, expected the identity %d", crank, me);
    } else if (order_file) {
        int *by_slot = malloc(sizeof(int) * (size_t)p), *slot = malloc(sizeof(int) * (size_t)p);
        read_order(order_file, p, by_slot);
        if (placement) {
            read_slots(placement, p, slot);
        } else if (slots) {
            char *s = (char *)slots;
            for (int r = 0; r < p; r++) {
                char *end;
                slot[r] = (int)strtol(s, &end, 10);
                if (end == s || slot[r] < 0 || slot[r] >= p) usage("bad --slots list");
                s = *end == ',' ? end + 1 : end;
            }
        } else {
            for (int r = 0; r < p; r++) slot[r] = r;
        }
        CHECK(crank == by_slot[slot[me]], "grid rank %d, expected %d (slot %d)", crank,
              by_slot[slot[me]], slot[me]);
        free(by_slot);
        free(slot);
    }

    /* Cannon shifts: three steps to the lower neighbour along each periodic dimension;
     * the message carries the sender's grid rank and world rank */
    for (int d = 0; d < ndims; d++) {
        if (!periods[d]) continue;
        int src, dst;
        MPI_Cart_shift(cart, d, -1, &src, &dst);
        int msg[2] = {crank, me};
        for (int step = 1; step <= 3; step++) {
            MPI_Sendrecv_replace(msg, 2, MPI_INT, dst, 7, src, 7, cart, MPI_STATUS_IGNORE);
            int n[3], from;
            memcpy(n, coords, sizeof n);
            n[d] = (coords[d] + step) % dims[d];
            MPI_Cart_rank(cart, n, &from);
            CHECK(msg[0] == from, "Cannon step %d dim %d: data of %d, expected %d", step, d,
                  msg[0], from);
            CHECK(order[msg[1]] == msg[0], "Cannon step %d dim %d: world rank %d sent for %d",
                  step, d, msg[1], msg[0]);
        }
    }

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) {
        int moved = 0;
        printf("%s %s: order:", mode, argv[2]);
        for (int r = 0; r < p; r++) {
            printf(" %d", order[r]);
            moved += order[r] != r;
        }
        printf(" (%s); %s\n", moved ? "reordered" : "identity", all ? "FAILED" : "ok");
    }
    free(order);
    MPI_Comm_free(&cart);
    MPI_Finalize();
    return all ? 1 : 0;
}
