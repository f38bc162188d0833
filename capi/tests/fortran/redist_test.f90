! copr's Fortran interface (capi/include/copr.f90) against ScaLAPACK's own routines,
! element by element: for s, d, c, z, random p?gemr2d cases (A and B on different BLACS
! grids: row-major, column-major and mapped grids of random subsets of the processes,
! so some processes are outside a grid; submatrices at IA/JA /= 1; padded LLD) and
! random p?tran / p?tranu / p?tranc cases with alpha and beta, under a context of all
! processes; and batches of two real double copies through copr_pdgemr2d_batch; then
! calls with a negative M, N or LENB, each refused with one error counted, data kept.
! Built and run by scripts/mpi-tests.sh:
!
!   mpirun -n P redist_test_f [cases per type]     (default 12; exit status 1 on failure)
!
! Written out once per type: s, d, c, z differ only in the element type and the names.
!
! Preprocessed with -DCOPR_UNPREFIXED and linked with libcopr_scalapack ahead of
! ScaLAPACK and capi/tests/c/scalapack_ref.c, the same cases call ScaLAPACK's own names
! (pdgemr2d, pdtran, ...: then copr's) against ScaLAPACK's own routines, reached as
! ref_pdgemr2d, ...; scalapack_ref.c stops the program when those are not distinct,
! and copr must have counted calls (copr_capi_calls).
#ifdef COPR_UNPREFIXED
#define psgemr2d ref_psgemr2d
#define pdgemr2d ref_pdgemr2d
#define pcgemr2d ref_pcgemr2d
#define pzgemr2d ref_pzgemr2d
#define pstran ref_pstran
#define pdtran ref_pdtran
#define pctranu ref_pctranu
#define pctranc ref_pctranc
#define pztranu ref_pztranu
#define pztranc ref_pztranc
#define copr_psgemr2d PSGEMR2D
#define copr_pdgemr2d PDGEMR2D
#define copr_pcgemr2d PCGEMR2D
#define copr_pzgemr2d PZGEMR2D
#define copr_pstran PSTRAN
#define copr_pdtran PDTRAN
#define copr_pctranu PCTRANU
#define copr_pctranc PCTRANC
#define copr_pztranu PZTRANU
#define copr_pztranc PZTRANC
#endif
module redist_tools
  implicit none
  integer, parameter :: dp = kind(1.0d0)
  integer(8) :: rng = 0
  integer :: me = 0, nprocs = 1
  integer, external :: numroc
contains
  ! 0 .. k-1, the same sequence on every process
  integer function pick(k)
    integer, intent(in) :: k
    rng = rng * 6364136223846793005_8 + 1442695040888963407_8
    pick = int(modulo(ishft(rng, -33), int(k, 8)))
  end function pick

  ! component c (0, 1) of global element (i, j) (0-based) of matrix "salt"
  real(dp) function val(i, j, c, salt)
    integer, intent(in) :: i, j, c, salt
    integer :: x
    if (c == 0) then
      x = i * 131 + j * 71 + salt * 17
    else
      x = j * 37 + i * 101 + salt * 29 + 5
    end if
    val = real(modulo(x, 509), dp) * 0.25_dp - 60.0_dp
  end function val

  ! global index (0-based) of local index l (0-based)
  integer function l2g(l, nb, p, src, np)
    integer, intent(in) :: l, nb, p, src, np
    l2g = ((l / nb) * np + modulo(p - src, np)) * nb + modulo(l, nb)
  end function l2g

  ! a grid of k of the processes: "R", "C", or a random map; ctxt = -1 outside
  subroutine make_grid(k, ctxt, nprow, npcol, myrow, mycol)
    integer, intent(in) :: k
    integer, intent(out) :: ctxt, nprow, npcol, myrow, mycol
    integer :: perm(nprocs), i, j, x, p, q
    nprow = 1 + pick(k)
    do while (modulo(k, nprow) /= 0)
      nprow = nprow - 1
    end do
    npcol = k / nprow
    call blacs_get(-1, 0, ctxt)
    select case (pick(3))
    case (0)
      call blacs_gridinit(ctxt, 'R', nprow, npcol)
    case (1)
      call blacs_gridinit(ctxt, 'C', nprow, npcol)
    case default
      do i = 1, nprocs
        perm(i) = i - 1
      end do
      do i = nprocs, 2, -1
        j = 1 + pick(i)
        x = perm(i)
        perm(i) = perm(j)
        perm(j) = x
      end do
      call blacs_gridmap(ctxt, perm, nprow, nprow, npcol)
    end select
    myrow = -1
    mycol = -1
    if (ctxt >= 0) then
      call blacs_gridinfo(ctxt, p, q, myrow, mycol)
      if (myrow < 0 .or. myrow >= p) myrow = -1
    end if
    if (myrow < 0) ctxt = -1
  end subroutine make_grid

  ! a descriptor for an m x n matrix in random blocks on the grid, with this process's
  ! local rows, columns and a padded LLD
  subroutine make_desc(m, n, ctxt, nprow, npcol, myrow, mycol, desc, locr, locc)
    integer, intent(in) :: m, n, ctxt, nprow, npcol, myrow, mycol
    integer, intent(out) :: desc(9), locr, locc
    integer :: mb, nb, rsrc, csrc
    mb = 1 + pick(8)
    nb = 1 + pick(8)
    rsrc = pick(nprow)
    csrc = pick(npcol)
    locr = 0
    locc = 0
    if (ctxt >= 0) then
      locr = numroc(m, mb, myrow, rsrc, nprow)
      locc = numroc(n, nb, mycol, csrc, npcol)
    end if
    desc = [1, ctxt, m, n, mb, nb, rsrc, csrc, max(1, locr) + modulo(me, 3)]
  end subroutine make_desc
end module redist_tools

! ---- type s ----
module redist_s
  use copr
  use redist_tools
  implicit none
contains
  real(4) function elem_s(i, j, salt)
    integer, intent(in) :: i, j, salt
    elem_s = real(val(i, j, 0, salt), 4)
  end function elem_s

  ! local array of the matrix on this process, filled from the global function
  subroutine fill_s(x, desc, locr, locc, myrow, mycol, nprow, npcol, salt)
    real(4), allocatable, intent(out) :: x(:)
    integer, intent(in) :: desc(9), locr, locc, myrow, mycol, nprow, npcol, salt
    integer :: li, lj, lld
    lld = desc(9)
    allocate(x(lld * max(1, locc)))
    x = elem_s(-1000, -1000, 0)
    do lj = 0, locc - 1
      do li = 0, locr - 1
        x(1 + li + lj * lld) = elem_s(l2g(li, desc(5), myrow, desc(7), nprow), &
                                      l2g(lj, desc(6), mycol, desc(8), npcol), salt)
      end do
    end do
  end subroutine fill_s

  ! one p?gemr2d case; returns this process's mismatches
  integer function gemr2d_s() result(bad)
    integer :: g, gp, gq, gr, gc, ca, pa, qa, ra, cca, cb, pb, qb, rb, ccb
    integer :: m, n, ia, ja, ib, jb, desca(9), descb(9), lra, lca, lrb, lcb
    real(4), allocatable :: a(:), b_copr(:), b_ref(:)
    call make_grid(nprocs, g, gp, gq, gr, gc)
    call make_grid(1 + pick(nprocs), ca, pa, qa, ra, cca)
    call make_grid(1 + pick(nprocs), cb, pb, qb, rb, ccb)
    m = 1 + pick(30)
    n = 1 + pick(30)
    ia = 1 + pick(6)
    ja = 1 + pick(6)
    ib = 1 + pick(6)
    jb = 1 + pick(6)
    call make_desc(ia - 1 + m + pick(4), ja - 1 + n + pick(4), ca, pa, qa, ra, cca, desca, lra, lca)
    call make_desc(ib - 1 + m + pick(4), jb - 1 + n + pick(4), cb, pb, qb, rb, ccb, descb, lrb, lcb)
    call fill_s(a, desca, lra, lca, ra, cca, pa, qa, 1)
    call fill_s(b_ref, descb, lrb, lcb, rb, ccb, pb, qb, 2)
    allocate(b_copr, source=b_ref)
    call psgemr2d(m, n, a, ia, ja, desca, b_ref, ib, jb, descb, g)
    call copr_psgemr2d(m, n, a, ia, ja, desca, b_copr, ib, jb, descb, g)
    bad = count(b_copr /= b_ref)
    if (bad > 0) print '(a, i0, a, 2(i0, 1x), a, 2(i0, 1x), a, 2(i0, 1x))', 'process ', me, &
        ': psgemr2d differs: m n ', m, n, ' A grid ', pa, qa, ' B grid ', pb, qb
    if (cb >= 0) call blacs_gridexit(cb)
    if (ca >= 0) call blacs_gridexit(ca)
    if (g >= 0) call blacs_gridexit(g)
  end function gemr2d_s

  ! one transpose case (conj: the conjugate transpose, for c and z); mismatches
  integer function tran_s(conj) result(bad)
    logical, intent(in) :: conj
    real(dp), parameter :: re(5) = [0.0_dp, 1.0_dp, -1.0_dp, 0.5_dp, 2.0_dp]
    integer :: g, p, q, r, c, m, n, ia, ja, ic, jc, desca(9), descc(9), lra, lca, lrc, lcc
    real(4) :: alpha, beta
    real(4), allocatable :: a(:), c_copr(:), c_ref(:)
    call make_grid(1 + pick(nprocs), g, p, q, r, c)
    m = 1 + pick(30)
    n = 1 + pick(30)
    ia = 1 + pick(6)
    ja = 1 + pick(6)
    ic = 1 + pick(6)
    jc = 1 + pick(6)
    alpha = real(re(1 + pick(5)), 4)
    beta = real(re(1 + pick(5)), 4)
    call make_desc(ia - 1 + n + pick(4), ja - 1 + m + pick(4), g, p, q, r, c, desca, lra, lca)
    call make_desc(ic - 1 + m + pick(4), jc - 1 + n + pick(4), g, p, q, r, c, descc, lrc, lcc)
    bad = 0
    if (g < 0) return
    call fill_s(a, desca, lra, lca, r, c, p, q, 3)
    call fill_s(c_ref, descc, lrc, lcc, r, c, p, q, 4)
    allocate(c_copr, source=c_ref)
    if (conj) then
      call pstran(m, n, alpha, a, ia, ja, desca, beta, c_ref, ic, jc, descc)
      call copr_pstran(m, n, alpha, a, ia, ja, desca, beta, c_copr, ic, jc, descc)
    else
      call pstran(m, n, alpha, a, ia, ja, desca, beta, c_ref, ic, jc, descc)
      call copr_pstran(m, n, alpha, a, ia, ja, desca, beta, c_copr, ic, jc, descc)
    end if
    bad = count(c_copr /= c_ref)
    if (bad > 0) print '(a, i0, a, l1, a, 2(i0, 1x), a, 2(i0, 1x))', 'process ', me, &
        ': pstran (conj ', conj, ') differs: m n ', m, n, ' grid ', p, q
    call blacs_gridexit(g)
  end function tran_s
end module redist_s

! ---- type d ----
module redist_d
  use copr
  use redist_tools
  implicit none
contains
  real(dp) function elem_d(i, j, salt)
    integer, intent(in) :: i, j, salt
    elem_d = val(i, j, 0, salt)
  end function elem_d

  ! local array of the matrix on this process, filled from the global function
  subroutine fill_d(x, desc, locr, locc, myrow, mycol, nprow, npcol, salt)
    real(dp), allocatable, intent(out) :: x(:)
    integer, intent(in) :: desc(9), locr, locc, myrow, mycol, nprow, npcol, salt
    integer :: li, lj, lld
    lld = desc(9)
    allocate(x(lld * max(1, locc)))
    x = elem_d(-1000, -1000, 0)
    do lj = 0, locc - 1
      do li = 0, locr - 1
        x(1 + li + lj * lld) = elem_d(l2g(li, desc(5), myrow, desc(7), nprow), &
                                      l2g(lj, desc(6), mycol, desc(8), npcol), salt)
      end do
    end do
  end subroutine fill_d

  ! one p?gemr2d case; returns this process's mismatches
  integer function gemr2d_d() result(bad)
    integer :: g, gp, gq, gr, gc, ca, pa, qa, ra, cca, cb, pb, qb, rb, ccb
    integer :: m, n, ia, ja, ib, jb, desca(9), descb(9), lra, lca, lrb, lcb
    real(dp), allocatable :: a(:), b_copr(:), b_ref(:)
    call make_grid(nprocs, g, gp, gq, gr, gc)
    call make_grid(1 + pick(nprocs), ca, pa, qa, ra, cca)
    call make_grid(1 + pick(nprocs), cb, pb, qb, rb, ccb)
    m = 1 + pick(30)
    n = 1 + pick(30)
    ia = 1 + pick(6)
    ja = 1 + pick(6)
    ib = 1 + pick(6)
    jb = 1 + pick(6)
    call make_desc(ia - 1 + m + pick(4), ja - 1 + n + pick(4), ca, pa, qa, ra, cca, desca, lra, lca)
    call make_desc(ib - 1 + m + pick(4), jb - 1 + n + pick(4), cb, pb, qb, rb, ccb, descb, lrb, lcb)
    call fill_d(a, desca, lra, lca, ra, cca, pa, qa, 1)
    call fill_d(b_ref, descb, lrb, lcb, rb, ccb, pb, qb, 2)
    allocate(b_copr, source=b_ref)
    call pdgemr2d(m, n, a, ia, ja, desca, b_ref, ib, jb, descb, g)
    call copr_pdgemr2d(m, n, a, ia, ja, desca, b_copr, ib, jb, descb, g)
    bad = count(b_copr /= b_ref)
    if (bad > 0) print '(a, i0, a, 2(i0, 1x), a, 2(i0, 1x), a, 2(i0, 1x))', 'process ', me, &
        ': pdgemr2d differs: m n ', m, n, ' A grid ', pa, qa, ' B grid ', pb, qb
    if (cb >= 0) call blacs_gridexit(cb)
    if (ca >= 0) call blacs_gridexit(ca)
    if (g >= 0) call blacs_gridexit(g)
  end function gemr2d_d

  ! one transpose case (conj: the conjugate transpose, for c and z); mismatches
  integer function tran_d(conj) result(bad)
    logical, intent(in) :: conj
    real(dp), parameter :: re(5) = [0.0_dp, 1.0_dp, -1.0_dp, 0.5_dp, 2.0_dp]
    integer :: g, p, q, r, c, m, n, ia, ja, ic, jc, desca(9), descc(9), lra, lca, lrc, lcc
    real(dp) :: alpha, beta
    real(dp), allocatable :: a(:), c_copr(:), c_ref(:)
    call make_grid(1 + pick(nprocs), g, p, q, r, c)
    m = 1 + pick(30)
    n = 1 + pick(30)
    ia = 1 + pick(6)
    ja = 1 + pick(6)
    ic = 1 + pick(6)
    jc = 1 + pick(6)
    alpha = re(1 + pick(5))
    beta = re(1 + pick(5))
    call make_desc(ia - 1 + n + pick(4), ja - 1 + m + pick(4), g, p, q, r, c, desca, lra, lca)
    call make_desc(ic - 1 + m + pick(4), jc - 1 + n + pick(4), g, p, q, r, c, descc, lrc, lcc)
    bad = 0
    if (g < 0) return
    call fill_d(a, desca, lra, lca, r, c, p, q, 3)
    call fill_d(c_ref, descc, lrc, lcc, r, c, p, q, 4)
    allocate(c_copr, source=c_ref)
    if (conj) then
      call pdtran(m, n, alpha, a, ia, ja, desca, beta, c_ref, ic, jc, descc)
      call copr_pdtran(m, n, alpha, a, ia, ja, desca, beta, c_copr, ic, jc, descc)
    else
      call pdtran(m, n, alpha, a, ia, ja, desca, beta, c_ref, ic, jc, descc)
      call copr_pdtran(m, n, alpha, a, ia, ja, desca, beta, c_copr, ic, jc, descc)
    end if
    bad = count(c_copr /= c_ref)
    if (bad > 0) print '(a, i0, a, l1, a, 2(i0, 1x), a, 2(i0, 1x))', 'process ', me, &
        ': pdtran (conj ', conj, ') differs: m n ', m, n, ' grid ', p, q
    call blacs_gridexit(g)
  end function tran_d
  ! copr_pdgemr2d_batch of two copies (c_loc of each local array) against pdgemr2d copy
  ! by copy; returns this process's mismatches
  integer function batch_d() result(bad)
    use, intrinsic :: iso_c_binding, only: c_ptr, c_loc
    integer :: g, gp, gq, gr, gc, k
    integer :: ca(2), pa(2), qa(2), ra(2), cca(2), cb(2), pb(2), qb(2), rb(2), ccb(2)
    integer :: m(2), n(2), ia(2), ja(2), ib(2), jb(2), desca(9, 2), descb(9, 2)
    integer :: lra(2), lca(2), lrb(2), lcb(2)
    real(dp), allocatable, target :: a1(:), a2(:), b1(:), b2(:)
    real(dp), allocatable :: r1(:), r2(:)
    type(c_ptr) :: ap(2), bp(2)
    call make_grid(nprocs, g, gp, gq, gr, gc)
    do k = 1, 2
      call make_grid(1 + pick(nprocs), ca(k), pa(k), qa(k), ra(k), cca(k))
      call make_grid(1 + pick(nprocs), cb(k), pb(k), qb(k), rb(k), ccb(k))
      m(k) = 1 + pick(30)
      n(k) = 1 + pick(30)
      ia(k) = 1 + pick(6)
      ja(k) = 1 + pick(6)
      ib(k) = 1 + pick(6)
      jb(k) = 1 + pick(6)
      call make_desc(ia(k) - 1 + m(k) + pick(4), ja(k) - 1 + n(k) + pick(4), ca(k), pa(k), &
                     qa(k), ra(k), cca(k), desca(:, k), lra(k), lca(k))
      call make_desc(ib(k) - 1 + m(k) + pick(4), jb(k) - 1 + n(k) + pick(4), cb(k), pb(k), &
                     qb(k), rb(k), ccb(k), descb(:, k), lrb(k), lcb(k))
    end do
    call fill_d(a1, desca(:, 1), lra(1), lca(1), ra(1), cca(1), pa(1), qa(1), 5)
    call fill_d(a2, desca(:, 2), lra(2), lca(2), ra(2), cca(2), pa(2), qa(2), 6)
    call fill_d(r1, descb(:, 1), lrb(1), lcb(1), rb(1), ccb(1), pb(1), qb(1), 7)
    call fill_d(r2, descb(:, 2), lrb(2), lcb(2), rb(2), ccb(2), pb(2), qb(2), 8)
    allocate(b1, source=r1)
    allocate(b2, source=r2)
    call pdgemr2d(m(1), n(1), a1, ia(1), ja(1), desca(:, 1), r1, ib(1), jb(1), descb(:, 1), g)
    call pdgemr2d(m(2), n(2), a2, ia(2), ja(2), desca(:, 2), r2, ib(2), jb(2), descb(:, 2), g)
    ap = [c_loc(a1), c_loc(a2)]
    bp = [c_loc(b1), c_loc(b2)]
    call copr_pdgemr2d_batch(2, m, n, ap, ia, ja, desca, bp, ib, jb, descb, g)
    bad = count(b1 /= r1) + count(b2 /= r2)
    if (bad > 0) print '(a, i0, a)', 'process ', me, ': copr_pdgemr2d_batch differs'
    do k = 2, 1, -1
      if (cb(k) >= 0) call blacs_gridexit(cb(k))
      if (ca(k) >= 0) call blacs_gridexit(ca(k))
    end do
    call blacs_gridexit(g)
  end function batch_d

  ! calls with a negative size (M, N or LENB) through the Fortran names, also where the
  ! other size is 0 (refused before the return on an empty copy): each must count
  ! exactly one error and leave A and B as they were; returns this process's failures
  integer function negative_sizes_d() result(bad)
    use, intrinsic :: iso_c_binding, only: c_ptr, c_loc
    character(len=*), parameter :: what(7) = [character(len=32) :: &
        'pdtran, M = -1', 'pdtran, M = 0, N = -1', 'pdgemr2d, M = 0, N = -1', &
        'batch, M = -1, N = 0', 'relabel, M = 0, N = -1', 'relabel, M = N = 0, LENB = -1', &
        'relabel, LENB = -1']
    integer :: g, gp, gq, gr, gc, k, lra, lca, lrb, lcb, desca(9), descb(9), whole(9)
    integer :: map(nprocs), one(1), mk(1), nk(1)
    integer(8) :: before
    real(dp), allocatable, target :: a(:), b(:)
    real(dp), allocatable :: a0(:), b0(:)
    type(c_ptr) :: ap(1), bp(1)
    bad = 0
    call make_grid(nprocs, g, gp, gq, gr, gc)
    call make_desc(12, 10, g, gp, gq, gr, gc, desca, lra, lca)
    call make_desc(12, 10, g, gp, gq, gr, gc, descb, lrb, lcb)
    call fill_d(a, desca, lra, lca, gr, gc, gp, gq, 11)
    call fill_d(b, descb, lrb, lcb, gr, gc, gp, gq, 12)
    allocate(a0, source=a)
    allocate(b0, source=b)
    ap = [c_loc(a)]
    bp = [c_loc(b)]
    one = [1]
    do k = 1, 7
      before = copr_capi_errors()
      whole = descb
      select case (k)
      case (1)
        call copr_pdtran(-1, 10, 1.0_dp, a, 1, 1, desca, 1.0_dp, b, 1, 1, descb)
      case (2)
        call copr_pdtran(0, -1, 1.0_dp, a, 1, 1, desca, 1.0_dp, b, 1, 1, descb)
      case (3)
        call copr_pdgemr2d(0, -1, a, 1, 1, desca, b, 1, 1, descb, g)
      case (4)
        mk = [-1]
        nk = [0]
        call copr_pdgemr2d_batch(1, mk, nk, ap, one, one, desca, bp, one, one, descb, g)
      case (5)
        whole(3:4) = [0, -1]
        call copr_pdgemr2d_relabel(0, -1, a, 1, 1, desca, b, size(b), whole, g, map)
      case (6)
        whole(3:4) = [0, 0]
        call copr_pdgemr2d_relabel(0, 0, a, 1, 1, desca, b, -1, whole, g, map)
      case default
        whole(3:4) = [5, 4]
        call copr_pdgemr2d_relabel(5, 4, a, 2, 3, desca, b, -1, whole, g, map)
      end select
      if (copr_capi_errors() /= before + 1) then
        print '(a, i0, a, a, a, i0, a)', 'process ', me, ': ', trim(what(k)), ': ', &
            copr_capi_errors() - before, ' errors counted, expected 1'
        bad = bad + 1
      end if
      if (any(a /= a0) .or. any(b /= b0)) then
        print '(a, i0, a, a, a)', 'process ', me, ': ', trim(what(k)), ': the data changed'
        bad = bad + 1
      end if
    end do
    call blacs_gridexit(g)
  end function negative_sizes_d
end module redist_d

! ---- type c ----
module redist_c
  use copr
  use redist_tools
  implicit none
contains
  complex(4) function elem_c(i, j, salt)
    integer, intent(in) :: i, j, salt
    elem_c = cmplx(val(i, j, 0, salt), val(i, j, 1, salt), 4)
  end function elem_c

  ! local array of the matrix on this process, filled from the global function
  subroutine fill_c(x, desc, locr, locc, myrow, mycol, nprow, npcol, salt)
    complex(4), allocatable, intent(out) :: x(:)
    integer, intent(in) :: desc(9), locr, locc, myrow, mycol, nprow, npcol, salt
    integer :: li, lj, lld
    lld = desc(9)
    allocate(x(lld * max(1, locc)))
    x = elem_c(-1000, -1000, 0)
    do lj = 0, locc - 1
      do li = 0, locr - 1
        x(1 + li + lj * lld) = elem_c(l2g(li, desc(5), myrow, desc(7), nprow), &
                                      l2g(lj, desc(6), mycol, desc(8), npcol), salt)
      end do
    end do
  end subroutine fill_c

  ! one p?gemr2d case; returns this process's mismatches
  integer function gemr2d_c() result(bad)
    integer :: g, gp, gq, gr, gc, ca, pa, qa, ra, cca, cb, pb, qb, rb, ccb
    integer :: m, n, ia, ja, ib, jb, desca(9), descb(9), lra, lca, lrb, lcb
    complex(4), allocatable :: a(:), b_copr(:), b_ref(:)
    call make_grid(nprocs, g, gp, gq, gr, gc)
    call make_grid(1 + pick(nprocs), ca, pa, qa, ra, cca)
    call make_grid(1 + pick(nprocs), cb, pb, qb, rb, ccb)
    m = 1 + pick(30)
    n = 1 + pick(30)
    ia = 1 + pick(6)
    ja = 1 + pick(6)
    ib = 1 + pick(6)
    jb = 1 + pick(6)
    call make_desc(ia - 1 + m + pick(4), ja - 1 + n + pick(4), ca, pa, qa, ra, cca, desca, lra, lca)
    call make_desc(ib - 1 + m + pick(4), jb - 1 + n + pick(4), cb, pb, qb, rb, ccb, descb, lrb, lcb)
    call fill_c(a, desca, lra, lca, ra, cca, pa, qa, 1)
    call fill_c(b_ref, descb, lrb, lcb, rb, ccb, pb, qb, 2)
    allocate(b_copr, source=b_ref)
    call pcgemr2d(m, n, a, ia, ja, desca, b_ref, ib, jb, descb, g)
    call copr_pcgemr2d(m, n, a, ia, ja, desca, b_copr, ib, jb, descb, g)
    bad = count(b_copr /= b_ref)
    if (bad > 0) print '(a, i0, a, 2(i0, 1x), a, 2(i0, 1x), a, 2(i0, 1x))', 'process ', me, &
        ': pcgemr2d differs: m n ', m, n, ' A grid ', pa, qa, ' B grid ', pb, qb
    if (cb >= 0) call blacs_gridexit(cb)
    if (ca >= 0) call blacs_gridexit(ca)
    if (g >= 0) call blacs_gridexit(g)
  end function gemr2d_c

  ! one transpose case (conj: the conjugate transpose, for c and z); mismatches
  integer function tran_c(conj) result(bad)
    logical, intent(in) :: conj
    real(dp), parameter :: re(5) = [0.0_dp, 1.0_dp, -1.0_dp, 0.5_dp, 2.0_dp]
    integer :: g, p, q, r, c, m, n, ia, ja, ic, jc, desca(9), descc(9), lra, lca, lrc, lcc
    complex(4) :: alpha, beta
    complex(4), allocatable :: a(:), c_copr(:), c_ref(:)
    call make_grid(1 + pick(nprocs), g, p, q, r, c)
    m = 1 + pick(30)
    n = 1 + pick(30)
    ia = 1 + pick(6)
    ja = 1 + pick(6)
    ic = 1 + pick(6)
    jc = 1 + pick(6)
    alpha = cmplx(re(1 + pick(5)), re(1 + pick(5)), 4)
    beta = cmplx(re(1 + pick(5)), re(1 + pick(5)), 4)
    call make_desc(ia - 1 + n + pick(4), ja - 1 + m + pick(4), g, p, q, r, c, desca, lra, lca)
    call make_desc(ic - 1 + m + pick(4), jc - 1 + n + pick(4), g, p, q, r, c, descc, lrc, lcc)
    bad = 0
    if (g < 0) return
    call fill_c(a, desca, lra, lca, r, c, p, q, 3)
    call fill_c(c_ref, descc, lrc, lcc, r, c, p, q, 4)
    allocate(c_copr, source=c_ref)
    if (conj) then
      call pctranc(m, n, alpha, a, ia, ja, desca, beta, c_ref, ic, jc, descc)
      call copr_pctranc(m, n, alpha, a, ia, ja, desca, beta, c_copr, ic, jc, descc)
    else
      call pctranu(m, n, alpha, a, ia, ja, desca, beta, c_ref, ic, jc, descc)
      call copr_pctranu(m, n, alpha, a, ia, ja, desca, beta, c_copr, ic, jc, descc)
    end if
    bad = count(c_copr /= c_ref)
    if (bad > 0) print '(a, i0, a, l1, a, 2(i0, 1x), a, 2(i0, 1x))', 'process ', me, &
        ': pctran (conj ', conj, ') differs: m n ', m, n, ' grid ', p, q
    call blacs_gridexit(g)
  end function tran_c
end module redist_c

! ---- type z ----
module redist_z
  use copr
  use redist_tools
  implicit none
contains
  complex(dp) function elem_z(i, j, salt)
    integer, intent(in) :: i, j, salt
    elem_z = cmplx(val(i, j, 0, salt), val(i, j, 1, salt), dp)
  end function elem_z

  ! local array of the matrix on this process, filled from the global function
  subroutine fill_z(x, desc, locr, locc, myrow, mycol, nprow, npcol, salt)
    complex(dp), allocatable, intent(out) :: x(:)
    integer, intent(in) :: desc(9), locr, locc, myrow, mycol, nprow, npcol, salt
    integer :: li, lj, lld
    lld = desc(9)
    allocate(x(lld * max(1, locc)))
    x = elem_z(-1000, -1000, 0)
    do lj = 0, locc - 1
      do li = 0, locr - 1
        x(1 + li + lj * lld) = elem_z(l2g(li, desc(5), myrow, desc(7), nprow), &
                                      l2g(lj, desc(6), mycol, desc(8), npcol), salt)
      end do
    end do
  end subroutine fill_z

  ! one p?gemr2d case; returns this process's mismatches
  integer function gemr2d_z() result(bad)
    integer :: g, gp, gq, gr, gc, ca, pa, qa, ra, cca, cb, pb, qb, rb, ccb
    integer :: m, n, ia, ja, ib, jb, desca(9), descb(9), lra, lca, lrb, lcb
    complex(dp), allocatable :: a(:), b_copr(:), b_ref(:)
    call make_grid(nprocs, g, gp, gq, gr, gc)
    call make_grid(1 + pick(nprocs), ca, pa, qa, ra, cca)
    call make_grid(1 + pick(nprocs), cb, pb, qb, rb, ccb)
    m = 1 + pick(30)
    n = 1 + pick(30)
    ia = 1 + pick(6)
    ja = 1 + pick(6)
    ib = 1 + pick(6)
    jb = 1 + pick(6)
    call make_desc(ia - 1 + m + pick(4), ja - 1 + n + pick(4), ca, pa, qa, ra, cca, desca, lra, lca)
    call make_desc(ib - 1 + m + pick(4), jb - 1 + n + pick(4), cb, pb, qb, rb, ccb, descb, lrb, lcb)
    call fill_z(a, desca, lra, lca, ra, cca, pa, qa, 1)
    call fill_z(b_ref, descb, lrb, lcb, rb, ccb, pb, qb, 2)
    allocate(b_copr, source=b_ref)
    call pzgemr2d(m, n, a, ia, ja, desca, b_ref, ib, jb, descb, g)
    call copr_pzgemr2d(m, n, a, ia, ja, desca, b_copr, ib, jb, descb, g)
    bad = count(b_copr /= b_ref)
    if (bad > 0) print '(a, i0, a, 2(i0, 1x), a, 2(i0, 1x), a, 2(i0, 1x))', 'process ', me, &
        ': pzgemr2d differs: m n ', m, n, ' A grid ', pa, qa, ' B grid ', pb, qb
    if (cb >= 0) call blacs_gridexit(cb)
    if (ca >= 0) call blacs_gridexit(ca)
    if (g >= 0) call blacs_gridexit(g)
  end function gemr2d_z

  ! one transpose case (conj: the conjugate transpose, for c and z); mismatches
  integer function tran_z(conj) result(bad)
    logical, intent(in) :: conj
    real(dp), parameter :: re(5) = [0.0_dp, 1.0_dp, -1.0_dp, 0.5_dp, 2.0_dp]
    integer :: g, p, q, r, c, m, n, ia, ja, ic, jc, desca(9), descc(9), lra, lca, lrc, lcc
    complex(dp) :: alpha, beta
    complex(dp), allocatable :: a(:), c_copr(:), c_ref(:)
    call make_grid(1 + pick(nprocs), g, p, q, r, c)
    m = 1 + pick(30)
    n = 1 + pick(30)
    ia = 1 + pick(6)
    ja = 1 + pick(6)
    ic = 1 + pick(6)
    jc = 1 + pick(6)
    alpha = cmplx(re(1 + pick(5)), re(1 + pick(5)), dp)
    beta = cmplx(re(1 + pick(5)), re(1 + pick(5)), dp)
    call make_desc(ia - 1 + n + pick(4), ja - 1 + m + pick(4), g, p, q, r, c, desca, lra, lca)
    call make_desc(ic - 1 + m + pick(4), jc - 1 + n + pick(4), g, p, q, r, c, descc, lrc, lcc)
    bad = 0
    if (g < 0) return
    call fill_z(a, desca, lra, lca, r, c, p, q, 3)
    call fill_z(c_ref, descc, lrc, lcc, r, c, p, q, 4)
    allocate(c_copr, source=c_ref)
    if (conj) then
      call pztranc(m, n, alpha, a, ia, ja, desca, beta, c_ref, ic, jc, descc)
      call copr_pztranc(m, n, alpha, a, ia, ja, desca, beta, c_copr, ic, jc, descc)
    else
      call pztranu(m, n, alpha, a, ia, ja, desca, beta, c_ref, ic, jc, descc)
      call copr_pztranu(m, n, alpha, a, ia, ja, desca, beta, c_copr, ic, jc, descc)
    end if
    bad = count(c_copr /= c_ref)
    if (bad > 0) print '(a, i0, a, l1, a, 2(i0, 1x), a, 2(i0, 1x))', 'process ', me, &
        ': pztran (conj ', conj, ') differs: m n ', m, n, ' grid ', p, q
    call blacs_gridexit(g)
  end function tran_z
end module redist_z

program redist_test_f
  use mpi
  use copr
  use redist_tools
  use redist_s
  use redist_d
  use redist_c
  use redist_z
  implicit none
  integer :: cases, k, t, bad, all, failed, ierr
  character(len=16) :: arg
  integer(8) :: before
#ifdef COPR_UNPREFIXED
  integer(8) :: served, all_served
#endif
  call blacs_pinfo(me, nprocs)
  cases = 12
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) cases
  end if
  rng = 977_8 + nprocs
  before = copr_capi_errors()
  failed = 0
  do k = 1, cases
    do t = 1, 4
      select case (t)
      case (1)
        bad = gemr2d_s() + tran_s(.false.)
      case (2)
        bad = gemr2d_d() + tran_d(.false.) + batch_d()
      case (3)
        bad = gemr2d_c() + tran_c(.false.) + tran_c(.true.)
      case default
        bad = gemr2d_z() + tran_z(.false.) + tran_z(.true.)
      end select
      call MPI_Allreduce(bad, all, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
      if (all /= 0) failed = failed + 1
    end do
  end do
  if (copr_capi_errors() /= before) then
    print '(a, i0, a)', 'process ', me, ': copr reported errors on valid calls'
    failed = failed + 1
  end if
  ! the bad calls, once the valid ones are counted
  bad = negative_sizes_d()
  call MPI_Allreduce(bad, all, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (all /= 0) failed = failed + 1
#ifdef COPR_UNPREFIXED
  served = copr_capi_calls()
  call MPI_Allreduce(served, all_served, 1, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (all_served == 0) then
    if (me == 0) print '(a)', 'copr served none of the calls of ScaLAPACK''s names'
    failed = failed + 1
  end if
  if (me == 0) print '(a, i0, a)', 'ScaLAPACK''s names relinked to libcopr_scalapack: copr served ', &
      all_served, ' calls'
#endif
  if (me == 0) print '(a, i0, a, i0, a, i0, a)', 'copr Fortran interface vs ScaLAPACK on ', &
      nprocs, ' processes: ', 4 * cases + 1 - failed, ' passed, ', failed, ' failed'
  call blacs_exit(1)
  call MPI_Finalize(ierr)
  if (failed /= 0) stop 1
end program redist_test_f
