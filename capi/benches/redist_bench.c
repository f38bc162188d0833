/* copr's C entry points against ScaLAPACK's routines in one mpirun, on the same data:
 *
 *   copr_pdgemr2d_ vs pdgemr2d_   B <- A, A in 32 x 32 blocks, B in 128 x 128 blocks
 *   copr_pdtran_   vs pdtran_     C <- A^T (alpha 1, beta 0), C in 128 x 128 blocks
 *
 * double precision, N x N, on the squarest BLACS grid of the processes (2 x 2 on 4),
 * row-major, descriptors from process (0, 0), tight LLD. Every case runs once untimed
 * (the warm-up: page faults, copr's plan, which its cache keeps for the later calls,
 * as for an application that redistributes the same layouts again), then ROUNDS
 * rounds take each case once, copr and ScaLAPACK alternating (ScaLAPACK first in odd
 * rounds). A call's time is the slowest process's, from a barrier to its return.
 * Results are checked element by element against the formula (A(i, j) = i N + j)
 * after the warm-up and after the last round. Rank 0 prints medians and minima, and
 * per round the ratio ScaLAPACK / copr of the two calls of that round (their median
 * and range).
 *
 *   mpirun -n 4 redist_bench [N [ROUNDS [MB_A [MB_B]]]]   (default 10000 7 32 128)
 *
 * Built and run by scripts/capi-bench.sh. Exit status 1 on a wrong element. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copr.h"

void Cblacs_pinfo(int *mypnum, int *nprocs);
void Cblacs_get(int context, int what, int *val);
void Cblacs_gridinit(int *context, char *order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int context);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
void pdgemr2d_(int *m, int *n, double *a, int *ia, int *ja, int *desca, double *b, int *ib,
               int *jb, int *descb, int *ictxt);
void pdtran_(int *m, int *n, double *alpha, double *a, int *ia, int *ja, int *desca,
             double *beta, double *c, int *ic, int *jc, int *descc);

static int me, ctxt, nprow, npcol, myrow, mycol, N;

typedef struct {
    int desc[9], locr, locc;
    double *x;
} matrix;

static int l2g(int l, int nb, int p, int np) { return ((l / nb) * np + p) * nb + l % nb; }

static matrix make(int mb, int fill) {
    matrix a;
    int zero = 0;
    size_t i, j;
    a.locr = numroc_(&N, &mb, &myrow, &zero, &nprow);
    a.locc = numroc_(&N, &mb, &mycol, &zero, &npcol);
    int desc[9] = {1, ctxt, N, N, mb, mb, 0, 0, a.locr > 1 ? a.locr : 1};
    memcpy(a.desc, desc, sizeof desc);
    a.x = malloc(sizeof(double) * (size_t)a.desc[8] * (size_t)(a.locc > 1 ? a.locc : 1));
    if (!a.x) {
        fprintf(stderr, "process %d: out of memory\n", me);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (j = 0; j < (size_t)a.locc; j++)
        for (i = 0; i < (size_t)a.locr; i++)
            a.x[i + j * (size_t)a.desc[8]] =
                fill ? (double)l2g((int)i, mb, myrow, nprow) * N + l2g((int)j, mb, mycol, npcol)
                     : -1.0;
    return a;
}

/* wrong elements of b (all processes): b(i, j) = i N + j, or j N + i transposed */
static long wrong(const matrix *b, int transposed) {
    long bad = 0, all;
    size_t i, j;
    for (j = 0; j < (size_t)b->locc; j++)
        for (i = 0; i < (size_t)b->locr; i++) {
            double gi = l2g((int)i, b->desc[4], myrow, nprow);
            double gj = l2g((int)j, b->desc[5], mycol, npcol);
            double want = transposed ? gj * N + gi : gi * N + gj;
            if (b->x[i + j * (size_t)b->desc[8]] != want) bad++;
        }
    MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

enum { COPR_GEMR2D, SCALAPACK_GEMR2D, COPR_TRAN, SCALAPACK_TRAN, CASES };
static const char *NAMES[CASES] = {"copr_pdgemr2d_ (copr's C library)", "pdgemr2d_ (ScaLAPACK)",
                                   "copr_pdtran_ (copr's C library)", "pdtran_ (ScaLAPACK)"};

/* runs case k once; returns the slowest process's seconds */
static double run(int k, matrix *a, matrix *b, matrix *c) {
    int one = 1;
    double alpha = 1.0, beta = 0.0, t, slowest;
    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    switch (k) {
    case COPR_GEMR2D:
        copr_pdgemr2d_(&N, &N, a->x, &one, &one, a->desc, b->x, &one, &one, b->desc, &ctxt);
        break;
    case SCALAPACK_GEMR2D:
        pdgemr2d_(&N, &N, a->x, &one, &one, a->desc, b->x, &one, &one, b->desc, &ctxt);
        break;
    case COPR_TRAN:
        copr_pdtran_(&N, &N, &alpha, a->x, &one, &one, a->desc, &beta, c->x, &one, &one, c->desc);
        break;
    default:
        pdtran_(&N, &N, &alpha, a->x, &one, &one, a->desc, &beta, c->x, &one, &one, c->desc);
    }
    t = MPI_Wtime() - t;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

static int by_value(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}
static double median(const double *v, int n) {
    double *s = malloc(sizeof(double) * (size_t)n), m;
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof(double), by_value);
    m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}
static double smallest(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] < m ? v[i] : m;
    return m;
}
static double largest(const double *v, int n) {
    double m = v[0];
    for (int i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
    return m;
}

int main(int argc, char **argv) {
    int np, rounds, mb_a, mb_b, k, r;
    long bad = 0;
    double *t[CASES];
    MPI_Init(&argc, &argv);
    N = argc > 1 ? atoi(argv[1]) : 10000;
    rounds = argc > 2 ? atoi(argv[2]) : 7;
    mb_a = argc > 3 ? atoi(argv[3]) : 32;
    mb_b = argc > 4 ? atoi(argv[4]) : 128;
    Cblacs_pinfo(&me, &np);
    if (N < 1 || rounds < 1 || mb_a < 1 || mb_b < 1) {
        if (me == 0) fprintf(stderr, "usage: redist_bench [N [ROUNDS [MB_A [MB_B]]]] (all >= 1)\n");
        MPI_Finalize();
        return 2;
    }
    for (nprow = 1; (nprow + 1) * (nprow + 1) <= np; nprow++) {}
    while (np % nprow) nprow--;
    npcol = np / nprow;
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "Row", nprow, npcol);
    Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
    {
        matrix a = make(mb_a, 1), b = make(mb_b, 0), c = make(mb_b, 0);
        for (k = 0; k < CASES; k++) t[k] = malloc(sizeof(double) * (size_t)rounds);
        /* warm-up and check */
        for (k = 0; k < CASES; k++) {
            double w = run(k, &a, &b, &c);
            long e = k < COPR_TRAN ? wrong(&b, 0) : wrong(&c, 1);
            if (me == 0) printf("warm-up %-36s %9.3f ms, %ld wrong elements\n", NAMES[k], 1e3 * w, e);
            bad += e;
            memset(k < COPR_TRAN ? b.x : c.x, 0, sizeof(double) * (size_t)b.desc[8] *
                                                  (size_t)(b.locc > 1 ? b.locc : 1));
        }
        for (r = 0; r < rounds; r++)
            for (k = 0; k < CASES; k++) {
                /* pairs (copr, ScaLAPACK) of one routine; ScaLAPACK first in odd rounds */
                int which = r % 2 ? (k ^ 1) : k;
                t[which][r] = run(which, &a, &b, &c);
            }
        /* the last round's results: the last writers of B and of C */
        bad += wrong(&b, 0) + wrong(&c, 1);
        if (me == 0) {
            printf("\nN = %d, %d x %d grid, %d x %d -> %d x %d blocks, %d rounds\n\n", N, nprow,
                   npcol, mb_a, mb_a, mb_b, mb_b, rounds);
            printf("| call | median [ms] | min [ms] |\n|---|---:|---:|\n");
            for (k = 0; k < CASES; k++)
                printf("| %s | %.1f | %.1f |\n", NAMES[k], 1e3 * median(t[k], rounds),
                       1e3 * smallest(t[k], rounds));
            printf("\n| paired per round (ScaLAPACK / copr) | median | range | rounds |\n"
                   "|---|---:|---:|---|\n");
            for (k = 0; k < CASES; k += 2) {
                double ratio[1024];
                int n = rounds < 1024 ? rounds : 1024;
                char list[4096] = "";
                for (r = 0; r < n; r++) {
                    ratio[r] = t[k + 1][r] / t[k][r];
                    snprintf(list + strlen(list), sizeof list - strlen(list), "%s%.2f",
                             r ? ", " : "", ratio[r]);
                }
                printf("| %s vs %s | %.2fx | %.2f-%.2fx | %s |\n", NAMES[k], NAMES[k + 1],
                       median(ratio, n), smallest(ratio, n), largest(ratio, n), list);
            }
            printf("\nwrong elements: %ld\n", bad);
        }
        free(a.x), free(b.x), free(c.x);
        for (k = 0; k < CASES; k++) free(t[k]);
    }
    Cblacs_gridexit(ctxt);
    MPI_Finalize();
    return bad ? 1 : 0;
}
