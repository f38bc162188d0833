/* Message rate of small point-to-point messages, with or without libcopr_interpose.so
 * (and its traffic recorder, COPR_RECORD) in LD_PRELOAD (see benches/RESULTS.md):
 *
 *   message_rate [MESSAGES [BYTES [REPS]]]     defaults 200000 8 9
 *
 * Ranks pair up (2i sends to 2i + 1): the sender issues MESSAGES sends of BYTES bytes,
 * in windows of 64 MPI_Isend then MPI_Waitall, the receiver the matching MPI_Irecv; then
 * the same with blocking MPI_Send. On one rank, the rank sends to itself (each window's
 * receives posted first; MPI_Send then goes to MPI_PROC_NULL: the cost of the call
 * alone). Each repetition is timed between barriers, in wall time and in the CPU time of
 * the calling thread (which leaves out the time other programs on a shared machine hold
 * the core); rank 0 prints, per kind of send, the medians over REPS of both, in
 * nanoseconds per message. */
#define _POSIX_C_SOURCE 199309L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define WINDOW 64

static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    long messages = argc > 1 ? atol(argv[1]) : 200000;
    int bytes = argc > 2 ? atoi(argv[2]) : 8;
    int reps = argc > 3 ? atoi(argv[3]) : 9;
    if ((p > 1 && p % 2 != 0) || messages < WINDOW || bytes < 0 || reps < 1) {
        if (me == 0)
            fprintf(stderr, "usage: message_rate [MESSAGES >= %d [BYTES [REPS]]] on an even "
                            "number of ranks or on one\n", WINDOW);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *buf = calloc((size_t)WINDOW * (bytes ? bytes : 1), 1);
    MPI_Request rq[2 * WINDOW];
    double *t = malloc(2 * reps * sizeof(double)), *cpu = t + reps;
    int alone = p == 1, peer = alone ? 0 : me ^ 1, sender = me % 2 == 0;
    for (int blocking = 0; blocking < 2; blocking++) {
        for (int r = 0; r < reps; r++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime(), c0 = cpu_seconds();
            for (long done = 0; done + WINDOW <= messages; done += WINDOW) {
                if (alone) { /* to itself; MPI_Send to MPI_PROC_NULL */
                    for (int i = 0; i < WINDOW && !blocking; i++)
                        MPI_Irecv(buf + (size_t)i * bytes, bytes, MPI_BYTE, 0, 1,
                                  MPI_COMM_WORLD, &rq[WINDOW + i]);
                    for (int i = 0; i < WINDOW; i++) {
                        if (blocking)
                            MPI_Send(buf, bytes, MPI_BYTE, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
                        else
                            MPI_Isend(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &rq[i]);
                    }
                    if (!blocking) MPI_Waitall(2 * WINDOW, rq, MPI_STATUSES_IGNORE);
                    continue;
                }
                for (int i = 0; i < WINDOW; i++) {
                    char *b = buf + (size_t)i * bytes;
                    if (sender && blocking)
                        MPI_Send(b, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                    else if (sender)
                        MPI_Isend(b, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &rq[i]);
                    else
                        MPI_Irecv(b, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &rq[i]);
                }
                if (!(sender && blocking)) MPI_Waitall(WINDOW, rq, MPI_STATUSES_IGNORE);
            }
            double c1 = cpu_seconds();
            MPI_Barrier(MPI_COMM_WORLD);
            double sent = (double)(messages / WINDOW * WINDOW);
            t[r] = (MPI_Wtime() - t0) / sent * 1e9;
            cpu[r] = (c1 - c0) / sent * 1e9;
        }
        qsort(t, reps, sizeof(double), cmp);
        qsort(cpu, reps, sizeof(double), cmp);
        if (me == 0)
            printf("%s %d B: %.1f ns per message, %.1f ns CPU (medians of %d)\n",
                   blocking ? "MPI_Send" : "MPI_Isend", bytes, t[reps / 2], cpu[reps / 2], reps);
    }
    free(t);
    free(buf);
    MPI_Finalize();
    return 0;
}
