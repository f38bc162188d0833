/* A program that knows nothing of copr: it calls ScaLAPACK's pdgemr2d_, Cpdgemr2d and
 * PBLAS's pdtran_ and checks the results against the formula. Linked only with
 * libscalapack-openmpi; scripts/mpi-tests.sh runs it as is and with libcopr_scalapack
 * in LD_PRELOAD, and says which library must have served the calls:
 *
 *   mpirun -n P preload_check scalapack
 *   mpirun -x LD_PRELOAD=<dir>/libcopr_scalapack.so -n P preload_check copr
 *
 * Which one did is read from copr's call counter, looked up at run time (dlsym): it
 * exists only when the preloaded library is there, and must have grown by the three
 * calls. Exit status 1 on a wrong element or the wrong library. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blacs.h"

static int ctxt, nprow, npcol, myrow, mycol;

typedef struct {
    int desc[9], locr, locc;
    double *x;
} matrix;

static int l2g(int l, int nb, int p, int np) { return ((l / nb) * np + p) * nb + l % nb; }
static double value(int i, int j, int salt) { return (double)((i * 37 + j * 11 + salt) % 1021); }

/* an m x n matrix in mb x nb blocks from process (0, 0), holding value(salt) */
static matrix make(int m, int n, int mb, int nb, int salt) {
    matrix a;
    int zero = 0, i, j;
    a.locr = numroc_(&m, &mb, &myrow, &zero, &nprow);
    a.locc = numroc_(&n, &nb, &mycol, &zero, &npcol);
    int desc[9] = {1, ctxt, m, n, mb, nb, 0, 0, a.locr > 1 ? a.locr : 1};
    memcpy(a.desc, desc, sizeof desc);
    a.x = malloc(sizeof(double) * (size_t)a.desc[8] * (size_t)(a.locc > 1 ? a.locc : 1));
    for (j = 0; j < a.locc; j++)
        for (i = 0; i < a.locr; i++)
            a.x[i + (size_t)j * a.desc[8]] =
                value(l2g(i, mb, myrow, nprow), l2g(j, nb, mycol, npcol), salt);
    return a;
}

/* mismatches of b against want(i, j) */
static long check(const matrix *b, double (*want)(int, int)) {
    long bad = 0;
    int i, j;
    for (j = 0; j < b->locc; j++)
        for (i = 0; i < b->locr; i++) {
            int gi = l2g(i, b->desc[4], myrow, nprow), gj = l2g(j, b->desc[5], mycol, npcol);
            if (b->x[i + (size_t)j * b->desc[8]] != want(gi, gj)) bad++;
        }
    return bad;
}
static double copied(int i, int j) { return value(i, j, 1); }
/* C <- 2 * A^T + 0.5 * C, A holding value(1), C value(2) */
static double transposed(int i, int j) { return 2.0 * value(j, i, 1) + 0.5 * value(i, j, 2); }

int main(int argc, char **argv) {
    const char *expect = argc > 1 ? argv[1] : "";
    int me, np, m = 301, n = 205, one = 1;
    double alpha = 2.0, beta = 0.5;
    long bad = 0, all;
    uint64_t (*calls)(void), before = 0, after = 0;
    MPI_Init(&argc, &argv);
    Cblacs_pinfo(&me, &np);
    for (nprow = 1; (nprow + 1) * (nprow + 1) <= np; nprow++) {}
    while (np % nprow) nprow--;
    npcol = np / nprow;
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "Row", nprow, npcol);
    Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
    calls = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "copr_capi_calls");
    if (calls) before = calls();
    {
        matrix a = make(m, n, 7, 5, 1), b = make(m, n, 16, 16, 9), c = make(m, n, 3, 11, 9);
        matrix at = make(n, m, 7, 5, 1), d = make(m, n, 8, 8, 2);
        pdgemr2d_(&m, &n, a.x, &one, &one, a.desc, b.x, &one, &one, b.desc, &ctxt);
        bad += check(&b, copied);
        Cpdgemr2d(m, n, a.x, 1, 1, a.desc, c.x, 1, 1, c.desc, ctxt);
        bad += check(&c, copied);
        pdtran_(&m, &n, &alpha, at.x, &one, &one, at.desc, &beta, d.x, &one, &one, d.desc);
        bad += check(&d, transposed);
        free(a.x), free(b.x), free(c.x), free(at.x), free(d.x);
    }
    if (calls) after = calls();
    MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    {
        /* who served the three calls: copr's counter grew by 3, or there is none */
        int served_by_copr = calls != NULL && after - before == 3;
        int wrong = strcmp(expect, served_by_copr ? "copr" : "scalapack") != 0 ||
                    (calls != NULL && !served_by_copr);
        int any_wrong;
        MPI_Allreduce(&wrong, &any_wrong, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (me == 0)
            printf("pdgemr2d_, Cpdgemr2d, pdtran_ on %d x %d: %ld wrong elements; served by %s "
                   "(expected %s)%s\n",
                   nprow, npcol, all, served_by_copr ? "copr (libcopr_scalapack)" : "ScaLAPACK",
                   expect, any_wrong || all ? ": FAILED" : "");
        Cblacs_gridexit(ctxt);
        MPI_Finalize();
        return all || any_wrong ? 1 : 0;
    }
}
