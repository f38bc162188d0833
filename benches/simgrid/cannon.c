/* The synthetic Cannon benchmark of the CP2K process-mapping paper: the
 * communication of Cannon's matrix multiplication on a periodic 2-D process
 * grid, without the computation.
 *
 *   cannon ROWS COLS BYTES_ROW BYTES_COL ITERATIONS [MODE]
 *
 * Rank r sits at grid position (r / COLS, r % COLS) (row-major, the order of
 * MPI_Cart_create). "Row" neighbours are left/right (same grid row), "column"
 * neighbours up/down (same grid column); row messages carry BYTES_ROW bytes,
 * column messages BYTES_COL bytes. Each iteration every rank posts its
 * receives and sends and waits for all of them (MPI_Waitall):
 *
 *   MODE shift (default): Irecv from left and down, Isend to right and up
 *                         (Cannon's two shifts);
 *   MODE four:            Irecv from and Isend to all four neighbours
 *                         ("four-neighbour traffic").
 *
 * After a barrier the ITERATIONS rounds are timed with MPI_Wtime (simulated
 * time under SimGrid SMPI); rank 0 prints the maximum over ranks as
 *
 *   cannon_time_s <seconds>
 *
 * Bad arguments: a message on stderr and exit status 2. ROWS * COLS must equal
 * the number of ranks.
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Message tags: the direction the data travels. */
enum { TAG_RIGHT = 11, TAG_LEFT = 12, TAG_UP = 13, TAG_DOWN = 14 };

#include "args.h"

static void fail(int rank, const char *msg, const char *arg)
{
    fail_usage("cannon", "cannon ROWS COLS BYTES_ROW BYTES_COL ITERATIONS [shift|four]", rank, msg, arg);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    if (argc != 6 && argc != 7)
        fail(rank, "expected 5 or 6 arguments", NULL);
    long rows, cols, brow, bcol, iters;
    if (!parse_long(argv[1], 1, INT_MAX, &rows))
        fail(rank, "ROWS must be an integer >= 1", argv[1]);
    if (!parse_long(argv[2], 1, INT_MAX, &cols))
        fail(rank, "COLS must be an integer >= 1", argv[2]);
    if (!parse_long(argv[3], 0, INT_MAX, &brow))
        fail(rank, "BYTES_ROW must be an integer in 0..INT_MAX", argv[3]);
    if (!parse_long(argv[4], 0, INT_MAX, &bcol))
        fail(rank, "BYTES_COL must be an integer in 0..INT_MAX", argv[4]);
    if (!parse_long(argv[5], 0, 100000000, &iters))
        fail(rank, "ITERATIONS must be an integer in 0..1e8", argv[5]);
    int four = 0;
    if (argc == 7) {
        if (strcmp(argv[6], "four") == 0)
            four = 1;
        else if (strcmp(argv[6], "shift") != 0)
            fail(rank, "MODE must be `shift` or `four`", argv[6]);
    }
    if (rows * cols != (long)size) {
        if (rank == 0)
            fprintf(stderr, "cannon: ROWS * COLS = %ld * %ld = %ld, but there are %d ranks\n", rows,
                    cols, rows * cols, size);
        fail(rank, "grid size does not match the number of ranks", NULL);
    }

    const int R = (int)rows, C = (int)cols;
    const int i = rank / C, j = rank % C;
    const int left = i * C + (j + C - 1) % C;
    const int right = i * C + (j + 1) % C;
    const int up = ((i + R - 1) % R) * C + j;
    const int down = ((i + 1) % R) * C + j;

    /* One buffer per receive direction plus one send buffer per size; the same
     * size on every rank (shared under SMPI: contents are meaningless). */
    size_t bmax = (size_t)(brow > bcol ? brow : bcol);
    if (bmax == 0)
        bmax = 1;
#ifdef SMPI_SHARED_MALLOC
    char *mem = SMPI_SHARED_MALLOC(5 * bmax);
#else
    char *mem = malloc(5 * bmax);
#endif
    if (!mem)
        fail(rank, "out of memory", NULL);
    memset(mem, 1, 5 * bmax);
    char *rbuf[4] = {mem, mem + bmax, mem + 2 * bmax, mem + 3 * bmax};
    char *sbuf = mem + 4 * bmax;
    const int br = (int)brow, bc = (int)bcol;

    MPI_Request req[8];
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long it = 0; it < iters; it++) {
        int n = 0;
        /* Data travelling right and up (Cannon's shifts, as specified). */
        MPI_Irecv(rbuf[0], br, MPI_BYTE, left, TAG_RIGHT, MPI_COMM_WORLD, &req[n++]);
        MPI_Irecv(rbuf[1], bc, MPI_BYTE, down, TAG_UP, MPI_COMM_WORLD, &req[n++]);
        if (four) {
            MPI_Irecv(rbuf[2], br, MPI_BYTE, right, TAG_LEFT, MPI_COMM_WORLD, &req[n++]);
            MPI_Irecv(rbuf[3], bc, MPI_BYTE, up, TAG_DOWN, MPI_COMM_WORLD, &req[n++]);
        }
        MPI_Isend(sbuf, br, MPI_BYTE, right, TAG_RIGHT, MPI_COMM_WORLD, &req[n++]);
        MPI_Isend(sbuf, bc, MPI_BYTE, up, TAG_UP, MPI_COMM_WORLD, &req[n++]);
        if (four) {
            MPI_Isend(sbuf, br, MPI_BYTE, left, TAG_LEFT, MPI_COMM_WORLD, &req[n++]);
            MPI_Isend(sbuf, bc, MPI_BYTE, down, TAG_DOWN, MPI_COMM_WORLD, &req[n++]);
        }
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    }
    report_max_time("cannon_time_s", t0, rank);

#ifdef SMPI_SHARED_MALLOC
    SMPI_SHARED_FREE(mem);
#else
    free(mem);
#endif
    MPI_Finalize();
    return 0;
}
