! The traffic recorder's Fortran test: a known, irregular, rank-dependent traffic made
! of every kind of send (blocking, non-blocking, synchronous, buffered, ready,
! persistent with MPI_Start and MPI_Startall, MPI_Sendrecv, MPI_Sendrecv_replace), on
! MPI_COMM_WORLD and on a split communicator, and a neighbourhood collective on a
! Cartesian grid. Each process counts what it sends (destinations worked out from the
! split's colour and key and from grid coordinates), rank 0 gathers the counts and,
! after MPI_Finalize, compares them element by element with the file the recorder
! wrote (COPR_RECORD). Built with `use mpi`, or with `use mpi_f08` when F08 is defined.
!
!   mpirun -x LD_PRELOAD=libcopr_interpose.so -x COPR_RECORD=traffic.txt -n 4 record-test-f
!
! Exit status 0 when the file matches, 1 otherwise.
program record_test
#ifdef F08
  use mpi_f08
  use, intrinsic :: iso_c_binding, only: c_ptr
#else
  use mpi
#endif
  implicit none
#ifdef F08
  type(MPI_Comm) :: split, cart
  type(MPI_Request) :: sq(3), rq(3), pr
  type(MPI_Request) :: prs(1)
  type(MPI_Datatype) :: t
  type(c_ptr) :: detached
#else
  integer :: split, cart
  integer :: sq(3), rq(3), pr
  integer :: prs(1)
  integer :: t
#endif
  integer, parameter :: kinds = 12, maxcount = 64
  integer :: p, me, ierr, k, i, dest, src, n, rn, m, rm, steps, sd, ss, q, l, c, dl, sl
  integer :: nb(2), dims(1), tsize, rank0, world_size
  logical :: periods(1)
  integer(8), allocatable :: msgs(:), bytes(:), mine(:), all(:)
  double precision :: sbuf(3 * maxcount, 3), rbuf(3 * maxcount, 3)
  character(len=1), allocatable :: bsend_buffer(:)
  integer :: bsize
  character(len=4096) :: path
  character(len=16) :: a2a_env
  integer, allocatable :: a2a_s(:), a2a_r(:)

  call MPI_Init(ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, p, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, me, ierr)
  allocate (msgs(0:p - 1), bytes(0:p - 1))
  msgs = 0
  bytes = 0
  sbuf = 1
  bsize = 1048576
  allocate (bsend_buffer(bsize))
  call MPI_Buffer_attach(bsend_buffer, bsize, ierr)

  do k = 0, kinds - 1
    dest = mod(me + off(k), p)
    src = modulo(me - off(k), p)
    n = reps(me, k)
    rn = reps(src, k)
    m = sz(me, k)
    rm = sz(src, k)
    if (mod(k, 2) == 0) then
      t = MPI_INTEGER
    else
      t = MPI_DOUBLE_PRECISION
    end if
    call MPI_Type_size(t, tsize, ierr)
    if (k == 10 .or. k == 11) then
      ! MPI_Sendrecv, MPI_Sendrecv_replace: both sides run max(n, rn) steps
      steps = max(n, rn)
      do i = 1, steps
        sd = MPI_PROC_NULL
        ss = MPI_PROC_NULL
        if (i <= n) sd = dest
        if (i <= rn) ss = src
        if (k == 10) then
          call MPI_Sendrecv(sbuf, m, t, sd, k, rbuf, rm, t, ss, k, MPI_COMM_WORLD, &
                            MPI_STATUS_IGNORE, ierr)
          if (i <= n) call add(dest, m * tsize)
        else
          call MPI_Sendrecv_replace(sbuf, maxcount, t, sd, k, ss, k, MPI_COMM_WORLD, &
                                    MPI_STATUS_IGNORE, ierr)
          if (i <= n) call add(dest, maxcount * tsize)
        end if
      end do
      cycle
    end if
    do i = 1, rn
      call MPI_Irecv(rbuf(1, i), rm, t, src, k, MPI_COMM_WORLD, rq(i), ierr)
    end do
    if (k == 3 .or. k == 7) call MPI_Barrier(MPI_COMM_WORLD, ierr)
    if (k == 8 .or. k == 9) then
      if (k == 8) then
        call MPI_Send_init(sbuf, m, t, dest, k, MPI_COMM_WORLD, pr, ierr)
      else
        call MPI_Ssend_init(sbuf, m, t, dest, k, MPI_COMM_WORLD, pr, ierr)
      end if
      do i = 1, n
        if (mod(i, 2) == 1) then
          call MPI_Start(pr, ierr)
          call MPI_Wait(pr, MPI_STATUS_IGNORE, ierr)
        else
          prs(1) = pr
          call MPI_Startall(1, prs, ierr)
          call MPI_Wait(prs(1), MPI_STATUS_IGNORE, ierr)
        end if
        call add(dest, m * tsize)
      end do
      call MPI_Request_free(pr, ierr)
    else
      do i = 1, n
        select case (k)
        case (0)
          call MPI_Send(sbuf(1, i), m, t, dest, k, MPI_COMM_WORLD, ierr)
        case (1)
          call MPI_Ssend(sbuf(1, i), m, t, dest, k, MPI_COMM_WORLD, ierr)
        case (2)
          call MPI_Bsend(sbuf(1, i), m, t, dest, k, MPI_COMM_WORLD, ierr)
        case (3)
          call MPI_Rsend(sbuf(1, i), m, t, dest, k, MPI_COMM_WORLD, ierr)
        case (4)
          call MPI_Isend(sbuf(1, i), m, t, dest, k, MPI_COMM_WORLD, sq(i), ierr)
        case (5)
          call MPI_Issend(sbuf(1, i), m, t, dest, k, MPI_COMM_WORLD, sq(i), ierr)
        case (6)
          call MPI_Ibsend(sbuf(1, i), m, t, dest, k, MPI_COMM_WORLD, sq(i), ierr)
        case (7)
          call MPI_Irsend(sbuf(1, i), m, t, dest, k, MPI_COMM_WORLD, sq(i), ierr)
        end select
        call add(dest, m * tsize)
      end do
      if (k >= 4) call MPI_Waitall(n, sq, MPI_STATUSES_IGNORE, ierr)
    end if
    call MPI_Waitall(rn, rq, MPI_STATUSES_IGNORE, ierr)
  end do

  ! a split in descending world order: colour me mod 2, key -me
  c = mod(me, 2)
  call MPI_Comm_split(MPI_COMM_WORLD, c, -me, split, ierr)
  call MPI_Comm_size(split, q, ierr)
  call MPI_Comm_rank(split, l, ierr)
  dl = mod(l + 1, q)
  sl = modulo(l - 1, q)
  m = 2 + mod(me * 3, 11)
  rm = 2 + mod(member(c, sl, q) * 3, 11)
  call MPI_Irecv(rbuf, rm, MPI_INTEGER, sl, 7, split, rq(1), ierr)
  call MPI_Isend(sbuf, m, MPI_INTEGER, dl, 7, split, sq(1), ierr)
  call add(member(c, dl, q), m * 4)
  call MPI_Wait(sq(1), MPI_STATUS_IGNORE, ierr)
  call MPI_Wait(rq(1), MPI_STATUS_IGNORE, ierr)
  call MPI_Comm_free(split, ierr)

  ! a periodic ring as a Cartesian grid: neighbours me - 1 and me + 1
  dims(1) = p
  periods(1) = .true.
  call MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, .false., cart, ierr)
  nb(1) = modulo(me - 1, p)
  nb(2) = mod(me + 1, p)
  m = 2 + mod(p, 3)
  call MPI_Neighbor_alltoall(sbuf, m, MPI_INTEGER, rbuf, m, MPI_INTEGER, cart, ierr)
  call add(nb(1), m * 4)
  call add(nb(2), m * 4)
  call MPI_Comm_free(cart, ierr)

  ! an all-to-all of 2 integers per rank: in the graph only with COPR_RECORD_ALLTOALL=1
  allocate (a2a_s(2 * p), a2a_r(2 * p))
  a2a_s = me
  call MPI_Alltoall(a2a_s, 2, MPI_INTEGER, a2a_r, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call get_environment_variable("COPR_RECORD_ALLTOALL", a2a_env)
  if (trim(a2a_env) == "1") then
    do i = 0, p - 1
      call add(i, 8)
    end do
  end if

  allocate (mine(2 * p), all(2 * p * p))
  do i = 0, p - 1
    mine(2 * i + 1) = msgs(i)
    mine(2 * i + 2) = bytes(i)
  end do
  call MPI_Gather(mine, 2 * p, MPI_INTEGER8, all, 2 * p, MPI_INTEGER8, 0, MPI_COMM_WORLD, ierr)
#ifdef F08
  call MPI_Buffer_detach(detached, bsize, ierr)
#else
  call MPI_Buffer_detach(bsend_buffer, bsize, ierr)
#endif
  rank0 = me
  world_size = p
  call MPI_Finalize(ierr)
  if (rank0 /= 0) stop
  call get_environment_variable("COPR_RECORD", path)
  call compare(trim(path), world_size, all)

contains

  integer function off(kk)
    integer, intent(in) :: kk
    off = mod(1 + 2 * kk, p)
  end function

  integer function reps(r, kk)
    integer, intent(in) :: r, kk
    reps = 1 + mod(r + kk, 3)
  end function

  integer function sz(r, kk)
    integer, intent(in) :: r, kk
    sz = 1 + mod(5 * r + 7 * kk, maxcount - 1)
  end function

  ! world rank of rank ll of the split of colour cc (q members, descending)
  integer function member(cc, ll, qq)
    integer, intent(in) :: cc, ll, qq
    member = cc + 2 * (qq - 1 - ll)
  end function

  subroutine add(d, b)
    integer, intent(in) :: d, b
    msgs(d) = msgs(d) + 1
    bytes(d) = bytes(d) + b
  end subroutine

  subroutine compare(file, np, expected)
    character(len=*), intent(in) :: file
    integer, intent(in) :: np
    integer(8), intent(in) :: expected(:)
    integer(8), allocatable :: got(:)
    character(len=1024) :: line
    integer :: u, ios, a, b, h, failures, lines, edges, tasks, s, d
    integer(8) :: nbytes, nmsgs, e1, e2
    allocate (got(2 * np * np))
    got = 0
    failures = 0
    lines = 0
    tasks = -1
    open (newunit=u, file=file, status='old', action='read', iostat=ios)
    if (ios /= 0) then
      write (0, '(a)') 'record-test-f: the recording was not written'
      error stop 1
    end if
    do
      read (u, '(a)', iostat=ios) line
      if (ios /= 0) exit
      if (len_trim(line) == 0 .or. line(1:1) == '#') cycle
      if (line(1:6) == 'tasks ') then
        read (line(7:), *) tasks
        cycle
      end if
      h = index(line, '#')
      if (h == 0) then
        write (0, '(2a)') 'record-test-f: a line without its message count: ', trim(line)
        failures = failures + 1
        cycle
      end if
      read (line(1:h - 1), *) a, b, nbytes
      read (line(h + 1:), *) nmsgs
      got(2 * (a * np + b) + 1) = nmsgs
      got(2 * (a * np + b) + 2) = nbytes
      lines = lines + 1
    end do
    close (u)
    if (tasks /= np) then
      write (0, '(a,i0,a,i0)') 'record-test-f: tasks ', tasks, ', expected ', np
      failures = failures + 1
    end if
    edges = 0
    do s = 0, np - 1
      do d = 0, np - 1
        e1 = expected(2 * (s * np + d) + 1)
        e2 = expected(2 * (s * np + d) + 2)
        if (e1 /= 0) edges = edges + 1
        if (got(2 * (s * np + d) + 1) /= e1 .or. got(2 * (s * np + d) + 2) /= e2) then
          write (0, '(a,i0,a,i0,a,i0,a,i0,a,i0,a,i0,a)') 'record-test-f: ', s, ' -> ', d, &
            ': recorded ', got(2 * (s * np + d) + 1), ' messages, ', got(2 * (s * np + d) + 2), &
            ' bytes; sent ', e1, ' messages, ', e2, ' bytes'
          failures = failures + 1
        end if
      end do
    end do
    if (lines /= edges) then
      write (0, '(a,i0,a,i0)') 'record-test-f: edge lines ', lines, ', pairs sent to ', edges
      failures = failures + 1
    end if
    if (failures > 0) then
      write (0, '(a,i0,a)') 'record-test-f: ', failures, ' failures'
      error stop 1
    end if
    write (*, '(a,i0,a,i0,a)') 'record-test-f: ', np, ' ranks, ', edges, &
      ' edges: the recording equals the program''s own counts'
  end subroutine

end program
