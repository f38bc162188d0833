/* Argument checks shared by the SimGrid programs: strict integer parsing and a
 * one-line error (from rank 0) with the program's usage, exit status 2. */
#ifndef COPR_SIMGRID_ARGS_H
#define COPR_SIMGRID_ARGS_H

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

/* Parses all of s as a base-10 integer in [lo, hi]; 1 on success. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

/* Prints "PROG: MSG[: ARG]" and "usage: USAGE" from rank 0, finalizes, exits 2. */
static void fail_usage(const char *prog, const char *usage, int rank, const char *msg,
                       const char *arg)
{
    if (rank == 0) {
        fprintf(stderr, "%s: %s%s%s\n", prog, msg, arg ? ": " : "", arg ? arg : "");
        fprintf(stderr, "usage: %s\n", usage);
    }
    MPI_Finalize();
    exit(2);
}

/* Prints "KEY <seconds>" on rank 0: the largest time since t0 over all ranks. */
static inline void report_max_time(const char *key, double t0, int rank)
{
    double local = MPI_Wtime() - t0, worst = 0.0;
    MPI_Reduce(&local, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%s %.9e\n", key, worst);
        fflush(stdout);
    }
}

#endif
