/* BLACS, and ScaLAPACK's and PBLAS's double-precision routines, as Debian's
 * libscalapack-openmpi exports them: the declarations the C test programs share. */
#ifndef COPR_TESTS_BLACS_H
#define COPR_TESTS_BLACS_H
void Cblacs_pinfo(int *mypnum, int *nprocs);
void Cblacs_get(int context, int what, int *val);
void Cblacs_gridinit(int *context, char *order, int nprow, int npcol);
void Cblacs_gridmap(int *context, int *usermap, int ldumap, int nprow, int npcol);
void Cblacs_gridinfo(int context, int *nprow, int *npcol, int *myrow, int *mycol);
void Cblacs_gridexit(int context);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
void pdgemr2d_(int *m, int *n, double *a, int *ia, int *ja, int *desca, double *b, int *ib,
               int *jb, int *descb, int *ictxt);
void Cpdgemr2d(int m, int n, double *a, int ia, int ja, int *desca, double *b, int ib, int jb,
               int *descb, int ictxt);
void pdtran_(int *m, int *n, double *alpha, double *a, int *ia, int *ja, int *desca,
             double *beta, double *c, int *ic, int *jc, int *descc);
#endif
