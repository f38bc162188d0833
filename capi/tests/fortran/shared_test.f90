! The Fortran module's node-shared allocation (capi/include/copr.f90): a 300 x 280
! source in 16 x 16 blocks allocated with copr_alloc_shared and seen through
! c_f_pointer, copied with copr_pdgemr2d to 48 x 40 blocks and transposed with
! copr_pdtran, twice each with the source rewritten in between; every local element
! checked against the global formula, and copr_capi_shared_reads growing on every
! process (the one-pass path). Then freeing a pointer copr did not allocate, and one
! freed already: nonzero everywhere, one error counted each. Built and run by
! scripts/mpi-tests.sh:
!
!   mpirun -n P shared_test_f      (P >= 2; exit status 1 on failure)
program shared_test_f
  use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer, c_size_t, c_int64_t, c_loc, &
                                         c_associated
  use mpi
  use copr
  implicit none
  integer, parameter :: dp = kind(1.0d0), m = 300, n = 280
  integer, external :: numroc
  integer :: me, nprocs, ctxt, nprow, npcol, myrow, mycol, ierr, d, v, i, j, bad, all
  integer :: ra, ca, rb, cb, rc, cc, ldb, ldc
  integer :: desca(9), descb(9), descc(9)
  type(c_ptr) :: p
  real(dp), pointer :: a(:, :)
  real(dp), allocatable, target :: b(:, :), c(:, :), plain(:)
  integer(c_int64_t) :: reads, errors

  call MPI_Init(ierr)
  call blacs_pinfo(me, nprocs)
  nprow = 1
  do d = 1, nprocs
    if (d * d > nprocs) exit
    if (modulo(nprocs, d) == 0) nprow = d
  end do
  npcol = nprocs / nprow
  call blacs_get(-1, 0, ctxt)
  call blacs_gridinit(ctxt, 'R', nprow, npcol)
  call blacs_gridinfo(ctxt, nprow, npcol, myrow, mycol)
  bad = 0

  ! A: m x n in 16 x 16 blocks, node-shared
  ra = numroc(m, 16, myrow, 0, nprow)
  ca = numroc(n, 16, mycol, 0, npcol)
  desca = [1, ctxt, m, n, 16, 16, 0, 0, max(1, ra)]
  if (copr_alloc_shared(ctxt, int(max(1, ra) * ca * 8, c_size_t), p) /= 0) then
    print '(a, i0, a)', 'process ', me, ': copr_alloc_shared failed'
    call MPI_Abort(MPI_COMM_WORLD, 1, ierr)
  end if
  call c_f_pointer(p, a, [max(1, ra), max(1, ca)])
  ! B: m x n, C: n x m, both in 48 x 40 blocks
  rb = numroc(m, 48, myrow, 0, nprow)
  cb = numroc(n, 40, mycol, 0, npcol)
  ldb = max(1, rb)
  descb = [1, ctxt, m, n, 48, 40, 0, 0, ldb]
  rc = numroc(n, 48, myrow, 0, nprow)
  cc = numroc(m, 40, mycol, 0, npcol)
  ldc = max(1, rc)
  descc = [1, ctxt, n, m, 48, 40, 0, 0, ldc]
  allocate (b(ldb, max(1, cb)), c(ldc, max(1, cc)))

  do v = 0, 1
    do j = 1, ca
      do i = 1, ra
        a(i, j) = val(grow(i, 16), gcol(j, 16), v)
      end do
    end do
    reads = copr_capi_shared_reads()
    call copr_pdgemr2d(m, n, a, 1, 1, desca, b, 1, 1, descb, ctxt)
    if (copr_capi_shared_reads() == reads) then
      print '(a, i0, a)', 'process ', me, ': the copy read no package in one pass'
      bad = bad + 1
    end if
    do j = 1, cb
      do i = 1, rb
        if (b(i, j) /= val(grow(i, 48), gcol(j, 40), v)) bad = bad + 1
      end do
    end do
    c = 1.0_dp
    reads = copr_capi_shared_reads()
    call copr_pdtran(n, m, 2.0_dp, a, 1, 1, desca, 0.5_dp, c, 1, 1, descc)
    if (copr_capi_shared_reads() == reads) then
      print '(a, i0, a)', 'process ', me, ': the transpose read no package in one pass'
      bad = bad + 1
    end if
    do j = 1, cc
      do i = 1, rc
        if (c(i, j) /= 0.5_dp + 2.0_dp * val(gcol(j, 40), grow(i, 48), v)) bad = bad + 1
      end do
    end do
  end do

  ! wrong use: nonzero everywhere, one error counted, nothing freed
  allocate (plain(8))
  errors = copr_capi_errors()
  if (copr_free_shared(ctxt, c_loc(plain)) == 0 .or. copr_capi_errors() /= errors + 1) then
    print '(a, i0, a)', 'process ', me, ': freeing allocatable memory did not fail'
    bad = bad + 1
  end if
  if (copr_free_shared(ctxt, p) /= 0) bad = bad + 1
  errors = copr_capi_errors()
  if (copr_free_shared(ctxt, p) == 0 .or. copr_capi_errors() /= errors + 1) then
    print '(a, i0, a)', 'process ', me, ': freeing twice did not fail'
    bad = bad + 1
  end if
  if (.not. c_associated(p)) bad = bad + 1

  call MPI_Allreduce(bad, all, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (me == 0) print '(a, i0, a, i0, a)', 'shared_test_f on ', nprocs, ' processes: ', all, &
      ' failures'
  call blacs_gridexit(ctxt)
  call blacs_exit(1)
  call MPI_Finalize(ierr)
  if (all /= 0) stop 1
contains
  ! global (0-based) row of local row i (1-based) in blocks of mb, and column
  integer function grow(i, mb)
    integer, intent(in) :: i, mb
    grow = ((i - 1) / mb * nprow + myrow) * mb + modulo(i - 1, mb)
  end function grow

  integer function gcol(j, nb)
    integer, intent(in) :: j, nb
    gcol = ((j - 1) / nb * npcol + mycol) * nb + modulo(j - 1, nb)
  end function gcol

  ! A's global element (i, j), 0-based, in version v: exact in double precision
  real(dp) function val(i, j, v)
    integer, intent(in) :: i, j, v
    val = real(i, dp) * 1024.0_dp + real(j, dp) + 0.25_dp * real(v, dp)
  end function val
end program shared_test_f
