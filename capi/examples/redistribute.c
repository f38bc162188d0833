/* A <- B through copr's ScaLAPACK-signature entry point: a 1000 x 1000 matrix moves
 * from 32 x 32 blocks to 100 x 100 blocks on a BLACS grid of all processes; then again
 * with B in node-shared memory (copr_alloc_shared).
 *
 *   capi/install.sh PREFIX
 *   mpicc capi/examples/redistribute.c $(pkg-config --cflags --libs copr-capi) \
 *       -Wl,-rpath,PREFIX/lib -o redistribute      (PKG_CONFIG_PATH=PREFIX/lib/pkgconfig)
 *   mpirun -n 4 ./redistribute */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copr.h"

/* BLACS and ScaLAPACK's tools (libscalapack-openmpi) */
void Cblacs_pinfo(int *mypnum, int *nprocs);
void Cblacs_get(int context, int what, int *val);
void Cblacs_gridinit(int *context, char *order, int nprow, int npcol);
void Cblacs_gridinfo(int context, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int context);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
               const int *irsrc, const int *icsrc, const int *ictxt, const int *lld, int *info);

/* global index of local index l: blocks of nb over np processes, the first on process 0 */
static int global(int l, int nb, int p, int np) { return (l / nb * np + p) * nb + l % nb; }

/* A's elements that differ from the matrix's formula */
static int count_wrong(const double *a, int rows_a, int cols_a, int lld_a, int nb_a, int myrow,
                       int nprow, int mycol, int npcol) {
    int wrong = 0;
    for (int j = 0; j < cols_a; j++)
        for (int i = 0; i < rows_a; i++)
            wrong += a[i + j * lld_a] !=
                     global(i, nb_a, myrow, nprow) + 1e4 * global(j, nb_a, mycol, npcol);
    return wrong;
}

int main(int argc, char **argv) {
    int me, np, ctxt, nprow, npcol, myrow, mycol, info, zero = 0, wrong = 0, all;
    int n = 1000, nb_b = 32, nb_a = 100, descb[9], desca[9];
    MPI_Init(&argc, &argv);
    Cblacs_pinfo(&me, &np);
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "Row", 1, np);
    Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);

    /* B: n x n in nb_b x nb_b blocks; A: the same matrix in nb_a x nb_a blocks */
    int rows = numroc_(&n, &nb_b, &myrow, &zero, &nprow);
    int cols_b = numroc_(&n, &nb_b, &mycol, &zero, &npcol);
    int cols_a = numroc_(&n, &nb_a, &mycol, &zero, &npcol);
    int rows_a = numroc_(&n, &nb_a, &myrow, &zero, &nprow);
    int lld_b = rows > 1 ? rows : 1, lld_a = rows_a > 1 ? rows_a : 1;
    descinit_(descb, &n, &n, &nb_b, &nb_b, &zero, &zero, &ctxt, &lld_b, &info);
    descinit_(desca, &n, &n, &nb_a, &nb_a, &zero, &zero, &ctxt, &lld_a, &info);
    double *b = malloc(sizeof(double) * (size_t)lld_b * (size_t)(cols_b > 0 ? cols_b : 1));
    double *a = malloc(sizeof(double) * (size_t)lld_a * (size_t)(cols_a > 0 ? cols_a : 1));
    for (int j = 0; j < cols_b; j++)
        for (int i = 0; i < rows; i++)
            b[i + j * lld_b] = global(i, nb_b, myrow, nprow) + 1e4 * global(j, nb_b, mycol, npcol);

    copr_pdgemr2d(n, n, b, 1, 1, descb, a, 1, 1, desca, ctxt);
    wrong += count_wrong(a, rows_a, cols_a, lld_a, nb_a, myrow, nprow, mycol, npcol);

    /* B in node-shared memory (collective over ctxt; each process its own size): the
     * processes of a node read their parts straight from each other's B, in one pass */
    size_t bytes_b = sizeof(double) * (size_t)lld_b * (size_t)(cols_b > 0 ? cols_b : 1);
    double *shared_b = NULL;
    if (copr_alloc_shared(ctxt, bytes_b, (void **)&shared_b) != 0)
        MPI_Abort(MPI_COMM_WORLD, 1); /* the message is on standard error */
    memcpy(shared_b, b, bytes_b);     /* an ordinary local array from here on */
    copr_pdgemr2d(n, n, shared_b, 1, 1, descb, a, 1, 1, desca, ctxt);
    copr_free_shared(ctxt, shared_b); /* collective too; or left to MPI_Finalize */
    wrong += count_wrong(a, rows_a, cols_a, lld_a, nb_a, myrow, nprow, mycol, npcol);

    MPI_Allreduce(&wrong, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) printf("A <- B, %d x %d on %d processes: %d wrong elements\n", n, n, np, all);
    free(a);
    free(b);
    Cblacs_gridexit(ctxt);
    MPI_Finalize();
    return all != 0;
}
