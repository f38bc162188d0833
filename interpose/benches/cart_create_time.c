/* Wall time of MPI_Cart_create(reorder = 1) on MPI_COMM_WORLD, with or without
 * libcopr_interpose.so in LD_PRELOAD (see benches/RESULTS.md for the commands):
 *
 *   cart_create_time DIMS [CALLS]     e.g. 2x4 20
 *
 * Rank 0 prints the median and the mean of the per-call times (each call timed between
 * barriers, its communicator freed before the next). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int me, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    int ndims = 0, dims[3], periods[3] = {1, 1, 1};
    for (char *s = argc > 1 ? argv[1] : ""; *s && ndims < 3;) {
        dims[ndims++] = (int)strtol(s, &s, 10);
        if (*s == 'x') s++;
    }
    int calls = argc > 2 ? atoi(argv[2]) : 20;
    if (ndims == 0 || calls < 1) {
        if (me == 0) fprintf(stderr, "usage: cart_create_time DIMS [CALLS]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double *t = malloc(sizeof(double) * (size_t)calls), sum = 0;
    for (int i = 0; i < calls; i++) {
        MPI_Comm cart;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Cart_create(MPI_COMM_WORLD, ndims, dims, periods, 1, &cart);
        MPI_Barrier(MPI_COMM_WORLD);
        t[i] = MPI_Wtime() - t0;
        sum += t[i];
        if (cart != MPI_COMM_NULL) MPI_Comm_free(&cart);
    }
    qsort(t, (size_t)calls, sizeof(double), cmp);
    if (me == 0)
        printf("%d ranks, grid %s, %d calls: median %.3f ms, mean %.3f ms\n", p, argv[1], calls,
               1e3 * t[calls / 2], 1e3 * sum / calls);
    free(t);
    MPI_Finalize();
    return 0;
}
