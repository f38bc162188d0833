/* ScaLAPACK's own redistribution routines, reachable under ref_ names in a program
 * whose ScaLAPACK names (Cpdgemr2d, pdgemr2d_, pdtran_, ...) are copr's: the program
 * linked with libcopr_scalapack ahead of libscalapack-openmpi, or with it preloaded.
 *
 * Each ref_ routine calls the definition inside libscalapack-openmpi itself (dlsym on
 * its handle), never the global one, and checks once that the two differ: a reference
 * that silently resolved to copr would make the comparison trivial. The Fortran-style
 * p?gemr2d_ of ScaLAPACK calls Cp?gemr2d through the global symbol table (it would
 * reach copr), so ref_p?gemr2d_ calls ScaLAPACK's Cp?gemr2d itself; PBLAS's p?tran*_
 * reach no interposed name.
 *
 * Linked into the test programs of scripts/mpi-tests.sh when they are relinked with
 * the unprefixed library (C: redist_test.c built with -DCOPR_UNPREFIXED; Fortran:
 * redist_test.f90 preprocessed with -DCOPR_UNPREFIXED). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "scalapack_ref.h"

static void *lookup(const char *name) {
    static void *lib;
    void *own, *global;
    if (!lib) lib = dlopen("libscalapack-openmpi.so.2.2", RTLD_LAZY | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libscalapack-openmpi.so.2.2", RTLD_LAZY);
    if (!lib) {
        fprintf(stderr, "scalapack_ref: cannot open libscalapack-openmpi: %s\n", dlerror());
        exit(2);
    }
    own = dlsym(lib, name);
    global = dlsym(RTLD_DEFAULT, name);
    if (!own || own == global) {
        fprintf(stderr,
                "scalapack_ref: %s is %s: the program does not reach copr's %s under that "
                "name\n",
                name, own ? "ScaLAPACK's own everywhere" : "missing in ScaLAPACK", name);
        exit(2);
    }
    return own;
}

typedef void (*gemr2d_c)(int, int, void *, int, int, const int *, void *, int, int,
                         const int *, int);
typedef void (*tran_f)(const int *, const int *, const void *, const void *, const int *,
                       const int *, const int *, const void *, void *, const int *,
                       const int *, const int *);

#define GEMR2D(T)                                                                        \
    void ref_Cp##T##gemr2d(int m, int n, void *a, int ia, int ja, const int *desca,      \
                           void *b, int ib, int jb, const int *descb, int ictxt) {       \
        static gemr2d_c f;                                                               \
        if (!f) f = (gemr2d_c)lookup("Cp" #T "gemr2d");                                  \
        f(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt);                              \
    }                                                                                    \
    void ref_p##T##gemr2d_(const int *m, const int *n, void *a, const int *ia,           \
                           const int *ja, const int *desca, void *b, const int *ib,      \
                           const int *jb, const int *descb, const int *ictxt) {          \
        ref_Cp##T##gemr2d(*m, *n, a, *ia, *ja, desca, b, *ib, *jb, descb, *ictxt);       \
    }
#define TRAN(NAME)                                                                       \
    void ref_##NAME##_(const int *m, const int *n, const void *alpha, const void *a,     \
                       const int *ia, const int *ja, const int *desca, const void *beta, \
                       void *c, const int *ic, const int *jc, const int *descc) {        \
        static tran_f f;                                                                 \
        if (!f) f = (tran_f)lookup(#NAME "_");                                           \
        f(m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc);                        \
    }

GEMR2D(s)
GEMR2D(d)
GEMR2D(c)
GEMR2D(z)
TRAN(pstran)
TRAN(pdtran)
TRAN(pctranu)
TRAN(pctranc)
TRAN(pztranu)
TRAN(pztranc)
