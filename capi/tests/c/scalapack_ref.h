/* ScaLAPACK's own p?gemr2d and p?tran*, under ref_ names (see scalapack_ref.c). */
#ifndef SCALAPACK_REF_H
#define SCALAPACK_REF_H
void ref_Cpsgemr2d(int m, int n, void *a, int ia, int ja, const int *desca, void *b, int ib,
                   int jb, const int *descb, int ictxt);
void ref_psgemr2d_(const int *m, const int *n, void *a, const int *ia, const int *ja,
                   const int *desca, void *b, const int *ib, const int *jb, const int *descb,
                   const int *ictxt);
void ref_Cpdgemr2d(int m, int n, void *a, int ia, int ja, const int *desca, void *b, int ib,
                   int jb, const int *descb, int ictxt);
void ref_pdgemr2d_(const int *m, const int *n, void *a, const int *ia, const int *ja,
                   const int *desca, void *b, const int *ib, const int *jb, const int *descb,
                   const int *ictxt);
void ref_Cpcgemr2d(int m, int n, void *a, int ia, int ja, const int *desca, void *b, int ib,
                   int jb, const int *descb, int ictxt);
void ref_pcgemr2d_(const int *m, const int *n, void *a, const int *ia, const int *ja,
                   const int *desca, void *b, const int *ib, const int *jb, const int *descb,
                   const int *ictxt);
void ref_Cpzgemr2d(int m, int n, void *a, int ia, int ja, const int *desca, void *b, int ib,
                   int jb, const int *descb, int ictxt);
void ref_pzgemr2d_(const int *m, const int *n, void *a, const int *ia, const int *ja,
                   const int *desca, void *b, const int *ib, const int *jb, const int *descb,
                   const int *ictxt);
void ref_pstran_(const int *m, const int *n, const void *alpha, const void *a, const int *ia,
                const int *ja, const int *desca, const void *beta, void *c, const int *ic,
                const int *jc, const int *descc);
void ref_pdtran_(const int *m, const int *n, const void *alpha, const void *a, const int *ia,
                const int *ja, const int *desca, const void *beta, void *c, const int *ic,
                const int *jc, const int *descc);
void ref_pctranu_(const int *m, const int *n, const void *alpha, const void *a, const int *ia,
                 const int *ja, const int *desca, const void *beta, void *c, const int *ic,
                 const int *jc, const int *descc);
void ref_pctranc_(const int *m, const int *n, const void *alpha, const void *a, const int *ia,
                 const int *ja, const int *desca, const void *beta, void *c, const int *ic,
                 const int *jc, const int *descc);
void ref_pztranu_(const int *m, const int *n, const void *alpha, const void *a, const int *ia,
                 const int *ja, const int *desca, const void *beta, void *c, const int *ic,
                 const int *jc, const int *descc);
void ref_pztranc_(const int *m, const int *n, const void *alpha, const void *a, const int *ia,
                 const int *ja, const int *desca, const void *beta, void *c, const int *ic,
                 const int *jc, const int *descc);
#endif
