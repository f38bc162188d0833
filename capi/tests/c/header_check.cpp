/* Compiled by tests/header.rs as C++ and as C with -Wall -Wextra -Werror -pedantic:
 * the header must be clean in both, and its declarations must have the types below
 * (ScaLAPACK's argument lists). */
#include "copr.h"

#ifdef __cplusplus
#define COPR_CHECK_NULL nullptr
#else
#define COPR_CHECK_NULL 0
#endif

typedef void (*c_style_d)(int, int, const double *, int, int, const int *, double *, int, int,
                          const int *, int);
typedef void (*c_style_z)(int, int, const copr_dcomplex *, int, int, const int *,
                          copr_dcomplex *, int, int, const int *, int);
typedef void (*fortran_style_d)(const int *, const int *, const double *, const int *,
                                const int *, const int *, double *, const int *, const int *,
                                const int *, const int *);
typedef void (*tran_d)(const int *, const int *, const double *, const double *, const int *,
                       const int *, const int *, const double *, double *, const int *,
                       const int *, const int *);
typedef void (*tran_c)(const int *, const int *, const float *, const float *, const int *,
                       const int *, const int *, const float *, float *, const int *,
                       const int *, const int *);

int copr_header_check(void);
int copr_header_check(void) {
    c_style_d gd = copr_pdgemr2d;
    c_style_z gz = copr_pzgemr2d;
    fortran_style_d fd = copr_pdgemr2d_;
    tran_d td = copr_pdtran_;
    tran_c tc = copr_pctranc_;
    copr_scomplex one = {1.0f, 0.0f};
    return (gd != COPR_CHECK_NULL) + (gz != COPR_CHECK_NULL) + (fd != COPR_CHECK_NULL) +
           (td != COPR_CHECK_NULL) + (tc != COPR_CHECK_NULL) + (int)one.r;
}
