/* The communication of the classic matrix multiplications on a 2-D process grid
 * (no computation): what `copr map --pattern ALGORITHM` prices, message for message.
 *
 *   gridalg ALGORITHM ROWS COLS BLOCK_BYTES [binomial|ring]
 *
 * ALGORITHM is cannon, fox, snyder or summa. Rank r holds block (r / COLS, r % COLS)
 * of A, B and C (row-major, the order of MPI_Cart_create); every message carries one
 * block of BLOCK_BYTES bytes. With q = ROWS = COLS (all but summa need a square grid):
 *
 *   cannon: preskew (row i of A i places left, column j of B j places up), then q-1
 *           steps of one shift of A left and of B up;
 *   fox:    q steps: row i broadcasts the A block of column (i+k) mod q; between
 *           steps, B rolls one place up (q-1 rolls);
 *   snyder: transpose of B; q steps: a reduction along row i onto column (i+k) mod q;
 *           between steps, B shifts one place up (q-1 shifts);
 *   summa:  for k = 0 .. max(ROWS, COLS)-1: column k broadcasts its A blocks along
 *           the rows (k < COLS), row k its B blocks along the columns (k < ROWS).
 *
 * Broadcasts and reductions are written with point-to-point messages over the tree
 * named by the last argument, so that the simulated messages are exactly the priced
 * ones: binomial (default; relative rank v > 0 exchanges with v minus its lowest set
 * bit, as MPICH, Open MPI's binomial and SimGrid's binomial_tree do: receive from the
 * parent, then send to the children, the farthest first) or ring (a chain from the
 * root, v with v-1, pipelined in segments of 64 KiB).
 *
 * After a barrier the whole multiplication's communication is timed with MPI_Wtime
 * (simulated time under SimGrid SMPI); rank 0 prints the maximum over ranks as
 *
 *   gridalg_time_s <seconds>
 *
 * Bad arguments: a message on stderr and exit status 2.
 */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

enum { TAG_A = 21, TAG_B = 22, TAG_TREE = 23 };
enum { SEGMENT = 65536 };

static const char *USAGE = "gridalg cannon|fox|snyder|summa ROWS COLS BLOCK_BYTES [binomial|ring]";

static void fail(int rank, const char *msg, const char *arg)
{
    fail_usage("gridalg", USAGE, rank, msg, arg);
}

/* Sends `bytes` from `sbuf` to `to` and receives as many into `rbuf` from `from` (both
 * skipped when they name this rank). */
static void exchange(char *sbuf, char *rbuf, int bytes, int to, int from, int me, int tag,
                     MPI_Comm comm)
{
    MPI_Request req[2];
    int n = 0;
    if (from != me)
        MPI_Irecv(rbuf, bytes, MPI_BYTE, from, tag, comm, &req[n++]);
    if (to != me)
        MPI_Isend(sbuf, bytes, MPI_BYTE, to, tag, comm, &req[n++]);
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
}

/* A broadcast (reduce = 0) or a reduction (reduce = 1) of one block over `comm` of `q`
 * ranks rooted at `root`, along the tree (ring = 0: binomial, 1: ring). */
static void tree(char *buf, char *tmp, int bytes, int root, int reduce, int ring, MPI_Comm comm)
{
    int me, q;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &q);
    if (q == 1)
        return;
    int v = (me - root + q) % q;
#define ABS(r) (((r) + root) % q)
    if (ring) {
        /* a chain 0 -> 1 -> ... -> q-1 (reduction: the other way), in segments */
        int prev = reduce ? v + 1 : v - 1, next = reduce ? v - 1 : v + 1;
        int has_prev = prev >= 0 && prev < q, has_next = next >= 0 && next < q;
        int nseg = (bytes + SEGMENT - 1) / SEGMENT;
        if (nseg == 0)
            nseg = 1;
        MPI_Request *req = malloc(sizeof(MPI_Request) * (size_t)nseg);
        int nreq = 0;
        for (int s = 0; s < nseg; s++) {
            int off = s * SEGMENT;
            int len = bytes - off < SEGMENT ? bytes - off : SEGMENT;
            if (len < 0)
                len = 0;
            if (has_prev)
                MPI_Recv(buf + off, len, MPI_BYTE, ABS(prev), TAG_TREE, comm, MPI_STATUS_IGNORE);
            if (has_next)
                MPI_Isend(buf + off, len, MPI_BYTE, ABS(next), TAG_TREE, comm, &req[nreq++]);
        }
        MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        free(req);
        return;
    }
    /* binomial: the lowest set bit of v names the parent's distance */
    int low = 1;
    while (low < q && !(v & low))
        low <<= 1;
    if (!reduce) {
        if (v > 0)
            MPI_Recv(buf, bytes, MPI_BYTE, ABS(v - low), TAG_TREE, comm, MPI_STATUS_IGNORE);
        MPI_Request req[32];
        int n = 0;
        for (int m = low >> 1; m > 0; m >>= 1)
            if (v + m < q)
                MPI_Isend(buf, bytes, MPI_BYTE, ABS(v + m), TAG_TREE, comm, &req[n++]);
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    } else {
        /* children first (nearest first), then up to the parent */
        for (int m = 1; m < low && m < q; m <<= 1)
            if (v + m < q)
                MPI_Recv(tmp, bytes, MPI_BYTE, ABS(v + m), TAG_TREE, comm, MPI_STATUS_IGNORE);
        if (v > 0)
            MPI_Send(buf, bytes, MPI_BYTE, ABS(v - low), TAG_TREE, comm);
    }
#undef ABS
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc != 5 && argc != 6)
        fail(rank, "expected 4 or 5 arguments", NULL);
    const char *alg = argv[1];
    int cannon = !strcmp(alg, "cannon"), fox = !strcmp(alg, "fox");
    int snyder = !strcmp(alg, "snyder"), summa = !strcmp(alg, "summa");
    if (!(cannon || fox || snyder || summa))
        fail(rank, "ALGORITHM must be cannon, fox, snyder or summa", alg);
    long rows, cols, block;
    if (!parse_long(argv[2], 1, INT_MAX, &rows))
        fail(rank, "ROWS must be an integer >= 1", argv[2]);
    if (!parse_long(argv[3], 1, INT_MAX, &cols))
        fail(rank, "COLS must be an integer >= 1", argv[3]);
    if (!parse_long(argv[4], 0, INT_MAX, &block))
        fail(rank, "BLOCK_BYTES must be an integer in 0..INT_MAX", argv[4]);
    int ring = 0;
    if (argc == 6) {
        if (!strcmp(argv[5], "ring"))
            ring = 1;
        else if (strcmp(argv[5], "binomial"))
            fail(rank, "the tree must be `binomial` or `ring`", argv[5]);
    }
    if (rows * cols != (long)size)
        fail(rank, "ROWS * COLS must equal the number of ranks", NULL);
    if (!summa && rows != cols)
        fail(rank, "cannon, fox and snyder need a square grid", NULL);

    const int R = (int)rows, C = (int)cols, b = (int)block;
    const int i = rank / C, j = rank % C;
    MPI_Comm row, col;
    MPI_Comm_split(MPI_COMM_WORLD, i, j, &row);
    MPI_Comm_split(MPI_COMM_WORLD, j, i, &col);

    /* four block buffers, shared under SMPI (contents are meaningless) */
    size_t bb = b > 0 ? (size_t)b : 1;
#ifdef SMPI_SHARED_MALLOC
    char *mem = SMPI_SHARED_MALLOC(4 * bb);
#else
    char *mem = malloc(4 * bb);
#endif
    if (!mem)
        fail(rank, "out of memory", NULL);
    memset(mem, 1, 4 * bb);
    char *a = mem, *bm = mem + bb, *r1 = mem + 2 * bb, *r2 = mem + 3 * bb;
#define AT(x, y) ((((x) % R + R) % R) * C + (((y) % C + C) % C))

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    const int q = R;
    if (cannon) {
        /* preskew: A to (i, j-i) from (i, j+i); B to (i-j, j) from (i+j, j) */
        MPI_Request req[4];
        int n = 0;
        if (i % q != 0) {
            MPI_Irecv(r1, b, MPI_BYTE, AT(i, j + i), TAG_A, MPI_COMM_WORLD, &req[n++]);
            MPI_Isend(a, b, MPI_BYTE, AT(i, j - i), TAG_A, MPI_COMM_WORLD, &req[n++]);
        }
        if (j % q != 0) {
            MPI_Irecv(r2, b, MPI_BYTE, AT(i + j, j), TAG_B, MPI_COMM_WORLD, &req[n++]);
            MPI_Isend(bm, b, MPI_BYTE, AT(i - j, j), TAG_B, MPI_COMM_WORLD, &req[n++]);
        }
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        for (int k = 1; k < q; k++) {
            n = 0;
            if (q > 1) {
                MPI_Irecv(r1, b, MPI_BYTE, AT(i, j + 1), TAG_A, MPI_COMM_WORLD, &req[n++]);
                MPI_Irecv(r2, b, MPI_BYTE, AT(i + 1, j), TAG_B, MPI_COMM_WORLD, &req[n++]);
                MPI_Isend(a, b, MPI_BYTE, AT(i, j - 1), TAG_A, MPI_COMM_WORLD, &req[n++]);
                MPI_Isend(bm, b, MPI_BYTE, AT(i - 1, j), TAG_B, MPI_COMM_WORLD, &req[n++]);
            }
            MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        }
    } else if (fox || snyder) {
        if (snyder)
            exchange(bm, r2, b, AT(j, i), AT(j, i), rank, TAG_B, MPI_COMM_WORLD);
        for (int k = 0; k < q; k++) {
            tree(fox ? r1 : a, r1, b, (i + k) % q, snyder, ring, row);
            if (k + 1 < q)
                exchange(bm, r2, b, AT(i - 1, j), AT(i + 1, j), rank, TAG_B, MPI_COMM_WORLD);
        }
    } else {
        int steps = R > C ? R : C;
        for (int k = 0; k < steps; k++) {
            if (k < C)
                tree(j == k ? a : r1, r1, b, k, 0, ring, row);
            if (k < R)
                tree(i == k ? bm : r2, r2, b, k, 0, ring, col);
        }
    }
    report_max_time("gridalg_time_s", t0, rank);
#undef AT

#ifdef SMPI_SHARED_MALLOC
    SMPI_SHARED_FREE(mem);
#else
    free(mem);
#endif
    MPI_Comm_free(&row);
    MPI_Comm_free(&col);
    MPI_Finalize();
    return 0;
}
