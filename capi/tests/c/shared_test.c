/* Node-shared source matrices through the C entry points (copr_alloc_shared,
 * copr_free_shared):
 *
 *   copy:      copr_pdgemr2d from a 16 x 16-block source in node-shared memory to a
 *              48 x 40-block target, whole matrices and a submatrix;
 *   transpose: copr_pdtran_ (alpha = 2, beta = 1/2) from a shared source;
 *
 * each repeated three times with the source rewritten between calls (the plan is kept
 * after the first), every local element of the target checked against a serial
 * reference (the global formula), and copr_capi_shared_reads() growing on every
 * process (the one-pass path was taken): from every other process when all give the
 * source the same LLD, from those that see it stored alike when each gives its own
 * local rows (the others send their packages the usual way); the same calls from an ordinary (malloc)
 * source give the same results without growing it. Then wrong use: a pointer copr did
 * not allocate, one freed already, processes naming different allocations or in
 * different calls (allocating on one, freeing on the others), a size
 * that overflows on one process only, a NULL output on one process only, a number
 * that is not a context: every process must return nonzero, count one error each and
 * allocate or free nothing (no crash, no hang), and the redistribution must still work
 * afterwards.
 *
 *   mpirun -n P shared_test      (P >= 2; exit status 1 on failure)
 *
 * Built and run by scripts/mpi-tests.sh. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blacs.h"
#include "copr.h"

static int me, nprocs, failures;

#define CHECK(cond, ...)                                                                   \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "process %d, line %d: ", me, __LINE__);                        \
            fprintf(stderr, __VA_ARGS__);                                                  \
            fprintf(stderr, "\n");                                                         \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

/* A block-cyclic matrix on the grid: descriptor and this process's local shape. */
struct matrix {
    int desc[9];
    int rows, cols, lld;
    int mb, nb;
};

static int myrow, mycol, nprow, npcol;
/* LLD: this process's local rows (0), or the largest local rows of any process (1) */
static int common_lld;
/* packages each process must read in one pass per call from a shared source: one
 * at least when processes give different LLDs (they read only from the processes of
 * their grid row, which see the source stored alike), every other process's otherwise */
static uint64_t want_reads = 1;

static struct matrix matrix(int ctxt, int m, int n, int mb, int nb) {
    struct matrix x;
    int zero = 0;
    x.mb = mb;
    x.nb = nb;
    x.rows = numroc_(&m, &mb, &myrow, &zero, &nprow);
    x.cols = numroc_(&n, &nb, &mycol, &zero, &npcol);
    x.lld = x.rows > 1 ? x.rows : 1;
    if (common_lld) x.lld = numroc_(&m, &mb, &zero, &zero, &nprow);
    int d[9] = {1, ctxt, m, n, mb, nb, 0, 0, x.lld};
    memcpy(x.desc, d, sizeof d);
    return x;
}

/* Global (0-based) row of local row r, and column of local column c. */
static int global_row(const struct matrix *x, int r) {
    return (r / x->mb * nprow + myrow) * x->mb + r % x->mb;
}
static int global_col(const struct matrix *x, int c) {
    return (c / x->nb * npcol + mycol) * x->nb + c % x->nb;
}

/* The source's value at global (i, j) in version v: exact in double. */
static double value(int i, int j, int v) { return (double)i * 1024.0 + j + 0.25 * v; }
static double target0(int i, int j) { return (double)i - 0.5 * j; }

static void fill(const struct matrix *x, double *a, int v) {
    for (int c = 0; c < x->cols; c++)
        for (int r = 0; r < x->rows; r++)
            a[r + (size_t)c * x->lld] = value(global_row(x, r), global_col(x, c), v);
}

static size_t bytes_of(const struct matrix *x) { return (size_t)x->lld * x->cols * sizeof(double); }

/* sub(B) <- sub(A) at (ia, ja) / (ib, jb), m x n, three times with A rewritten; B
 * checked everywhere (outside the submatrix it keeps target0). */
static void copies(int ctxt, double *a, const struct matrix *xa, int shared, int m, int n,
                   int ia, int ja, int ib, int jb) {
    struct matrix xb = matrix(ctxt, xa->desc[2], xa->desc[3], 48, 40);
    double *b = malloc(bytes_of(&xb) + 8);
    for (int v = 0; v < 3; v++) {
        fill(xa, a, v);
        for (int c = 0; c < xb.cols; c++)
            for (int r = 0; r < xb.rows; r++)
                b[r + (size_t)c * xb.lld] = target0(global_row(&xb, r), global_col(&xb, c));
        uint64_t before = copr_capi_shared_reads();
        copr_pdgemr2d(m, n, a, ia, ja, xa->desc, b, ib, jb, xb.desc, ctxt);
        uint64_t reads = copr_capi_shared_reads() - before;
        CHECK(shared ? reads >= want_reads : reads == 0,
              "copy %dx%d, version %d, source %s: %llu packages read in one pass", m, n, v,
              shared ? "shared" : "ordinary", (unsigned long long)reads);
        int bad = 0;
        for (int c = 0; c < xb.cols; c++)
            for (int r = 0; r < xb.rows; r++) {
                int i = global_row(&xb, r), j = global_col(&xb, c);
                int inside = i >= ib - 1 && i < ib - 1 + m && j >= jb - 1 && j < jb - 1 + n;
                double want = inside ? value(i - (ib - 1) + (ia - 1), j - (jb - 1) + (ja - 1), v)
                                     : target0(i, j);
                if (b[r + (size_t)c * xb.lld] != want && bad++ < 3)
                    CHECK(0, "copy: B(%d, %d) = %g, expected %g", i, j,
                          b[r + (size_t)c * xb.lld], want);
            }
        CHECK(bad == 0, "copy %dx%d version %d: %d wrong elements", m, n, v, bad);
    }
    free(b);
}

/* C <- 1/2 C + 2 A^T, C m x n, A (shared or not) n x m, three times with A rewritten. */
static void transposes(int ctxt, double *a, const struct matrix *xa, int shared) {
    int m = xa->desc[3], n = xa->desc[2], one = 1;
    struct matrix xc = matrix(ctxt, m, n, 48, 40);
    double *c = malloc(bytes_of(&xc) + 8);
    double alpha = 2.0, beta = 0.5;
    for (int v = 0; v < 3; v++) {
        fill(xa, a, v);
        for (int k = 0; k < xc.cols; k++)
            for (int r = 0; r < xc.rows; r++)
                c[r + (size_t)k * xc.lld] = target0(global_row(&xc, r), global_col(&xc, k));
        uint64_t before = copr_capi_shared_reads();
        copr_pdtran_(&m, &n, &alpha, a, &one, &one, xa->desc, &beta, c, &one, &one, xc.desc);
        uint64_t reads = copr_capi_shared_reads() - before;
        CHECK(shared ? reads >= want_reads : reads == 0,
              "transpose, version %d, source %s: %llu packages read in one pass", v,
              shared ? "shared" : "ordinary", (unsigned long long)reads);
        int bad = 0;
        for (int k = 0; k < xc.cols; k++)
            for (int r = 0; r < xc.rows; r++) {
                int i = global_row(&xc, r), j = global_col(&xc, k);
                double want = beta * target0(i, j) + alpha * value(j, i, v);
                if (c[r + (size_t)k * xc.lld] != want && bad++ < 3)
                    CHECK(0, "transpose: C(%d, %d) = %g, expected %g", i, j,
                          c[r + (size_t)k * xc.lld], want);
            }
        CHECK(bad == 0, "transpose version %d: %d wrong elements", v, bad);
    }
    free(c);
}

/* Every process returned nonzero and counted one more error. */
static void all_failed(int rc, uint64_t errors_before, const char *what) {
    int mine = rc != 0 && copr_capi_errors() == errors_before + 1, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    CHECK(mine, "%s: returned %d, errors %llu -> %llu", what, rc,
          (unsigned long long)errors_before, (unsigned long long)copr_capi_errors());
    CHECK(all, "%s: not every process reported the error", what);
}

static void wrong_use(int ctxt) {
    uint64_t e;
    int rc;
    void *p = NULL, *q = NULL;

    /* memory copr did not allocate */
    double *plain = malloc(64);
    e = copr_capi_errors();
    all_failed(copr_free_shared(ctxt, plain), e, "freeing malloc'd memory");
    free(plain);
    /* NULL */
    e = copr_capi_errors();
    all_failed(copr_free_shared(ctxt, NULL), e, "freeing NULL");

    /* a size that overflows on the last process only: nothing allocated anywhere */
    e = copr_capi_errors();
    p = (void *)&rc;
    rc = copr_alloc_shared(ctxt, me == nprocs - 1 ? SIZE_MAX : 4096, &p);
    all_failed(rc, e, "allocating SIZE_MAX bytes on one process");
    CHECK(p == NULL, "a failed allocation returned %p", p);
    /* more than the machine's memory on process 0 */
    e = copr_capi_errors();
    rc = copr_alloc_shared(ctxt, me == 0 ? ((size_t)1 << 60) : 4096, &p);
    all_failed(rc, e, "allocating 2^60 bytes on one process");
    CHECK(p == NULL, "a failed allocation returned %p", p);
    /* nowhere to return the address, on process 0 only */
    e = copr_capi_errors();
    all_failed(copr_alloc_shared(ctxt, 4096, me == 0 ? NULL : &p), e, "a NULL output");

    /* processes naming different allocations: nothing freed, then freed properly */
    CHECK(copr_alloc_shared(ctxt, 4096, &p) == 0 && p != NULL, "allocating p");
    CHECK(copr_alloc_shared(ctxt, me == 1 ? 0 : 100, &q) == 0 && q != NULL && q != p,
          "allocating q (0 bytes on process 1): %p, p %p", q, p);
    CHECK((uintptr_t)p % 64 == 0 && (uintptr_t)q % 64 == 0, "not aligned: %p %p", p, q);
    memset(p, 7, 4096);
    e = copr_capi_errors();
    all_failed(copr_free_shared(ctxt, me == 0 ? q : p), e, "freeing different allocations");
    CHECK(((unsigned char *)p)[4095] == 7, "p was changed by a failed free");
    CHECK(copr_free_shared(ctxt, p) == 0, "freeing p");
    CHECK(copr_free_shared(ctxt, q) == 0, "freeing q");
    /* processes in different calls: both fail, nothing allocated or freed */
    CHECK(copr_alloc_shared(ctxt, 4096, &p) == 0, "allocating p again");
    e = copr_capi_errors();
    if (me == 0) {
        q = (void *)&rc;
        rc = copr_alloc_shared(ctxt, 64, &q);
        CHECK(q == NULL, "a failed allocation returned %p", q);
    } else {
        rc = copr_free_shared(ctxt, p);
    }
    all_failed(rc, e, "allocating on process 0 while the others free");
    CHECK(copr_free_shared(ctxt, p) == 0, "freeing p after the mixed calls");
    /* freed already */
    e = copr_capi_errors();
    all_failed(copr_free_shared(ctxt, p), e, "freeing p twice");

    /* not a context: each process returns alone */
    setenv("COPR_CONTEXT_WAIT", "0.2", 1);
    e = copr_capi_errors();
    p = (void *)&rc;
    all_failed(copr_alloc_shared(4711, 4096, &p), e, "allocating on context 4711");
    CHECK(p == NULL, "a failed allocation returned %p", p);
    e = copr_capi_errors();
    all_failed(copr_free_shared(4711, &rc), e, "freeing on context 4711");
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    Cblacs_pinfo(&me, &nprocs);
    nprow = 1;
    for (int d = 1; d * d <= nprocs; d++)
        if (nprocs % d == 0) nprow = d;
    npcol = nprocs / nprow;
    int ctxt;
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "Row", nprow, npcol);
    Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);

    /* the source, 400 x 360 in 16 x 16 blocks: shared, and an ordinary copy */
    struct matrix xa = matrix(ctxt, 400, 360, 16, 16);
    double *shared = NULL;
    int rc = copr_alloc_shared(ctxt, bytes_of(&xa), (void **)&shared);
    CHECK(rc == 0 && shared != NULL, "copr_alloc_shared returned %d", rc);
    if (rc != 0) MPI_Abort(MPI_COMM_WORLD, 1);
    double *ordinary = malloc(bytes_of(&xa) + 8);

    copies(ctxt, shared, &xa, 1, 400, 360, 1, 1, 1, 1);
    copies(ctxt, ordinary, &xa, 0, 400, 360, 1, 1, 1, 1);
    copies(ctxt, shared, &xa, 1, 301, 257, 50, 17, 9, 33);
    transposes(ctxt, shared, &xa, 1);
    transposes(ctxt, ordinary, &xa, 0);

    /* one LLD on every process: every peer's package is read from the source */
    common_lld = 1;
    struct matrix xs = matrix(ctxt, 400, 360, 16, 16);
    double *same = NULL;
    CHECK(copr_alloc_shared(ctxt, bytes_of(&xs), (void **)&same) == 0, "allocating");
    want_reads = (uint64_t)nprocs - 1;
    copies(ctxt, same, &xs, 1, 400, 360, 1, 1, 1, 1);
    transposes(ctxt, same, &xs, 1);
    CHECK(copr_free_shared(ctxt, same) == 0, "freeing");
    common_lld = 0;
    want_reads = 1;

    wrong_use(ctxt);
    /* everything still works */
    copies(ctxt, shared, &xa, 1, 400, 360, 1, 1, 1, 1);
    CHECK(copr_free_shared(ctxt, shared) == 0, "freeing the source");
    copies(ctxt, ordinary, &xa, 0, 400, 360, 1, 1, 1, 1);

    /* left to MPI_Finalize */
    void *kept = NULL;
    CHECK(copr_alloc_shared(ctxt, 1 << 20, &kept) == 0, "allocating one left to MPI_Finalize");
    free(ordinary);

    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0) printf("shared_test on %d processes: %s (%d failures)\n", nprocs,
                        all ? "FAILED" : "passed", all);
    Cblacs_gridexit(ctxt);
    MPI_Finalize();
    return all ? 1 : 0;
}
