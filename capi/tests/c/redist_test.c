/* copr's ScaLAPACK-signature entry points against ScaLAPACK itself (Debian's
 * libscalapack-openmpi), element by element, on random cases:
 *
 *   p?gemr2d: A and B on different BLACS grids (row-major, column-major and mapped
 *             grids of random subsets of the processes, so some processes are outside
 *             a grid), under a context ICTXT of all processes or of all but the last;
 *             submatrices at IA/JA != 1, per-process LLD with random padding;
 *   p?tran*:  transposes (and conjugate transposes) with random alpha, beta on one
 *             random grid; alpha = 0 with a source full of NaN (not to be read);
 *   copr_pdgemr2d_batch: up to 4 such copies in one call (some with M = 0), against
 *             Cpdgemr2d copy by copy;
 *   copr_pdgemr2d_relabel: the whole of B on its grid relabeled; ScaLAPACK's
 *             Cpdgemr2d onto a context made from the returned MAP gives the same local
 *             arrays, and MAP keeps as many elements in place as the best of all
 *             placements (brute force over them);
 *
 * for s, d, c, z, through the C-style and the Fortran-style entry points. Each case
 * also checks both results against the formula (values are small multiples of 1/4 and
 * the scalars are dyadic, so every result is exact). Then bad arguments: every process
 * must return, count one error, and leave the data unchanged, and the processes that
 * found the error must name the parameter on standard error.
 *
 *   mpirun -n P redist_test [cases]      (default 48 cases; exit status 1 on failure)
 *
 * Built with -DCOPR_UNPREFIXED and linked with libcopr_scalapack (ahead of ScaLAPACK)
 * and scalapack_ref.c, the same cases call ScaLAPACK's own names (Cpdgemr2d,
 * pdgemr2d_, pdtran_, ...), which are then copr's, against ScaLAPACK's own routines
 * reached under ref_ names. Every call copr serves must add one to copr_capi_calls()
 * and every reference call nothing: a copr library that was not used fails.
 *
 * Built and run by scripts/mpi-tests.sh. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "copr.h"

#ifdef COPR_UNPREFIXED
/* relinked: ScaLAPACK's names are copr's; ScaLAPACK's own routines are ref_ */
#include "scalapack_ref.h"
#define REF(f) ref_##f
#define COPR_C(f) C##f
#define COPR_F(f) f##_
void psgemr2d_(int *m, int *n, void *a, int *ia, int *ja, int *desca, void *b, int *ib, int *jb,
               int *descb, int *ictxt);
void pcgemr2d_(int *m, int *n, void *a, int *ia, int *ja, int *desca, void *b, int *ib, int *jb,
               int *descb, int *ictxt);
void pzgemr2d_(int *m, int *n, void *a, int *ia, int *ja, int *desca, void *b, int *ib, int *jb,
               int *descb, int *ictxt);
#else
#define REF(f) f
#define COPR_C(f) copr_##f
#define COPR_F(f) copr_##f##_
#endif

/* BLACS, ScaLAPACK and PBLAS, as libscalapack-openmpi exports them (the double
 * precision ones in blacs.h) */
#include "blacs.h"
void Cpsgemr2d(int m, int n, float *a, int ia, int ja, int *desca, float *b, int ib, int jb,
               int *descb, int ictxt);
void Cpcgemr2d(int m, int n, copr_scomplex *a, int ia, int ja, int *desca, copr_scomplex *b,
               int ib, int jb, int *descb, int ictxt);
void Cpzgemr2d(int m, int n, copr_dcomplex *a, int ia, int ja, int *desca, copr_dcomplex *b,
               int ib, int jb, int *descb, int ictxt);
void pstran_(int *m, int *n, float *alpha, float *a, int *ia, int *ja, int *desca, float *beta,
             float *c, int *ic, int *jc, int *descc);
void pctranu_(int *m, int *n, float *alpha, float *a, int *ia, int *ja, int *desca, float *beta,
              float *c, int *ic, int *jc, int *descc);
void pctranc_(int *m, int *n, float *alpha, float *a, int *ia, int *ja, int *desca, float *beta,
              float *c, int *ic, int *jc, int *descc);
void pztranu_(int *m, int *n, double *alpha, double *a, int *ia, int *ja, int *desca,
              double *beta, double *c, int *ic, int *jc, int *descc);
void pztranc_(int *m, int *n, double *alpha, double *a, int *ia, int *ja, int *desca,
              double *beta, double *c, int *ic, int *jc, int *descc);

static int me, nprocs;
static const char *TYPES = "sdcz";

/* ---- random numbers: the same sequence on every process ---- */
static uint64_t rng_state;
static uint64_t next_u64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
/* 0 .. k-1 */
static int pick(int k) { return (int)(next_u64(&rng_state) % (uint64_t)k); }

/* ---- element types: s, d, c, z as 1 or 2 floats or doubles ---- */
static int comps(int t) { return t >= 2 ? 2 : 1; }
static int is_double(int t) { return t == 1 || t == 3; }
static size_t elem_size(int t) { return (size_t)comps(t) * (is_double(t) ? 8 : 4); }
static void set(void *buf, size_t k, int c, int t, double v) {
    size_t at = k * (size_t)comps(t) + (size_t)c;
    if (is_double(t))
        ((double *)buf)[at] = v;
    else
        ((float *)buf)[at] = (float)v;
}
static double get(const void *buf, size_t k, int c, int t) {
    size_t at = k * (size_t)comps(t) + (size_t)c;
    return is_double(t) ? ((const double *)buf)[at] : (double)((const float *)buf)[at];
}

/* component c of the global element (i, j) of a matrix "salt": a multiple of 1/4 */
static double value(int i, int j, int c, int salt) {
    int x = c == 0 ? i * 131 + j * 71 + salt * 17 : j * 37 + i * 101 + salt * 29 + 5;
    return (double)(x % 509) * 0.25 - 60.0;
}
static const double PAD = -12345.0; /* padding rows below LOCr, never to be written */

/* ---- a process grid and a matrix on it ---- */
typedef struct {
    int ctxt, nprow, npcol, myrow, mycol; /* ctxt -1 and myrow -1 outside the grid */
} grid;

/* A grid of k of the first `avail` processes: BLACS "R" or "C" order on the first k,
 * or a random map of a random choice of them. Collective over all processes. */
static grid make_grid(int avail, int k) {
    grid g;
    int nprow = 1 + pick(k), sys, i;
    while (k % nprow) nprow--;
    g.nprow = nprow;
    g.npcol = k / nprow;
    Cblacs_get(-1, 0, &sys);
    g.ctxt = sys;
    switch (pick(3)) {
    case 0: Cblacs_gridinit(&g.ctxt, "R", g.nprow, g.npcol); break;
    case 1: Cblacs_gridinit(&g.ctxt, "C", g.nprow, g.npcol); break;
    default: {
        int *perm = malloc(sizeof(int) * (size_t)avail);
        for (i = 0; i < avail; i++) perm[i] = i;
        for (i = avail - 1; i > 0; i--) {
            int j = pick(i + 1), x = perm[i];
            perm[i] = perm[j];
            perm[j] = x;
        }
        /* usermap(i, j) = perm[...], column-major with leading dimension nprow */
        Cblacs_gridmap(&g.ctxt, perm, g.nprow, g.nprow, g.npcol);
        free(perm);
    }
    }
    g.myrow = g.mycol = -1;
    if (g.ctxt >= 0) {
        int p, q;
        Cblacs_gridinfo(g.ctxt, &p, &q, &g.myrow, &g.mycol);
        if (g.myrow < 0 || g.myrow >= p) g.myrow = g.mycol = -1;
    }
    if (g.myrow < 0) g.ctxt = -1;
    return g;
}
static void free_grid(grid *g) {
    if (g->ctxt >= 0) Cblacs_gridexit(g->ctxt);
}

typedef struct {
    int desc[9];
    int locr, locc; /* local rows and columns of the whole matrix */
    size_t len;     /* elements of the local array */
    void *copr, *ref; /* the array for copr's call, the one for ScaLAPACK's */
} matrix;

/* global index of local index l (blocks of nb over np processes from src) */
static int l2g(int l, int nb, int p, int src, int np) {
    return ((l / nb) * np + (p - src + np) % np) * nb + l % nb;
}

/* An M x N matrix in random MB x NB blocks on g; LLD gets random padding on each
 * process (from `own`, a per-process sequence). Both arrays hold value(salt) (or NaN
 * when nan is set) and PAD below the local rows. */
static matrix make_matrix(int t, const grid *g, int M, int N, int salt, int nan,
                          uint64_t *own) {
    matrix x;
    int mb = 1 + pick(8), nb = 1 + pick(8), rsrc = pick(g->nprow), csrc = pick(g->npcol);
    int lld, li, lj, c;
    memset(&x, 0, sizeof x);
    x.desc[0] = 1;
    x.desc[1] = g->ctxt;
    x.desc[2] = M;
    x.desc[3] = N;
    x.desc[4] = mb;
    x.desc[5] = nb;
    x.desc[6] = rsrc;
    x.desc[7] = csrc;
    if (g->ctxt < 0) {
        x.desc[8] = 1;
        return x;
    }
    x.locr = numroc_(&M, &mb, &g->myrow, &rsrc, &g->nprow);
    x.locc = numroc_(&N, &nb, &g->mycol, &csrc, &g->npcol);
    lld = (x.locr > 1 ? x.locr : 1) + (int)(next_u64(own) % 3);
    x.desc[8] = lld;
    x.len = (size_t)lld * (size_t)(x.locc > 0 ? x.locc : 1);
    x.copr = malloc(x.len * elem_size(t));
    x.ref = malloc(x.len * elem_size(t));
    for (lj = 0; lj < (x.locc > 0 ? x.locc : 1); lj++)
        for (li = 0; li < lld; li++)
            for (c = 0; c < comps(t); c++) {
                size_t k = (size_t)li + (size_t)lj * (size_t)lld;
                double v = PAD;
                if (li < x.locr && lj < x.locc)
                    v = nan ? NAN
                            : value(l2g(li, mb, g->myrow, rsrc, g->nprow),
                                    l2g(lj, nb, g->mycol, csrc, g->npcol), c, salt);
                set(x.copr, k, c, t, v);
                set(x.ref, k, c, t, v);
            }
    return x;
}
static void free_matrix(matrix *x) {
    free(x->copr);
    free(x->ref);
}

/* Compares a target's two arrays with each other and with `expect(i, j, c, old)`
 * (global 0-based i, j; old = the value before the call); returns mismatches. */
typedef double (*expectation)(const void *ctx, int i, int j, int c, double old);
static long check(int t, const matrix *x, const grid *g, int salt, expectation expect,
                  const void *ctx, const char *what) {
    long bad = 0;
    int li, lj, c, lld = x->desc[8];
    if (g->ctxt < 0) return 0;
    for (lj = 0; lj < (x->locc > 0 ? x->locc : 1); lj++)
        for (li = 0; li < lld; li++)
            for (c = 0; c < comps(t); c++) {
                size_t k = (size_t)li + (size_t)lj * (size_t)lld;
                double got = get(x->copr, k, c, t), ref = get(x->ref, k, c, t), want = PAD;
                if (li < x->locr && lj < x->locc) {
                    int i = l2g(li, x->desc[4], g->myrow, x->desc[6], g->nprow);
                    int j = l2g(lj, x->desc[5], g->mycol, x->desc[7], g->npcol);
                    want = expect(ctx, i, j, c, value(i, j, c, salt));
                }
                if (got != ref || got != want) {
                    if (bad < 3)
                        fprintf(stderr,
                                "process %d: %s: local (%d, %d) part %d: copr %g, ScaLAPACK %g, "
                                "expected %g\n",
                                me, what, li, lj, c, got, ref, want);
                    bad++;
                }
            }
    return bad;
}

/* 1 if copr_capi_calls() is not `before + more` after a call of `whose` routine */
static long check_calls(uint64_t before, uint64_t more, const char *what, const char *whose) {
    uint64_t now = copr_capi_calls();
    if (now == before + more) return 0;
    fprintf(stderr, "process %d: %s: copr counted %llu calls during %s routine, expected %llu\n",
            me, what, (unsigned long long)(now - before), whose, (unsigned long long)more);
    return 1;
}

/* ---- p?gemr2d ---- */
typedef struct {
    int m, n, ia, ja, ib, jb, salt_a;
} copy_case;
static double expect_copy(const void *ctx, int i, int j, int c, double old) {
    const copy_case *k = ctx;
    int si = i - (k->ib - 1), sj = j - (k->jb - 1);
    if (si < 0 || si >= k->m || sj < 0 || sj >= k->n) return old;
    return value(si + k->ia - 1, sj + k->ja - 1, c, k->salt_a);
}

static void scalapack_gemr2d(int t, int m, int n, void *a, int ia, int ja, int *desca, void *b,
                             int ib, int jb, int *descb, int ictxt) {
    switch (t) {
    case 0: REF(Cpsgemr2d)(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt); break;
    case 1: REF(Cpdgemr2d)(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt); break;
    case 2: REF(Cpcgemr2d)(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt); break;
    default: REF(Cpzgemr2d)(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt);
    }
}
static void copr_gemr2d(int fortran, int t, int m, int n, void *a, int ia, int ja, int *desca,
                        void *b, int ib, int jb, int *descb, int ictxt) {
    if (fortran) {
        switch (t) {
        case 0: COPR_F(psgemr2d)(&m, &n, a, &ia, &ja, desca, b, &ib, &jb, descb, &ictxt); break;
        case 1: COPR_F(pdgemr2d)(&m, &n, a, &ia, &ja, desca, b, &ib, &jb, descb, &ictxt); break;
        case 2: COPR_F(pcgemr2d)(&m, &n, a, &ia, &ja, desca, b, &ib, &jb, descb, &ictxt); break;
        default: COPR_F(pzgemr2d)(&m, &n, a, &ia, &ja, desca, b, &ib, &jb, descb, &ictxt);
        }
        return;
    }
    switch (t) {
    case 0: COPR_C(psgemr2d)(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt); break;
    case 1: COPR_C(pdgemr2d)(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt); break;
    case 2: COPR_C(pcgemr2d)(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt); break;
    default: COPR_C(pzgemr2d)(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt);
    }
}

/* One random p?gemr2d case; returns this process's mismatches. */
static long gemr2d_case(int t, int fortran, uint64_t *own, char *desc, size_t desc_len) {
    /* ICTXT: all processes, or all but the last (which then takes no part) */
    int avail = nprocs >= 3 && pick(3) == 0 ? nprocs - 1 : nprocs;
    int gk = avail;
    grid G = make_grid(avail, gk);
    grid ga = make_grid(avail, 1 + pick(avail)), gb = make_grid(avail, 1 + pick(avail));
    copy_case k;
    matrix a, b;
    long bad = 0;
    k.m = 1 + pick(40);
    k.n = 1 + pick(40);
    k.ia = 1 + pick(9);
    k.ja = 1 + pick(9);
    k.ib = 1 + pick(9);
    k.jb = 1 + pick(9);
    k.salt_a = 1 + pick(1000);
    a = make_matrix(t, &ga, k.ia - 1 + k.m + pick(6), k.ja - 1 + k.n + pick(6), k.salt_a, 0, own);
    b = make_matrix(t, &gb, k.ib - 1 + k.m + pick(6), k.jb - 1 + k.n + pick(6), k.salt_a + 1, 0,
                    own);
    snprintf(desc, desc_len,
             "p%cgemr2d%s %dx%d A(%d,%d) of %dx%d in %dx%d blocks on %dx%d, B(%d,%d) of %dx%d "
             "in %dx%d blocks on %dx%d, ICTXT of %d processes",
             TYPES[t], fortran ? "_" : "", k.m, k.n, k.ia, k.ja, a.desc[2], a.desc[3], a.desc[4],
             a.desc[5], ga.nprow, ga.npcol, k.ib, k.jb, b.desc[2], b.desc[3], b.desc[4],
             b.desc[5], gb.nprow, gb.npcol, avail);
    if (G.ctxt >= 0) {
        uint64_t calls = copr_capi_calls();
        scalapack_gemr2d(t, k.m, k.n, a.ref, k.ia, k.ja, a.desc, b.ref, k.ib, k.jb, b.desc,
                         G.ctxt);
        bad += check_calls(calls, 0, desc, "ScaLAPACK's");
        copr_gemr2d(fortran, t, k.m, k.n, a.copr, k.ia, k.ja, a.desc, b.copr, k.ib, k.jb, b.desc,
                    G.ctxt);
        bad += check_calls(calls, 1, desc, "copr's");
        bad += check(t, &b, &gb, k.salt_a + 1, expect_copy, &k, desc);
        /* the source is unchanged */
        if (ga.ctxt >= 0 && memcmp(a.copr, a.ref, a.len * elem_size(t)) != 0) {
            fprintf(stderr, "process %d: %s: copr changed the source\n", me, desc);
            bad++;
        }
    }
    free_matrix(&a);
    free_matrix(&b);
    free_grid(&ga);
    free_grid(&gb);
    free_grid(&G);
    return bad;
}

/* ---- p?tran* ---- */
typedef struct {
    int t, conj, m, n, ia, ja, ic, jc, salt_a;
    double alpha[2], beta[2];
} tran_case;
static double expect_tran(const void *ctx, int i, int j, int c, double old_c) {
    const tran_case *k = ctx;
    int si = i - (k->ic - 1), sj = j - (k->jc - 1);
    double ar, ai, cr, ci, xr, xi;
    if (si < 0 || si >= k->m || sj < 0 || sj >= k->n) return old_c;
    /* x = op(sub(A))(si, sj) = sub(A)(sj, si), conjugated for tranc */
    xr = value(sj + k->ia - 1, si + k->ja - 1, 0, k->salt_a);
    xi = comps(k->t) == 2 ? value(sj + k->ia - 1, si + k->ja - 1, 1, k->salt_a) : 0.0;
    if (k->conj) xi = -xi;
    if (k->alpha[0] == 0.0 && k->alpha[1] == 0.0) xr = xi = 0.0; /* A is not read */
    cr = value(i, j, 0, k->salt_a + 1);
    ci = comps(k->t) == 2 ? value(i, j, 1, k->salt_a + 1) : 0.0;
    ar = k->alpha[0] * xr - k->alpha[1] * xi + k->beta[0] * cr - k->beta[1] * ci;
    ai = k->alpha[0] * xi + k->alpha[1] * xr + k->beta[0] * ci + k->beta[1] * cr;
    return c == 0 ? ar : ai;
}

static void call_tran(int which, const tran_case *k, void *a, int *desca, void *c, int *descc) {
    int m = k->m, n = k->n, ia = k->ia, ja = k->ja, ic = k->ic, jc = k->jc;
    float fa[2] = {(float)k->alpha[0], (float)k->alpha[1]};
    float fb[2] = {(float)k->beta[0], (float)k->beta[1]};
    double da[2] = {k->alpha[0], k->alpha[1]}, db[2] = {k->beta[0], k->beta[1]};
    int t = k->t;
    if (which == 0) { /* ScaLAPACK */
        if (t == 0) REF(pstran_)(&m, &n, fa, a, &ia, &ja, desca, fb, c, &ic, &jc, descc);
        if (t == 1) REF(pdtran_)(&m, &n, da, a, &ia, &ja, desca, db, c, &ic, &jc, descc);
        if (t == 2 && !k->conj) REF(pctranu_)(&m, &n, fa, a, &ia, &ja, desca, fb, c, &ic, &jc, descc);
        if (t == 2 && k->conj) REF(pctranc_)(&m, &n, fa, a, &ia, &ja, desca, fb, c, &ic, &jc, descc);
        if (t == 3 && !k->conj) REF(pztranu_)(&m, &n, da, a, &ia, &ja, desca, db, c, &ic, &jc, descc);
        if (t == 3 && k->conj) REF(pztranc_)(&m, &n, da, a, &ia, &ja, desca, db, c, &ic, &jc, descc);
        return;
    }
    if (t == 0) COPR_F(pstran)(&m, &n, fa, a, &ia, &ja, desca, fb, c, &ic, &jc, descc);
    if (t == 1) COPR_F(pdtran)(&m, &n, da, a, &ia, &ja, desca, db, c, &ic, &jc, descc);
    if (t == 2 && !k->conj) COPR_F(pctranu)(&m, &n, fa, a, &ia, &ja, desca, fb, c, &ic, &jc, descc);
    if (t == 2 && k->conj) COPR_F(pctranc)(&m, &n, fa, a, &ia, &ja, desca, fb, c, &ic, &jc, descc);
    if (t == 3 && !k->conj) COPR_F(pztranu)(&m, &n, da, a, &ia, &ja, desca, db, c, &ic, &jc, descc);
    if (t == 3 && k->conj) COPR_F(pztranc)(&m, &n, da, a, &ia, &ja, desca, db, c, &ic, &jc, descc);
}

static long tran_case_run(int t, uint64_t *own, char *desc, size_t desc_len) {
    static const double re[] = {0.0, 1.0, -1.0, 0.5, 2.0};
    static const double im[] = {0.0, 1.0, -0.5};
    grid g = make_grid(nprocs, 1 + pick(nprocs));
    tran_case k;
    matrix a, c;
    long bad = 0;
    k.t = t;
    k.conj = t >= 2 && pick(2);
    k.m = 1 + pick(40);
    k.n = 1 + pick(40);
    k.ia = 1 + pick(9);
    k.ja = 1 + pick(9);
    k.ic = 1 + pick(9);
    k.jc = 1 + pick(9);
    k.salt_a = 1 + pick(1000);
    k.alpha[0] = re[pick(5)];
    k.alpha[1] = t >= 2 ? im[pick(3)] : 0.0;
    k.beta[0] = re[pick(5)];
    k.beta[1] = t >= 2 ? im[pick(3)] : 0.0;
    if (pick(6) == 0) k.alpha[0] = k.alpha[1] = 0.0;
    /* sub(A) is n x m; with alpha = 0 the source holds NaN (ScaLAPACK does not read it) */
    a = make_matrix(t, &g, k.ia - 1 + k.n + pick(6), k.ja - 1 + k.m + pick(6), k.salt_a,
                    k.alpha[0] == 0.0 && k.alpha[1] == 0.0, own);
    c = make_matrix(t, &g, k.ic - 1 + k.m + pick(6), k.jc - 1 + k.n + pick(6), k.salt_a + 1, 0,
                    own);
    /* PBLAS wants both matrices on one context: C's blocking is its own */
    snprintf(desc, desc_len,
             "p%ctran%s %dx%d alpha (%g, %g) beta (%g, %g) A(%d,%d) of %dx%d in %dx%d blocks, "
             "C(%d,%d) of %dx%d in %dx%d blocks, on %dx%d",
             TYPES[t], t < 2 ? "" : (k.conj ? "c" : "u"), k.m, k.n, k.alpha[0], k.alpha[1],
             k.beta[0], k.beta[1], k.ia, k.ja, a.desc[2], a.desc[3], a.desc[4], a.desc[5], k.ic,
             k.jc, c.desc[2], c.desc[3], c.desc[4], c.desc[5], g.nprow, g.npcol);
    if (g.ctxt >= 0) {
        uint64_t calls = copr_capi_calls();
        call_tran(0, &k, a.ref, a.desc, c.ref, c.desc);
        bad += check_calls(calls, 0, desc, "ScaLAPACK's");
        call_tran(1, &k, a.copr, a.desc, c.copr, c.desc);
        bad += check_calls(calls, 1, desc, "copr's");
        bad += check(t, &c, &g, k.salt_a + 1, expect_tran, &k, desc);
    }
    free_matrix(&a);
    free_matrix(&c);
    free_grid(&g);
    return bad;
}

/* ---- copr_pdgemr2d_batch: up to 4 copies in one call, against Cpdgemr2d copy by copy ---- */
static long batch_case(uint64_t *own, char *desc, size_t desc_len) {
    const int t = 1;
    int count = 1 + pick(4), i, m[4], n[4], ia[4], ja[4], ib[4], jb[4], desca[36], descb[36];
    grid G = make_grid(nprocs, nprocs), ga[4], gb[4];
    copy_case k[4];
    matrix a[4], b[4];
    const double *pa[4];
    double *pb[4];
    long bad = 0;
    size_t at = 0;
    for (i = 0; i < count; i++) {
        ga[i] = make_grid(nprocs, 1 + pick(nprocs));
        gb[i] = make_grid(nprocs, 1 + pick(nprocs));
        k[i].m = pick(6) == 0 ? 0 : 1 + pick(40); /* M = 0: the copy is skipped */
        k[i].n = 1 + pick(40);
        k[i].ia = 1 + pick(9);
        k[i].ja = 1 + pick(9);
        k[i].ib = 1 + pick(9);
        k[i].jb = 1 + pick(9);
        k[i].salt_a = 1 + pick(1000);
        a[i] = make_matrix(t, &ga[i], k[i].ia - 1 + k[i].m + pick(6), k[i].ja - 1 + k[i].n + pick(6),
                           k[i].salt_a, 0, own);
        b[i] = make_matrix(t, &gb[i], k[i].ib - 1 + k[i].m + pick(6), k[i].jb - 1 + k[i].n + pick(6),
                           k[i].salt_a + 1, 0, own);
        m[i] = k[i].m, n[i] = k[i].n, ia[i] = k[i].ia, ja[i] = k[i].ja, ib[i] = k[i].ib,
        jb[i] = k[i].jb;
        memcpy(desca + 9 * i, a[i].desc, sizeof a[i].desc);
        memcpy(descb + 9 * i, b[i].desc, sizeof b[i].desc);
        pa[i] = a[i].copr;
        pb[i] = b[i].copr;
        at += (size_t)snprintf(desc + at, desc_len - at, "%s%dx%d on %dx%d -> %dx%d", i ? ", " : "",
                               k[i].m, k[i].n, ga[i].nprow, ga[i].npcol, gb[i].nprow, gb[i].npcol);
        if (at >= desc_len) at = desc_len - 1;
    }
    snprintf(desc + at, desc_len - at, " (copr_pdgemr2d_batch of %d)", count);
    {
        uint64_t calls = copr_capi_calls();
        for (i = 0; i < count; i++)
            REF(Cpdgemr2d)(m[i], n[i], a[i].ref, ia[i], ja[i], desca + 9 * i, b[i].ref, ib[i],
                           jb[i], descb + 9 * i, G.ctxt);
        bad += check_calls(calls, 0, desc, "ScaLAPACK's");
        copr_pdgemr2d_batch(count, m, n, pa, ia, ja, desca, pb, ib, jb, descb, G.ctxt);
        bad += check_calls(calls, 1, desc, "copr's");
    }
    for (i = 0; i < count; i++) {
        bad += check(t, &b[i], &gb[i], k[i].salt_a + 1, expect_copy, &k[i], desc);
        free_matrix(&a[i]);
        free_matrix(&b[i]);
    }
    for (i = count - 1; i >= 0; i--) {
        free_grid(&gb[i]);
        free_grid(&ga[i]);
    }
    free_grid(&G);
    return bad;
}

/* the best number of elements any placement keeps where they are, over every one-to-one
 * choice of processes for B's grid positions 0 .. pq-1 (brute force); v[r * pq + pos]
 * is how many elements process r holds of A that go to position pos */
/* relabel cases in which MAP moved some of B's grid positions to another process */
static int relabeled_cases;

static long best_kept(const long *v, int pq, int pos, int *used) {
    long best = 0;
    int r;
    if (pos == pq) return 0;
    for (r = 0; r < nprocs; r++) {
        long x;
        if (used[r]) continue;
        used[r] = 1;
        x = v[r * pq + pos] + best_kept(v, pq, pos + 1, used);
        used[r] = 0;
        if (x > best) best = x;
    }
    return best;
}

/* ---- copr_pdgemr2d_relabel: B filled on its grid relabeled; ScaLAPACK's Cpdgemr2d
 * onto a context made from MAP must give the same local arrays, and MAP must keep as
 * many elements in place as the best placement (brute force) ---- */
static long relabel_case(uint64_t *own, char *desc, size_t desc_len) {
    const int t = 1;
    int ictxt, sys, ctx2, p, q, r, c, i, j, held = -1, ld, lr = 0, lc = 0;
    int *map, *a_rank, mine[2];
    grid ga, gb;
    copy_case k;
    matrix a, b;
    long bad = 0, kept = 0, best, *v;
    double *bc, *br;
    size_t lenb;
    Cblacs_get(-1, 0, &sys);
    ictxt = sys;
    Cblacs_gridinit(&ictxt, "R", 1, nprocs); /* ranks of ICTXT = process numbers */
    ga = make_grid(nprocs, 1 + pick(nprocs));
    gb = make_grid(nprocs, 1 + pick(nprocs));
    k.m = 1 + pick(50);
    k.n = 1 + pick(50);
    k.ia = 1 + pick(9);
    k.ja = 1 + pick(9);
    k.ib = k.jb = 1;
    k.salt_a = 1 + pick(1000);
    a = make_matrix(t, &ga, k.ia - 1 + k.m + pick(6), k.ja - 1 + k.n + pick(6), k.salt_a, 0, own);
    b = make_matrix(t, &gb, k.m, k.n, k.salt_a + 1, 0, own); /* for its descriptor */
    p = gb.nprow, q = gb.npcol;
    snprintf(desc, desc_len,
             "copr_pdgemr2d_relabel %dx%d A(%d,%d) of %dx%d in %dx%d blocks on %dx%d, B in %dx%d "
             "blocks on %dx%d",
             k.m, k.n, k.ia, k.ja, a.desc[2], a.desc[3], a.desc[4], a.desc[5], ga.nprow, ga.npcol,
             b.desc[4], b.desc[5], p, q);
    /* every process's buffer fits the largest local matrix, B's source row and column */
    lenb = (size_t)numroc_(&k.m, &b.desc[4], &b.desc[6], &b.desc[6], &p) *
           (size_t)numroc_(&k.n, &b.desc[5], &b.desc[7], &b.desc[7], &q);
    bc = malloc(sizeof(double) * (lenb ? lenb : 1));
    br = malloc(sizeof(double) * (lenb ? lenb : 1));
    for (i = 0; i < (int)lenb; i++) bc[i] = br[i] = PAD;
    map = malloc(sizeof(int) * (size_t)(p * q));
    {
        uint64_t calls = copr_capi_calls();
        copr_pdgemr2d_relabel(k.m, k.n, a.copr, k.ia, k.ja, a.desc, bc, (int)lenb, b.desc, ictxt,
                              map);
        bad += check_calls(calls, 1, desc, "copr's");
    }
    /* MAP: distinct processes, the same everywhere */
    for (i = 0; i < p * q; i++) {
        int lo, hi;
        MPI_Allreduce(&map[i], &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&map[i], &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (lo != hi || map[i] < 0 || map[i] >= nprocs) bad++;
        for (j = 0; j < i; j++) bad += map[j] == map[i];
        if (map[i] == me) held = i;
    }
    if (bad) {
        fprintf(stderr, "process %d: %s: MAP is not one process per position\n", me, desc);
        goto done;
    }
    /* copr's B against the formula, at the position this process was given */
    if (held >= 0) {
        r = held % p, c = held / p;
        lr = numroc_(&k.m, &b.desc[4], &r, &b.desc[6], &p);
        lc = numroc_(&k.n, &b.desc[5], &c, &b.desc[7], &q);
    }
    ld = lr > 1 ? lr : 1;
    for (j = 0; j < lc; j++)
        for (i = 0; i < lr; i++) {
            int gi = l2g(i, b.desc[4], held % p, b.desc[6], p);
            int gj = l2g(j, b.desc[5], held / p, b.desc[7], q);
            if (bc[i + (size_t)j * ld] != value(gi + k.ia - 1, gj + k.ja - 1, 0, k.salt_a)) bad++;
        }
    /* ScaLAPACK onto the relabeled grid: a context from MAP (usermap, leading dim P) */
    Cblacs_get(-1, 0, &ctx2);
    Cblacs_gridmap(&ctx2, map, p, p, q);
    {
        int d2[9];
        memcpy(d2, b.desc, sizeof d2);
        d2[1] = held >= 0 ? ctx2 : -1;
        d2[8] = ld;
        REF(Cpdgemr2d)(k.m, k.n, a.ref, k.ia, k.ja, a.desc, br, 1, 1, d2, ictxt);
    }
    for (i = 0; i < (int)lenb; i++) bad += bc[i] != br[i];
    if (held >= 0) Cblacs_gridexit(ctx2);
    /* optimality: v[process][position] of the elements of sub(A) = B */
    a_rank = malloc(sizeof(int) * 2 * (size_t)nprocs);
    mine[0] = ga.ctxt >= 0 ? ga.myrow * ga.npcol + ga.mycol : -1;
    mine[1] = 0;
    MPI_Allgather(mine, 2, MPI_INT, a_rank, 2, MPI_INT, MPI_COMM_WORLD);
    v = calloc((size_t)(nprocs * p * q), sizeof(long));
    for (j = 0; j < k.n; j++)
        for (i = 0; i < k.m; i++) {
            int ai = i + k.ia - 1, aj = j + k.ja - 1, owner = -1, x;
            int apos = ((ai / a.desc[4] + a.desc[6]) % ga.nprow) * ga.npcol +
                       (aj / a.desc[5] + a.desc[7]) % ga.npcol;
            int bpos = (i / b.desc[4] + b.desc[6]) % p + ((j / b.desc[5] + b.desc[7]) % q) * p;
            for (x = 0; x < nprocs; x++)
                if (a_rank[2 * x] == apos) owner = x;
            v[owner * p * q + bpos]++;
        }
    for (i = 0; i < p * q; i++) kept += v[map[i] * p * q + i];
    /* whether MAP moved B at all: B's own grid position of every process */
    mine[0] = gb.ctxt >= 0 ? gb.myrow + gb.mycol * p : -1;
    MPI_Allgather(mine, 2, MPI_INT, a_rank, 2, MPI_INT, MPI_COMM_WORLD);
    for (i = 0; i < nprocs; i++)
        if (a_rank[2 * i] >= 0 && map[a_rank[2 * i]] != i) {
            relabeled_cases++;
            break;
        }
    {
        int *used = calloc((size_t)nprocs, sizeof(int));
        best = best_kept(v, p * q, 0, used);
        free(used);
    }
    if (kept != best) {
        fprintf(stderr, "process %d: %s: MAP keeps %ld elements in place, the best %ld\n", me,
                desc, kept, best);
        bad++;
    }
    free(v);
    free(a_rank);
done:
    free(map);
    free(bc);
    free(br);
    free_matrix(&a);
    free_matrix(&b);
    free_grid(&gb);
    free_grid(&ga);
    Cblacs_gridexit(ictxt);
    return bad;
}

/* ---- bad arguments: every process returns, counts one error, changes nothing ---- */
static int bad_calls; /* how many error_cases made */
static long error_cases(void) {
    grid g = make_grid(nprocs, nprocs);
    uint64_t own = 99;
    long bad = 0;
    int t = 1, i;
    matrix a = make_matrix(t, &g, 20, 17, 3, 0, &own), b = make_matrix(t, &g, 19, 18, 4, 0, &own);
    int saved_lld = b.desc[8];
    double one = 1.0;
    int m = 10, n = 9, ia = 2, ja = 3, ic = 1, jc = 1;
    /* what each bad call must print on standard error (on the last process only for
     * kind 1: the others return quietly) */
    struct {
        const char *what, *message;
        int kind;
    } cases[] = {
        {"IA = 0", "copr_pdgemr2d: parameter 4 (IA) had an illegal value", 0},
        {"LLD too small on the last process only",
         "copr_pdgemr2d: parameter 10 (DESCB) had an illegal value", 1},
        {"A and C on different contexts", "copr_pdtran_: parameter 12 (DESCC)", 2},
        {"negative M", "copr_pdtran_: parameter 1 (M) had an illegal value", 3},
        {"B is A", "copr_pdgemr2d: parameter 7 (B) had an illegal value", 4},
        {"IA = 0 in a batch", "copr_pdgemr2d_batch: parameter 5 (IA[0]) had an illegal value", 5},
        {"negative LENB", "copr_pdgemr2d_relabel: parameter 8 (LENB) had an illegal value", 6},
        {"LENB = 1: too small for the part some process is given",
         "copr_pdgemr2d_relabel on process", 7},
        {"a null M array in a batch on the last process only",
         "copr_pdgemr2d_batch: parameter 2 (M) had an illegal value", 8},
        {"COUNT 0 on the last process, 1 on the others",
         "copr_pdgemr2d_batch: processes 0 and", 9},
        /* a negative size is refused before the return on an empty copy */
        {"M = 0, N = -1", "copr_pdgemr2d: parameter 2 (N) had an illegal value", 10},
        {"M = 0, N = -1 (Fortran)", "copr_pdgemr2d_: parameter 2 (N) had an illegal value", 11},
        {"M = -1, N = 0 in a batch",
         "copr_pdgemr2d_batch: parameter 2 (M[0]) had an illegal value", 12},
        {"M = 0, N = -1 relabeled",
         "copr_pdgemr2d_relabel: parameter 2 (N) had an illegal value", 13},
        {"M = N = 0, LENB = -1 relabeled",
         "copr_pdgemr2d_relabel: parameter 8 (LENB) had an illegal value", 14},
        {"M = 0, N = -1 transposed", "copr_pdtran_: parameter 2 (N) had an illegal value", 15},
    };
    for (i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++) {
        uint64_t before = copr_capi_errors();
        int kind = cases[i].kind, saved_stderr, printed;
        /* who prints the message: every process, or the last one (its own bad
         * argument); a disagreement (it needs two processes) is printed by the first
         * process of the context, once */
        int printer = kind == 1 || kind == 8 ? nprocs - 1 : -1;
        if (kind == 9 && nprocs == 1) continue;
        bad_calls++;
        saved_stderr = dup(2);
        FILE *log = tmpfile();
        char text[4096];
        size_t got;
        fflush(stderr);
        dup2(fileno(log), 2);
        if (kind == 1 && me == nprocs - 1) b.desc[8] = b.locr >= 2 ? b.locr - 1 : 0;
        if (kind == 0) COPR_C(pdgemr2d)(m, n, a.copr, 0, ja, a.desc, b.copr, 1, 1, b.desc, g.ctxt);
        if (kind == 1) COPR_C(pdgemr2d)(m, n, a.copr, ia, ja, a.desc, b.copr, 1, 1, b.desc, g.ctxt);
        if (kind == 2) {
            int other[9];
            memcpy(other, b.desc, sizeof other);
            other[1] = g.ctxt + 1000;
            COPR_F(pdtran)(&m, &n, &one, a.copr, &ia, &ja, a.desc, &one, b.copr, &ic, &jc, other);
        }
        if (kind == 4) COPR_C(pdgemr2d)(m, n, a.copr, 1, 1, a.desc, a.copr, 2, 1, a.desc, g.ctxt);
        if (kind == 5) {
            const double *pa = a.copr;
            double *pb = b.copr;
            int zero = 0, first = 1;
            copr_pdgemr2d_batch(1, &m, &n, &pa, &zero, &ja, a.desc, &pb, &first, &first, b.desc,
                                g.ctxt);
        }
        if (kind == 8 || kind == 9) {
            const double *pa = a.copr;
            double *pb = b.copr;
            int first = 1, last = me == nprocs - 1;
            copr_pdgemr2d_batch(kind == 9 && last ? 0 : 1, kind == 8 && last ? NULL : &m, &n,
                                &pa, &ia, &ja, a.desc, &pb, &first, &first, b.desc, g.ctxt);
        }
        if (kind == 6 || kind == 7) {
            int map[64], whole[9]; /* B's first m x n as a matrix of its own */
            memcpy(whole, b.desc, sizeof whole);
            whole[2] = m, whole[3] = n;
            copr_pdgemr2d_relabel(m, n, a.copr, ia, ja, a.desc, b.copr, kind == 6 ? -1 : 1, whole,
                                  g.ctxt, map);
        }
        if (kind >= 10) {
            int zero = 0, neg = -1, first = 1, map[64], whole[9];
            const double *pa = a.copr;
            double *pb = b.copr;
            memcpy(whole, b.desc, sizeof whole);
            whole[2] = 0, whole[3] = kind == 13 ? -1 : 0;
            if (kind == 10)
                COPR_C(pdgemr2d)(0, -1, a.copr, ia, ja, a.desc, b.copr, 1, 1, b.desc, g.ctxt);
            if (kind == 11)
                COPR_F(pdgemr2d)(&zero, &neg, a.copr, &ia, &ja, a.desc, b.copr, &first, &first,
                                 b.desc, &g.ctxt);
            if (kind == 12)
                copr_pdgemr2d_batch(1, &neg, &zero, &pa, &ia, &ja, a.desc, &pb, &first, &first,
                                    b.desc, g.ctxt);
            if (kind == 13 || kind == 14)
                copr_pdgemr2d_relabel(0, kind == 13 ? -1 : 0, a.copr, ia, ja, a.desc, b.copr,
                                      kind == 13 ? (int)b.len : -1, whole, g.ctxt, map);
            if (kind == 15)
                COPR_F(pdtran)(&zero, &neg, &one, a.copr, &ia, &ja, a.desc, &one, b.copr, &ic,
                               &jc, b.desc);
        }
        if (kind == 3) {
            int neg = -1;
            COPR_F(pdtran)(&neg, &n, &one, a.copr, &ia, &ja, a.desc, &one, b.copr, &ic, &jc, b.desc);
        }
        b.desc[8] = saved_lld;
        fflush(stderr);
        dup2(saved_stderr, 2);
        close(saved_stderr);
        rewind(log);
        got = fread(text, 1, sizeof text - 1, log);
        text[got] = 0;
        fclose(log);
        printed = strstr(text, cases[i].message) != NULL;
        if (kind == 4) {
            /* found where the parts of A and B this process touches share memory: on
             * some processes, depending on the blocks; on one at least */
            int anywhere;
            MPI_Allreduce(&printed, &anywhere, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            printed = anywhere;
        }
        if (kind == 9) {
            int printers;
            MPI_Allreduce(&printed, &printers, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            printed = printers == 1;
        }
        if (printed != (printer < 0 || me == printer)) {
            fprintf(stderr, "process %d: %s: expected %s\"%s\" on standard error, got \"%s\"\n", me,
                    cases[i].what, printed ? "no " : "", cases[i].message, text);
            bad++;
        }
        if (copr_capi_errors() != before + 1) {
            fprintf(stderr, "process %d: %s: %llu errors counted, expected 1\n", me,
                    cases[i].what, (unsigned long long)(copr_capi_errors() - before));
            bad++;
        }
        if (memcmp(b.copr, b.ref, b.len * elem_size(t)) != 0 ||
            memcmp(a.copr, a.ref, a.len * elem_size(t)) != 0) {
            fprintf(stderr, "process %d: %s: the data changed\n", me, cases[i].what);
            bad++;
        }
    }
    free_matrix(&a);
    free_matrix(&b);
    free_grid(&g);
    return bad;
}

int main(int argc, char **argv) {
    int cases = argc > 1 ? atoi(argv[1]) : 48, k, failed_cases = 0;
    int extra = cases / 8 > 4 ? cases / 8 : 4; /* batched and relabeled cases, each */
    long total_bad = 0;
    uint64_t own;
    char desc[512];
    MPI_Init(&argc, &argv);
    Cblacs_pinfo(&me, &nprocs);
    own = 1000003u * (uint64_t)(me + 1);
    rng_state = 20261123u + (uint64_t)nprocs;
    for (k = 0; k < cases; k++) {
        int t = k % 4, kind = (k / 4) % 3;
        long bad, all;
        desc[0] = 0;
        bad = kind < 2 ? gemr2d_case(t, kind == 1, &own, desc, sizeof desc)
                       : tran_case_run(t, &own, desc, sizeof desc);
        MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (all) {
            failed_cases++;
            if (me == 0) fprintf(stderr, "case %d FAILED (%ld mismatches): %s\n", k, all, desc);
        }
        total_bad += all;
    }
    /* the batched and the relabeled entry point (double precision) */
    for (k = 0; k < 2 * extra; k++) {
        long bad, all;
        desc[0] = 0;
        bad = k % 2 ? relabel_case(&own, desc, sizeof desc) : batch_case(&own, desc, sizeof desc);
        MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (all) {
            failed_cases++;
            if (me == 0) fprintf(stderr, "extra case %d FAILED (%ld mismatches): %s\n", k, all, desc);
        }
    }
    if (me == 0)
        printf("batched and relabeled entry points: %d cases each; MAP moved B in %d of the "
               "relabeled ones\n",
               extra, relabeled_cases);
    {
        long bad = error_cases(), all;
        MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (all) failed_cases++;
        if (me == 0)
            printf("error cases (%d bad calls): %s\n", bad_calls,
                   all ? "FAILED"
                       : "every process returned, counted it, changed nothing, and the "
                         "processes that found it named the parameter");
    }
    if (me == 0)
        printf("%s vs ScaLAPACK's own on %d processes: %d passed, %d failed (copr served %llu "
               "calls on process 0)\n",
#ifdef COPR_UNPREFIXED
               "ScaLAPACK's names relinked to libcopr_scalapack",
#else
               "copr C entry points",
#endif
               nprocs, cases + 2 * extra + 1 - failed_cases, failed_cases,
               (unsigned long long)copr_capi_calls());
    MPI_Finalize();
    return failed_cases ? 1 : 0;
}
