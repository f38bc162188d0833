/* What the interposer's C test programs share: CHECK(cond, fmt, ...) reports a failed
 * check with the world rank and counts it in `failures`; usage() ends the job with
 * exit status 2 after a message prefixed by PROGRAM (defined before including). */
#ifndef COPR_INTERPOSE_CHECK_H
#define COPR_INTERPOSE_CHECK_H

#include <mpi.h>
#include <stdio.h>

static int failures = 0;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            int me_;                                                                       \
            MPI_Comm_rank(MPI_COMM_WORLD, &me_);                                           \
            fprintf(stderr, "rank %d: check failed (%s): ", me_, #cond);                   \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, "\n");                                                         \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

static void usage(const char *msg) {
    fprintf(stderr, "%s: %s\n", PROGRAM, msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

#endif
