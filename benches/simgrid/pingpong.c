/* Ping-pong between rank 0 and a list of partner ranks, to check host
 * numbering, latencies and routing of a simulated (SimGrid SMPI) platform.
 *
 *   pingpong [-b BYTES] [-n REPS] [RANK ...]
 *
 * Rank 0 exchanges a 1-byte message REPS times (default 10, after one
 * untimed warm-up exchange) with each listed
 * rank in turn (default: every other rank, ascending) and prints one line per
 * partner:
 *
 *   pingpong <rank> <half round trip of 1 byte, seconds> [<BYTES> <half round trip of BYTES, seconds>]
 *
 * With -b BYTES, a second ping-pong of BYTES bytes follows the 1-byte one and
 * its time is appended. Under SMPI the times are simulated time (MPI_Wtime).
 * Run with --cfg=smpi/simulate-computation:no for exact platform times.
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

static void usage_exit(int rank, const char *msg, const char *arg)
{
    fail_usage("pingpong", "pingpong [-b BYTES] [-n REPS] [RANK ...]", rank, msg, arg);
}

static double exchange(int rank, int partner, char *buf, int bytes, int reps)
{
    double t0 = 0.0;
    /* Round -1 is a warm-up (the first message of a run pays start-up costs). */
    for (int r = -1; r < reps; r++) {
        if (r == 0)
            t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, bytes, MPI_BYTE, partner, 7, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, partner, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / (2.0 * reps);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    long big = 0, reps = 10;
    int first = 1;
    while (first < argc && argv[first][0] == '-') {
        if (strcmp(argv[first], "-b") == 0 && first + 1 < argc) {
            if (!parse_long(argv[first + 1], 1, INT_MAX, &big))
                usage_exit(rank, "-b needs a byte count in 1..INT_MAX", argv[first + 1]);
            first += 2;
        } else if (strcmp(argv[first], "-n") == 0 && first + 1 < argc) {
            if (!parse_long(argv[first + 1], 1, 1000000, &reps))
                usage_exit(rank, "-n needs a repetition count in 1..1000000", argv[first + 1]);
            first += 2;
        } else {
            usage_exit(rank, "unknown option", argv[first]);
        }
    }
    if (size < 2)
        usage_exit(rank, "needs at least 2 ranks", NULL);

    int npart = argc > first ? argc - first : size - 1;
    int *partners = malloc(sizeof(int) * (size_t)npart);
    if (!partners)
        usage_exit(rank, "out of memory", NULL);
    for (int i = 0; i < npart; i++) {
        if (argc > first) {
            long v;
            if (!parse_long(argv[first + i], 1, size - 1, &v))
                usage_exit(rank, "partner ranks must be integers in 1..size-1", argv[first + i]);
            partners[i] = (int)v;
        } else {
            partners[i] = i + 1;
        }
    }

    size_t cap = big > 1 ? (size_t)big : 1;
#ifdef SMPI_SHARED_MALLOC
    char *buf = SMPI_SHARED_MALLOC(cap);
#else
    char *buf = malloc(cap);
#endif
    if (!buf)
        usage_exit(rank, "out of memory", NULL);
    memset(buf, 0, cap);

    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < npart; i++) {
        int p = partners[i];
        if (rank != 0 && rank != p)
            continue;
        int other = rank == 0 ? p : 0;
        double t1 = exchange(rank, other, buf, 1, (int)reps);
        double tb = big > 0 ? exchange(rank, other, buf, (int)big, (int)reps) : 0.0;
        if (rank == 0) {
            if (big > 0)
                printf("pingpong %d %.9e %ld %.9e\n", p, t1, big, tb);
            else
                printf("pingpong %d %.9e\n", p, t1);
            fflush(stdout);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

#ifdef SMPI_SHARED_MALLOC
    SMPI_SHARED_FREE(buf);
#else
    free(buf);
#endif
    free(partners);
    MPI_Finalize();
    return 0;
}
