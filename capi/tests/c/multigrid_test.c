/* Redistributions over several overlapping BLACS grids in one job, the way
 * ScaLAPACK's own REDIST test driver runs GEMR2D.dat: every case makes its grids
 * (over the first processes, or over random subsets in random order), copies with
 * pdgemr2d_ and transposes with pdtran_, checks every element, and releases the grids;
 * then the program calls MPI_Finalize, which must return. It knows nothing of copr:
 * it is linked with ScaLAPACK (and libcopr_scalapack ahead of it, or run with it in
 * LD_PRELOAD).
 *
 *   mpirun -n P multigrid_test cases       the REDIST-like cases
 *   mpirun -n P multigrid_test stress K [S] K random calls over random grids and subsets
 *                                          (S: another seed)
 *   mpirun -n P multigrid_test badctxt     a context invalid on exactly one process
 *   mpirun -n P multigrid_test badsub      contexts over subsets, invalid on one process
 *   mpirun -n P multigrid_test allbadsub   ... invalid on every process of the subset
 *   mpirun -n P multigrid_test descriptors descriptors as ScaLAPACK and PBLAS read them
 *
 * badctxt, badsub and allbadsub need copr (ScaLAPACK aborts on a bad context): every process must return
 * from each call with its data unchanged, and copr's error counter (looked up with
 * dlsym) must have grown by one per call on every process.
 *
 * Exit status 1 on a wrong element, 2 on a usage error; a hang is caught by the
 * caller's time limit. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blacs.h"

static int me, np;

/* the same pseudo-random sequence on every process */
static uint64_t seed = 0x9e3779b97f4a7c15ull;
static int rnd(int n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((seed >> 33) % (uint64_t)n);
}

typedef struct {
    int ctxt, p, q, row, col; /* row = -1: not in the grid */
} grid;

/* a p x q grid of processes map[0 .. p*q-1] (row-major), over all processes */
static grid make_grid(const int *map, int p, int q) {
    grid g = {0, p, q, -1, -1};
    int umap[64], i, j, pp, qq;
    for (i = 0; i < p; i++)
        for (j = 0; j < q; j++) umap[i + j * p] = map[i * q + j];
    Cblacs_get(0, 0, &g.ctxt);
    Cblacs_gridmap(&g.ctxt, umap, p, p, q);
    Cblacs_gridinfo(g.ctxt, &pp, &qq, &g.row, &g.col);
    if (g.row < 0 || pp != p || qq != q) g.row = g.col = -1;
    return g;
}
static grid first_procs(int p, int q) {
    int map[64], k;
    for (k = 0; k < p * q; k++) map[k] = k;
    return make_grid(map, p, q);
}
static void release(grid g) {
    if (g.row >= 0) Cblacs_gridexit(g.ctxt);
}

typedef struct {
    int desc[9], locr, locc;
    grid g;
    double *x;
} matrix;

static int l2g(int l, int nb, int p, int src, int np_) {
    return ((l / nb) * np_ + (p - src + np_) % np_) * nb + l % nb;
}
static double value(int i, int j, int salt) {
    return (double)((i * 37 + j * 11 + salt * 101) % 2039);
}

/* an m x n matrix in mb x nb blocks from (rsrc, csrc) on g, holding value(salt), with
 * `pad` spare rows in its local leading dimension */
static matrix make(grid g, int m, int n, int mb, int nb, int rsrc, int csrc, int salt, int pad) {
    matrix a;
    int i, j;
    memset(&a, 0, sizeof a);
    a.g = g;
    int desc[9] = {1, g.row >= 0 ? g.ctxt : -1, m, n, mb, nb, rsrc, csrc, 1};
    if (g.row >= 0) {
        a.locr = numroc_(&m, &mb, &g.row, &rsrc, &g.p);
        a.locc = numroc_(&n, &nb, &g.col, &csrc, &g.q);
        desc[8] = (a.locr > 1 ? a.locr : 1) + pad;
    }
    memcpy(a.desc, desc, sizeof desc);
    a.x = malloc(sizeof(double) * (size_t)desc[8] * (size_t)(a.locc > 1 ? a.locc : 1));
    for (j = 0; j < a.locc; j++)
        for (i = 0; i < desc[8]; i++)
            a.x[i + (size_t)j * desc[8]] =
                i < a.locr ? value(l2g(i, mb, g.row, rsrc, g.p), l2g(j, nb, g.col, csrc, g.q), salt)
                           : -1.0;
    return a;
}

/* global (i, j) of local (li, lj) of x */
static void global(const matrix *x, int li, int lj, int *i, int *j) {
    *i = l2g(li, x->desc[4], x->g.row, x->desc[6], x->g.p);
    *j = l2g(lj, x->desc[5], x->g.col, x->desc[7], x->g.q);
}

static long failures;
static void fail(const char *what, int k, int i, int j, double got, double want) {
    if (failures++ < 5)
        fprintf(stderr, "process %d, %s case %d: element (%d, %d) is %g, not %g\n", me, what, k, i,
                j, got, want);
}

/* every element of x holds value(i, j, salt); else `what` fails, case k */
static void holds(const char *what, int k, const matrix *x, int salt) {
    int li, lj, i, j;
    for (lj = 0; lj < x->locc; lj++)
        for (li = 0; li < x->locr; li++) {
            global(x, li, lj, &i, &j);
            if (x->x[li + (size_t)lj * x->desc[8]] != value(i, j, salt))
                fail(what, k, i, j, x->x[li + (size_t)lj * x->desc[8]], value(i, j, salt));
        }
}

/* B(ib.., jb..) <- A(ia.., ja..) for an m x n submatrix; every other element of B keeps
 * value(salt_b); A is unchanged */
static void gemr2d_case(int k, grid ga, grid gb, int call, int ictxt, int m, int n, int mba, int nba,
                        int mbb, int nbb, int pad) {
    int ma = m + rnd(5), na = n + rnd(5), mbm = m + rnd(5), nbm = n + rnd(5);
    int ia = 1 + (ma - m), ja = 1 + (na - n), ib = 1 + (mbm - m), jb = 1 + (nbm - n);
    int rsa = rnd(ga.p), csa = rnd(ga.q), rsb = rnd(gb.p), csb = rnd(gb.q);
    if (!call) return; /* not in ICTXT: this process takes no part (random draws made) */
    matrix a = make(ga, ma, na, mba, nba, rsa, csa, 1, pad);
    matrix b = make(gb, mbm, nbm, mbb, nbb, rsb, csb, 2, pad);
    int li, lj, i, j;
    pdgemr2d_(&m, &n, a.x, &ia, &ja, a.desc, b.x, &ib, &jb, b.desc, &ictxt);
    for (lj = 0; lj < b.locc; lj++)
        for (li = 0; li < b.locr; li++) {
            global(&b, li, lj, &i, &j);
            int in = i >= ib - 1 && i < ib - 1 + m && j >= jb - 1 && j < jb - 1 + n;
            double want = in ? value(i - (ib - 1) + (ia - 1), j - (jb - 1) + (ja - 1), 1)
                             : value(i, j, 2);
            double got = b.x[li + (size_t)lj * b.desc[8]];
            if (got != want) fail("pdgemr2d_", k, i, j, got, want);
        }
    holds("pdgemr2d_ (A changed)", k, &a, 1);
    free(a.x);
    free(b.x);
}

/* C <- 2 A^T + 0.5 C on grid g (A n x m, C m x n, the whole matrices) */
static void tran_case(int k, grid g, int m, int n, int mb, int nb, int mbc, int nbc) {
    double alpha = 2.0, beta = 0.5;
    int one = 1, li, lj, i, j;
    int rsa = rnd(g.p), csa = rnd(g.q), rsc = rnd(g.p), csc = rnd(g.q);
    if (g.row < 0) return; /* PBLAS: only the grid's processes call */
    matrix a = make(g, n, m, mb, nb, rsa, csa, 3, 0);
    matrix c = make(g, m, n, mbc, nbc, rsc, csc, 4, 1);
    pdtran_(&m, &n, &alpha, a.x, &one, &one, a.desc, &beta, c.x, &one, &one, c.desc);
    for (lj = 0; lj < c.locc; lj++)
        for (li = 0; li < c.locr; li++) {
            global(&c, li, lj, &i, &j);
            double want = 2.0 * value(j, i, 3) + 0.5 * value(i, j, 4);
            double got = c.x[li + (size_t)lj * c.desc[8]];
            if (got != want) fail("pdtran_", k, i, j, got, want);
        }
    free(a.x);
    free(c.x);
}

/* grid shapes of GEMR2D.dat (at most 4 processes) and a few more when there are more */
static void shape(int *p, int *q) {
    static const int shapes[][2] = {{1, 4}, {4, 1}, {2, 2}, {1, 3}, {3, 1}, {1, 2},
                                    {2, 1}, {1, 1}, {2, 3}, {3, 2}, {1, 5}, {1, 6}};
    for (;;) {
        int s = rnd((int)(sizeof shapes / sizeof shapes[0]));
        if (shapes[s][0] * shapes[s][1] <= np) {
            *p = shapes[s][0];
            *q = shapes[s][1];
            return;
        }
    }
}

/* GEMR2D.dat-like: 90 cases, A and B on grids of the first processes, ICTXT a grid of
 * all processes; then a transpose on each grid */
static void cases(grid all) {
    int k;
    for (k = 0; k < 90; k++) {
        int pa, qa, pb, qb, size = 100 * (2 + k / 30);
        shape(&pa, &qa);
        shape(&pb, &qb);
        grid ga = first_procs(pa, qa), gb = first_procs(pb, qb);
        gemr2d_case(k, ga, gb, 1, all.ctxt, size - rnd(7), size - rnd(7), 1 + rnd(16),
                    1 + rnd(16), 1 + rnd(16), 1 + rnd(16), k % 3);
        tran_case(k, ga, size - rnd(7), size - rnd(9), 1 + rnd(16), 1 + rnd(16), 1 + rnd(16),
                  1 + rnd(16));
        tran_case(k, gb, size - rnd(7), size - rnd(9), 1 + rnd(16), 1 + rnd(16), 1 + rnd(16),
                  1 + rnd(16));
        release(ga);
        release(gb);
    }
}

/* a random subset of `count` processes in random order */
static void subset(int *map, int count) {
    int perm[64], k;
    for (k = 0; k < np; k++) perm[k] = k;
    for (k = np - 1; k > 0; k--) {
        int r = rnd(k + 1), t = perm[k];
        perm[k] = perm[r];
        perm[r] = t;
    }
    memcpy(map, perm, sizeof(int) * (size_t)count);
}

/* random grids over random subsets: the context of the copy holds both grids' processes
 * (a grid of all, or of the union in a random order), some grids kept across calls */
static void stress(int calls) {
    grid kept[4];
    int nkept = 0, k, map[64];
    for (k = 0; k < calls; k++) {
        int pa, qa, pb, qb, c, x, u = 0, in[64] = {0}, umap[64];
        shape(&pa, &qa);
        shape(&pb, &qb);
        subset(map, pa * qa);
        grid ga = make_grid(map, pa, qa);
        for (c = 0; c < pa * qa; c++) in[map[c]] = 1;
        subset(map, pb * qb);
        grid gb = make_grid(map, pb, qb);
        for (c = 0; c < pb * qb; c++) in[map[c]] = 1;
        /* the union of both grids' processes, shuffled: the context of the copy */
        subset(map, np);
        for (c = 0; c < np; c++)
            if (in[map[c]]) umap[u++] = map[c];
        grid gu = make_grid(umap, 1, u);
        int m = 1 + rnd(120), n = 1 + rnd(120);
        int mba = 1 + rnd(12), nba = 1 + rnd(12), mbb = 1 + rnd(12), nbb = 1 + rnd(12);
        gemr2d_case(k, ga, gb, gu.row >= 0, gu.ctxt, m, n, mba, nba, mbb, nbb, rnd(2));
        x = rnd(3);
        if (x == 0) tran_case(k, ga, 1 + rnd(70), 1 + rnd(70), 1 + rnd(8), 1 + rnd(8),
                              1 + rnd(8), 1 + rnd(8));
        if (x == 1) tran_case(k, gb, 1 + rnd(70), 1 + rnd(70), 1 + rnd(8), 1 + rnd(8),
                              1 + rnd(8), 1 + rnd(8));
        release(gu);
        /* keep some grids alive across calls, release others at once */
        if (nkept < 4 && rnd(4) == 0)
            kept[nkept++] = ga;
        else
            release(ga);
        release(gb);
        if (nkept == 4 && rnd(8) == 0) {
            for (c = 0; c < nkept; c++) release(kept[c]);
            nkept = 0;
        }
    }
    for (k = 0; k < nkept; k++) release(kept[k]);
}

/* copr's error counter (copr_capi_errors); exits with 2 when copr is not loaded */
typedef uint64_t (*error_counter)(void);
static error_counter copr_errors(const char *mode) {
    error_counter errors = (error_counter)dlsym(RTLD_DEFAULT, "copr_capi_errors");
    if (!errors) {
        if (me == 0) fprintf(stderr, "%s: copr is not loaded (copr_capi_errors)\n", mode);
        exit(2);
    }
    return errors;
}

/* after case k of `mode` with a bad context: copr counted one error for pdgemr2d_ and
 * one for pdtran_ (gemr, tran), and B and C kept their values (salts 2 and 4) */
static void bad_case_checked(const char *mode, int k, uint64_t gemr, uint64_t tran,
                             const matrix *b, const matrix *c) {
    char what[64];
    if (gemr != 1 || tran != 1) {
        failures++;
        fprintf(stderr, "process %d, %s case %d: copr counted %llu and %llu errors, not 1\n", me,
                mode, k, (unsigned long long)gemr, (unsigned long long)tran);
    }
    snprintf(what, sizeof what, "%s pdgemr2d_ (B changed)", mode);
    holds(what, k, b, 2);
    snprintf(what, sizeof what, "%s pdtran_ (C changed)", mode);
    holds(what, k, c, 4);
}

/* a context invalid on exactly one process: every process returns, nothing changes,
 * and copr counts one error per call on every process */
static void badctxt(grid all) {
    error_counter errors = copr_errors("badctxt");
    int k;
    for (k = 0; k < 2 * np; k++) {
        int who = k % np, pa, qa, pb, qb, one = 1;
        shape(&pa, &qa);
        shape(&pb, &qb);
        grid ga = first_procs(pa, qa), gb = first_procs(pb, qb);
        uint64_t before = errors();
        int m = 20 + rnd(30), n = 20 + rnd(30);
        matrix a = make(ga, m, n, 1 + rnd(8), 1 + rnd(8), 0, 0, 1, 0);
        matrix b = make(gb, m, n, 1 + rnd(8), 1 + rnd(8), 0, 0, 2, 0);
        int ictxt = all.ctxt;
        if (me == who) ictxt = all.ctxt + 1000; /* not a context */
        pdgemr2d_(&m, &n, a.x, &one, &one, a.desc, b.x, &one, &one, b.desc, &ictxt);
        uint64_t gemr = errors() - before;
        /* pdtran_ on A's grid with DESCA's context invalid on one of its processes */
        uint64_t tran = 1;
        matrix c = make(ga, n, m, 3, 2, 0, 0, 4, 0);
        if (ga.row >= 0) {
            double alpha = 1.0, beta = 0.0;
            int saved = a.desc[1];
            if (me == who % (ga.p * ga.q)) a.desc[1] = ga.ctxt + 1000;
            before = errors();
            pdtran_(&n, &m, &alpha, a.x, &one, &one, a.desc, &beta, c.x, &one, &one, c.desc);
            tran = errors() - before;
            a.desc[1] = saved;
        }
        bad_case_checked("badctxt", k, gemr, tran, &b, &c);
        free(a.x);
        free(b.x);
        free(c.x);
        release(ga);
        release(gb);
    }
}

/* contexts over a random subset of the processes (the others make the grids and call
 * nothing), invalid on one process of the subset or, with all_bad, on every one: every
 * process of the subset returns from each call with its data unchanged and copr counts
 * one error per call there (with all_bad each waits COPR_CONTEXT_WAIT seconds for a
 * group that expects it, and none does) */
static void badsub(int all_bad) {
    error_counter errors = copr_errors("badsub");
    int k, map[64];
    if (np < 3) {
        if (me == 0) fprintf(stderr, "badsub: needs 3 processes or more\n");
        exit(2);
    }
    for (k = 0; k < 2 * np; k++) {
        int s = 2 + rnd(np - 2), one = 1;
        subset(map, s);
        int who = map[rnd(s)], bad = all_bad || me == who;
        grid ga = make_grid(map, 1, s), gb = make_grid(map, s, 1), gu = make_grid(map, s, 1);
        int m = 20 + rnd(30), n = 20 + rnd(30);
        matrix a = make(ga, m, n, 1 + rnd(8), 1 + rnd(8), 0, 0, 1, 0);
        matrix b = make(gb, m, n, 1 + rnd(8), 1 + rnd(8), 0, 0, 2, 0);
        matrix c = make(ga, n, m, 3, 2, 0, 0, 4, 0);
        uint64_t gemr = 1, tran = 1, before;
        if (gu.row >= 0) {
            int ictxt = bad ? gu.ctxt + 1000 : gu.ctxt; /* not a context */
            before = errors();
            pdgemr2d_(&m, &n, a.x, &one, &one, a.desc, b.x, &one, &one, b.desc, &ictxt);
            gemr = errors() - before;
        }
        if (ga.row >= 0) {
            /* both of pdtran_'s contexts invalid: no other context names the group */
            double alpha = 1.0, beta = 0.0;
            int sa = a.desc[1], sc = c.desc[1];
            if (bad) a.desc[1] = c.desc[1] = ga.ctxt + 1000;
            before = errors();
            pdtran_(&n, &m, &alpha, a.x, &one, &one, a.desc, &beta, c.x, &one, &one, c.desc);
            tran = errors() - before;
            a.desc[1] = sa;
            c.desc[1] = sc;
        }
        bad_case_checked("badsub", k, gemr, tran, &b, &c);
        free(a.x);
        free(b.x);
        free(c.x);
        release(ga);
        release(gb);
        release(gu);
    }
}

/* descriptors as ScaLAPACK and PBLAS accept them: pdgemr2d_ ignores DTYPE (here
 * garbage on every process but the first), pdtran_ takes PBLAS's 11-entry descriptors
 * (DTYPE = 2, first block IMB x INB); with copr loaded, a DTYPE PBLAS rejects is an
 * error on every process and C is unchanged */
static void descriptors(grid all) {
    uint64_t (*errors)(void) = (uint64_t(*)(void))dlsym(RTLD_DEFAULT, "copr_capi_errors");
    int k, li, lj, i, j, one = 1;
    for (k = 0; k < 12; k++) {
        int pa, qa, pb, qb;
        shape(&pa, &qa);
        shape(&pb, &qb);
        grid ga = first_procs(pa, qa), gb = first_procs(pb, qb);
        int m = 10 + rnd(60), n = 10 + rnd(60), mba = 1 + rnd(8), nba = 1 + rnd(8);
        int mbb = 1 + rnd(8), nbb = 1 + rnd(8), rs = rnd(ga.p), cs = rnd(ga.q);
        matrix a = make(ga, m, n, mba, nba, rs, cs, 1, 1);
        matrix b = make(gb, m, n, mbb, nbb, 0, 0, 2, 0);
        if (me != 0) a.desc[0] = b.desc[0] = 12345 + k; /* never read by pdgemr2d_ */
        pdgemr2d_(&m, &n, a.x, &one, &one, a.desc, b.x, &one, &one, b.desc, &all.ctxt);
        holds("pdgemr2d_ (DTYPE unset)", k, &b, 1);
        if (ga.row >= 0) {
            /* C (n x m) <- 2 A^T + 0.5 C with 11-entry descriptors */
            double alpha = 2.0, beta = 0.5;
            matrix c = make(ga, n, m, nba, mba, 0, 0, 4, 0);
            int da[11] = {2, ga.ctxt, m, n, mba, nba, mba, nba, rs, cs, a.desc[8]};
            int dc[11] = {2, ga.ctxt, n, m, nba, mba, nba, mba, 0, 0, c.desc[8]};
            pdtran_(&n, &m, &alpha, a.x, &one, &one, da, &beta, c.x, &one, &one, dc);
            for (lj = 0; lj < c.locc; lj++)
                for (li = 0; li < c.locr; li++) {
                    global(&c, li, lj, &i, &j);
                    double want = 2.0 * value(j, i, 1) + 0.5 * value(i, j, 4);
                    if (c.x[li + (size_t)lj * c.desc[8]] != want)
                        fail("pdtran_ (DTYPE = 2)", k, i, j, c.x[li + (size_t)lj * c.desc[8]], want);
                }
            if (errors) {
                uint64_t before = errors();
                int saved = dc[0];
                dc[0] = 3; /* PBLAS: illegal descriptor type */
                pdtran_(&n, &m, &alpha, a.x, &one, &one, da, &beta, c.x, &one, &one, dc);
                dc[0] = saved;
                if (errors() - before != 1) {
                    failures++;
                    fprintf(stderr, "process %d, descriptors case %d: DTYPE = 3 not refused\n",
                            me, k);
                }
                for (lj = 0; lj < c.locc; lj++)
                    for (li = 0; li < c.locr; li++) {
                        global(&c, li, lj, &i, &j);
                        double want = 2.0 * value(j, i, 1) + 0.5 * value(i, j, 4);
                        if (c.x[li + (size_t)lj * c.desc[8]] != want)
                            fail("pdtran_ (DTYPE = 3 changed C)", k, i, j,
                                 c.x[li + (size_t)lj * c.desc[8]], want);
                    }
            }
            free(c.x);
        }
        free(a.x);
        free(b.x);
        release(ga);
        release(gb);
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    long all_failures;
    MPI_Init(&argc, &argv);
    Cblacs_pinfo(&me, &np);
    if (np > 64) {
        if (me == 0) fprintf(stderr, "multigrid_test: at most 64 processes\n");
        MPI_Finalize();
        return 2;
    }
    grid all = first_procs(np, 1);
    if (!strcmp(mode, "cases"))
        cases(all);
    else if (!strcmp(mode, "stress") && argc > 2 && atoi(argv[2]) > 0) {
        if (argc > 3) seed += (uint64_t)strtoull(argv[3], NULL, 10);
        stress(atoi(argv[2]));
    }
    else if (!strcmp(mode, "badctxt"))
        badctxt(all);
    else if (!strcmp(mode, "badsub"))
        badsub(0);
    else if (!strcmp(mode, "allbadsub"))
        badsub(1);
    else if (!strcmp(mode, "descriptors"))
        descriptors(all);
    else {
        if (me == 0) fprintf(stderr, "usage: multigrid_test cases | stress K [S] | badctxt | badsub | allbadsub | descriptors\n");
        MPI_Finalize();
        return 2;
    }
    release(all);
    MPI_Allreduce(&failures, &all_failures, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0)
        printf("multigrid_test %s on %d processes: %ld wrong elements\n", mode, np, all_failures);
    MPI_Finalize();
    return all_failures ? 1 : 0;
}
