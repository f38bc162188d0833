! copr_cart_create and copr_comm_reorder from Fortran (the module copr, MPI handles as
! integers), on MPI_COMM_WORLD:
!
!   cart_test_f D1 D2 ORDER
!
! D1 x D2 is the periodic grid (D1*D2 processes); ORDER lists the expected grid rank of
! the process on each slot, one integer per line, in slot order (slot = world rank: run
! it with COPR_EMULATE_NODE_SIZE set). Checks the topology, the order, the coordinates
! against MPI_Cart_rank, MPI_Cart_shift in both dimensions, the same order from
! copr_comm_reorder, and that a missing machine file is an error (nonzero, null handle).
program cart_test_f
  use mpi
  use copr
  use, intrinsic :: iso_c_binding, only: c_int, c_null_char
  implicit none
  integer :: ierr, me, p, topo, crank, rrank, failures, total, d, src, dst, expect, k
  integer :: dims(2), periods(2), coords(2), n(2), by_slot(4096)
  integer(c_int) :: rc, cart, plain, bad
  character(len=256) :: arg

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  failures = 0
  if (command_argument_count() /= 3 .or. p > 4096) then
    if (me == 0) write (*, '(a)') 'usage: cart_test_f D1 D2 ORDER'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  call get_command_argument(1, arg)
  read (arg, *) dims(1)
  call get_command_argument(2, arg)
  read (arg, *) dims(2)
  call get_command_argument(3, arg)
  open (unit=10, file=trim(arg), status='old', action='read')
  do k = 1, p
    read (10, *) by_slot(k)
  end do
  close (10)
  periods = 1

  rc = copr_cart_create(MPI_COMM_WORLD, 2, dims, periods, c_null_char, cart)
  call check(rc == 0, 'copr_cart_create returned an error')
  call MPI_Topo_test(cart, topo, ierr)
  call check(topo == MPI_CART, 'not a Cartesian communicator')
  call MPI_Comm_rank(cart, crank, ierr)
  call check(crank == by_slot(me + 1), 'grid rank differs from the expected order')
  call MPI_Cart_coords(cart, crank, 2, coords, ierr)
  call check(coords(1) * dims(2) + coords(2) == crank, 'coordinates are not row-major')
  do d = 0, 1
    call MPI_Cart_shift(cart, d, 1, src, dst, ierr)
    n = coords
    n(d + 1) = modulo(coords(d + 1) + 1, dims(d + 1))
    call MPI_Cart_rank(cart, n, expect, ierr)
    call check(dst == expect, 'MPI_Cart_shift destination')
    n(d + 1) = modulo(coords(d + 1) - 1, dims(d + 1))
    call MPI_Cart_rank(cart, n, expect, ierr)
    call check(src == expect, 'MPI_Cart_shift source')
  end do

  rc = copr_comm_reorder(MPI_COMM_WORLD, 2, dims, periods, c_null_char, plain)
  call check(rc == 0, 'copr_comm_reorder returned an error')
  call MPI_Comm_rank(plain, rrank, ierr)
  call check(rrank == crank, 'copr_comm_reorder and copr_cart_create differ')

  rc = copr_comm_reorder(MPI_COMM_WORLD, 2, dims, periods, '/nonexistent/m.toml'//c_null_char, bad)
  call check(rc /= 0 .and. bad == MPI_COMM_NULL, 'a missing machine file is not an error')

  call MPI_Comm_free(plain, ierr)
  call MPI_Comm_free(cart, ierr)
  call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (me == 0) then
    if (total == 0) then
      write (*, '(a)') 'fortran copr_cart_create / copr_comm_reorder: ok'
    else
      write (*, '(a)') 'fortran copr_cart_create / copr_comm_reorder: FAILED'
    end if
  end if
  call MPI_Finalize(ierr)
  if (total /= 0) stop 1

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      write (*, '(a, i0, 2a)') 'rank ', me, ': check failed: ', what
      failures = failures + 1
    end if
  end subroutine check
end program cart_test_f
