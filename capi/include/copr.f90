! copr's ScaLAPACK-signature entry points for Fortran (libcopr_capi; crate copr-capi).
!
! Each routine takes the arguments of the ScaLAPACK routine of the same name without
! "copr_" and does what it does (see capi/include/copr.h): replace
!   call pdgemr2d(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt)
! by
!   call copr_pdgemr2d(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt)
! The interfaces bind to the Fortran-style entry points (copr_pdgemr2d_, ...), which a
! program without this module reaches under the same names. Compile this file with the
! program (module files are compiler-specific) and link -lcopr_capi -lscalapack-openmpi.
! A bad argument is reported on standard error and the call returns on every process
! without changing anything; copr_capi_errors() counts such calls.
module copr
  use, intrinsic :: iso_c_binding, only: c_int, c_int64_t, c_float, c_double, c_ptr, &
                                         c_char, c_float_complex, c_double_complex, c_size_t
  implicit none
  private
  public :: copr_psgemr2d, copr_pdgemr2d, copr_pcgemr2d, copr_pzgemr2d
  public :: copr_pstran, copr_pdtran, copr_pctranu, copr_pctranc, copr_pztranu, copr_pztranc
  public :: copr_capi_errors, copr_capi_calls
  public :: copr_pdgemr2d_batch, copr_pdgemr2d_relabel
  public :: copr_cart_create, copr_comm_reorder
  public :: copr_alloc_shared, copr_free_shared, copr_capi_shared_reads

  interface
    ! sub(B) <- sub(A), sub(A) = A(IA:IA+M-1, JA:JA+N-1), sub(B) = B(IB:IB+M-1, JB:JB+N-1)
    subroutine copr_psgemr2d(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt) &
        bind(C, name="copr_psgemr2d_")
      import :: c_int, c_float
      integer(c_int), intent(in) :: m, n, ia, ja, ib, jb, ictxt, desca(9), descb(9)
      real(c_float), intent(in) :: a(*)
      real(c_float), intent(inout) :: b(*)
    end subroutine copr_psgemr2d

    subroutine copr_pdgemr2d(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt) &
        bind(C, name="copr_pdgemr2d_")
      import :: c_int, c_double
      integer(c_int), intent(in) :: m, n, ia, ja, ib, jb, ictxt, desca(9), descb(9)
      real(c_double), intent(in) :: a(*)
      real(c_double), intent(inout) :: b(*)
    end subroutine copr_pdgemr2d

    subroutine copr_pcgemr2d(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt) &
        bind(C, name="copr_pcgemr2d_")
      import :: c_int, c_float_complex
      integer(c_int), intent(in) :: m, n, ia, ja, ib, jb, ictxt, desca(9), descb(9)
      complex(c_float_complex), intent(in) :: a(*)
      complex(c_float_complex), intent(inout) :: b(*)
    end subroutine copr_pcgemr2d

    subroutine copr_pzgemr2d(m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt) &
        bind(C, name="copr_pzgemr2d_")
      import :: c_int, c_double_complex
      integer(c_int), intent(in) :: m, n, ia, ja, ib, jb, ictxt, desca(9), descb(9)
      complex(c_double_complex), intent(in) :: a(*)
      complex(c_double_complex), intent(inout) :: b(*)
    end subroutine copr_pzgemr2d

    ! sub(C) <- beta*sub(C) + alpha*op(sub(A)), sub(A) = A(IA:IA+N-1, JA:JA+M-1),
    ! sub(C) = C(IC:IC+M-1, JC:JC+N-1), op the transpose (tranc: conjugate transpose)
    subroutine copr_pstran(m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc) &
        bind(C, name="copr_pstran_")
      import :: c_int, c_float
      integer(c_int), intent(in) :: m, n, ia, ja, ic, jc, desca(9), descc(9)
      real(c_float), intent(in) :: alpha, beta, a(*)
      real(c_float), intent(inout) :: c(*)
    end subroutine copr_pstran

    subroutine copr_pdtran(m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc) &
        bind(C, name="copr_pdtran_")
      import :: c_int, c_double
      integer(c_int), intent(in) :: m, n, ia, ja, ic, jc, desca(9), descc(9)
      real(c_double), intent(in) :: alpha, beta, a(*)
      real(c_double), intent(inout) :: c(*)
    end subroutine copr_pdtran

    subroutine copr_pctranu(m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc) &
        bind(C, name="copr_pctranu_")
      import :: c_int, c_float_complex
      integer(c_int), intent(in) :: m, n, ia, ja, ic, jc, desca(9), descc(9)
      complex(c_float_complex), intent(in) :: alpha, beta, a(*)
      complex(c_float_complex), intent(inout) :: c(*)
    end subroutine copr_pctranu

    subroutine copr_pctranc(m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc) &
        bind(C, name="copr_pctranc_")
      import :: c_int, c_float_complex
      integer(c_int), intent(in) :: m, n, ia, ja, ic, jc, desca(9), descc(9)
      complex(c_float_complex), intent(in) :: alpha, beta, a(*)
      complex(c_float_complex), intent(inout) :: c(*)
    end subroutine copr_pctranc

    subroutine copr_pztranu(m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc) &
        bind(C, name="copr_pztranu_")
      import :: c_int, c_double_complex
      integer(c_int), intent(in) :: m, n, ia, ja, ic, jc, desca(9), descc(9)
      complex(c_double_complex), intent(in) :: alpha, beta, a(*)
      complex(c_double_complex), intent(inout) :: c(*)
    end subroutine copr_pztranu

    subroutine copr_pztranc(m, n, alpha, a, ia, ja, desca, beta, c, ic, jc, descc) &
        bind(C, name="copr_pztranc_")
      import :: c_int, c_double_complex
      integer(c_int), intent(in) :: m, n, ia, ja, ic, jc, desca(9), descc(9)
      complex(c_double_complex), intent(in) :: alpha, beta, a(*)
      complex(c_double_complex), intent(inout) :: c(*)
    end subroutine copr_pztranc

    ! calls on this process that reported an error (and changed nothing)
    function copr_capi_errors() bind(C, name="copr_capi_errors") result(count)
      import :: c_int64_t
      integer(c_int64_t) :: count
    end function copr_capi_errors

    ! calls of copr's entry points on this process, whatever their outcome (with the
    ! unprefixed library, the calls of ScaLAPACK's names that copr served)
    function copr_capi_calls() bind(C, name="copr_capi_calls") result(count)
      import :: c_int64_t
      integer(c_int64_t) :: count
    end function copr_capi_calls

    ! several copies sub(B_k) <- sub(A_k), k = 1 .. count, in one communication round:
    ! copy k as pdgemr2d's m(k), n(k), ia(k), ..., descriptors desca(:, k), descb(:, k),
    ! a(k) = c_loc of its local array of A, b(k) of B's; parameters numbered from count
    subroutine copr_pdgemr2d_batch(count, m, n, a, ia, ja, desca, b, ib, jb, descb, ictxt) &
        bind(C, name="copr_pdgemr2d_batch")
      import :: c_int, c_ptr
      integer(c_int), value :: count, ictxt
      integer(c_int), intent(in) :: m(*), n(*), ia(*), ja(*), ib(*), jb(*)
      integer(c_int), intent(in) :: desca(9, *), descb(9, *)
      type(c_ptr), intent(in) :: a(*), b(*)
    end subroutine copr_pdgemr2d_batch

    ! B <- sub(A) onto B's grid relabeled: the whole of B (m x n) is filled, the blocks
    ! of B's grid position (r, c) (0-based) going to the process map(1 + r + c*nprow)
    ! (a rank of ictxt's grid); every process passes b of lenb elements (enough for
    ! the largest local matrix) and map of nprow*npcol; B's local matrix then has the
    ! leading dimension max(1, LOCr) of the row it holds
    subroutine copr_pdgemr2d_relabel(m, n, a, ia, ja, desca, b, lenb, descb, ictxt, map) &
        bind(C, name="copr_pdgemr2d_relabel")
      import :: c_int, c_double
      integer(c_int), value :: m, n, ia, ja, lenb, ictxt
      integer(c_int), intent(in) :: desca(9), descb(9)
      real(c_double), intent(in) :: a(*)
      real(c_double), intent(inout) :: b(*)
      integer(c_int), intent(out) :: map(*)
    end subroutine copr_pdgemr2d_relabel
    ! copr's mapping of the grid dims(1:ndims) (periods: 1 where it wraps around) onto
    ! the machine as a Cartesian communicator (comm_cart) or a renumbered one (newcomm):
    ! MPI handles as integers (use mpi / mpif.h); machine is a machine file's path ending
    ! in c_null_char, or c_null_char alone for the environment's or the one found at run
    ! time. Returns 0, or nonzero with MPI_COMM_NULL and a message on standard error.
    function copr_cart_create(comm, ndims, dims, periods, machine, comm_cart) &
        bind(C, name="copr_cart_create_f") result(ierr)
      import :: c_int, c_char
      integer(c_int), intent(in) :: comm, ndims, dims(*), periods(*)
      character(kind=c_char), intent(in) :: machine(*)
      integer(c_int), intent(out) :: comm_cart
      integer(c_int) :: ierr
    end function copr_cart_create

    function copr_comm_reorder(comm, ndims, dims, periods, machine, newcomm) &
        bind(C, name="copr_comm_reorder_f") result(ierr)
      import :: c_int, c_char
      integer(c_int), intent(in) :: comm, ndims, dims(*), periods(*)
      character(kind=c_char), intent(in) :: machine(*)
      integer(c_int), intent(out) :: newcomm
      integer(c_int) :: ierr
    end function copr_comm_reorder

    ! collective over the processes of the BLACS context ictxt: bytes bytes for this
    ! process (each its own size) in memory every process of its node in ictxt can
    ! read, returned in ptr (use c_f_pointer); a matrix there passed as the source (A)
    ! of copr_pdgemr2d with that ictxt, or of copr_p?tran* on that context's grid, is
    ! read by its node's receivers in one pass. Returns 0, or nonzero on every process
    ! with ptr = c_null_ptr and a message on standard error.
    function copr_alloc_shared(ictxt, bytes, ptr) bind(C, name="copr_alloc_shared") &
        result(ierr)
      import :: c_int, c_size_t, c_ptr
      integer(c_int), value :: ictxt
      integer(c_size_t), value :: bytes
      type(c_ptr), intent(out) :: ptr
      integer(c_int) :: ierr
    end function copr_alloc_shared

    ! collective over the processes of ictxt: frees what copr_alloc_shared returned on
    ! that context. Returns 0, or nonzero on every process (nothing freed) when a
    ! process passes another pointer or the processes name different allocations
    function copr_free_shared(ictxt, ptr) bind(C, name="copr_free_shared") result(ierr)
      import :: c_int, c_ptr
      integer(c_int), value :: ictxt
      type(c_ptr), value :: ptr
      integer(c_int) :: ierr
    end function copr_free_shared

    ! packages this process read in one pass from its senders' node-shared matrices
    function copr_capi_shared_reads() bind(C, name="copr_capi_shared_reads") &
        result(count)
      import :: c_int64_t
      integer(c_int64_t) :: count
    end function copr_capi_shared_reads
  end interface
end module copr
