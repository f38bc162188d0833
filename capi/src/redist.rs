//! The two ScaLAPACK operations on copr's engine: argument checks with ScaLAPACK's
//! parameter numbers, BLACS contexts to communicators and layouts, one engine call.

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

use copr::engine::{Element, Job, Relabeling, TargetContents, Transform};
use copr::layout::{BlockCyclic, BlockCyclicSpec, Layout, Op, Order, Submatrix};
use copr::transport::Transport;

use crate::blacs::{self, GridInfo};
use crate::descriptor::{self, Reader};
use crate::presence::Verdict;
use crate::state::{self, Comm, State};

/// A bad argument, by ScaLAPACK's parameter number (1-based position in the call).
#[derive(Debug)]
pub(crate) struct Bad {
    arg: u32,
    name: &'static str,
    /// The copy of a batch the argument belongs to.
    item: Option<usize>,
    detail: String,
}

pub(crate) fn bad(arg: u32, name: &'static str, detail: impl Into<String>) -> Bad {
    Bad {
        arg,
        name,
        item: None,
        detail: detail.into(),
    }
}

/// Why a call did nothing; every such call is counted
/// ([`crate::exports::copr_capi_errors`]).
pub(crate) enum Failed {
    /// A bad argument on this process (it prints the message).
    Here(Bad),
    /// A bad argument found by another process of the call (that process printed it).
    Elsewhere,
    /// Found by every process alike: only the first process of the call prints it.
    Everywhere(String),
    /// An error of the engine or of MPI (each process prints its own).
    Engine(String),
}

/// Runs one entry point: catches panics (they never cross the C boundary), prints what
/// went wrong on standard error and counts it; `true` when the call succeeded.
pub(crate) fn run(
    routine: &str,
    body: impl FnOnce(&mut State) -> Result<(), (i32, Failed)>,
) -> bool {
    state::CALLS.fetch_add(1, Ordering::Relaxed);
    let mut state = state::lock();
    let outcome = catch_unwind(AssertUnwindSafe(|| body(&mut state)));
    let message = match outcome {
        Ok(Ok(())) => return true,
        Ok(Err((_, Failed::Elsewhere))) => None,
        Ok(Err((rank, Failed::Everywhere(m)))) => (rank == 0).then(|| format!("{routine}: {m}")),
        Ok(Err((rank, Failed::Here(b)))) => Some(format!(
            "{routine}: parameter {} ({}{}) had an illegal value{}: {}",
            b.arg,
            b.name,
            b.item.map_or(String::new(), |k| format!("[{k}]")),
            on(rank),
            b.detail
        )),
        Ok(Err((rank, Failed::Engine(m)))) => Some(format!("{routine}{}: {m}", on(rank))),
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            Some(format!("{routine}: internal error (a bug in copr): {what}"))
        }
    };
    state.errors += 1;
    if let Some(m) = message {
        eprintln!("{m}; nothing was changed");
    }
    false
}

/// " on process r" (the rank in the communicator of the call's context), when known.
fn on(rank: i32) -> String {
    if rank < 0 {
        String::new()
    } else {
        format!(" on process {rank}")
    }
}

/// The layout of the submatrix `sub` (0-based) of the matrix described by `d` on a
/// `p × q` grid whose row-major position k is rank `rank_map[k]` (or k), in a
/// communicator of `ranks` ranks, with this process's `lld`.
///
/// The global matrix is cut after the submatrix: the rows and columns that remain are
/// distributed as before, and the local buffer the layout implies ends at the
/// submatrix's last local column, within what ScaLAPACK requires the caller to have.
fn layout(
    d: &Desc,
    grid: (usize, usize),
    sub: Submatrix,
    lld: Option<usize>,
    rank_map: Option<Vec<usize>>,
    ranks: usize,
) -> copr::Result<BlockCyclic> {
    let mut spec = BlockCyclicSpec::new(sub.ia + sub.m, sub.ja + sub.n, d.mb, d.nb, grid.0, grid.1);
    spec.grid_order = Order::RowMajor;
    spec.rsrc = d.rsrc;
    spec.csrc = d.csrc;
    spec.submatrix = Some(sub);
    spec.ranks = Some(ranks);
    spec.local_order = Order::ColMajor;
    spec.lld = lld;
    spec.rank_map = rank_map;
    BlockCyclic::new(spec)
}

/// A descriptor's global fields, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Desc {
    m: usize,
    n: usize,
    mb: usize,
    nb: usize,
    rsrc: usize,
    csrc: usize,
    lld: usize,
}

/// Positions of one matrix's arguments in the call.
struct Args {
    ptr: (u32, &'static str),
    i: (u32, &'static str),
    j: (u32, &'static str),
    desc: (u32, &'static str),
}

impl Args {
    /// A matrix's four arguments, in ScaLAPACK's order (array, row, column,
    /// descriptor) from parameter number `first` on.
    fn from(first: u32, [ptr, i, j, desc]: [&'static str; 4]) -> Self {
        Self {
            ptr: (first, ptr),
            i: (first + 1, i),
            j: (first + 2, j),
            desc: (first + 3, desc),
        }
    }
}

/// One matrix of the call on a process of its grid, checked there.
struct Side {
    grid: (usize, usize),
    pos: (usize, usize),
    desc: Desc,
    /// 0-based first row and column.
    i0: usize,
    j0: usize,
    /// Elements of this process's local buffer that the call may touch.
    len: usize,
}

/// Checks what ScaLAPACK requires of `sub(X) = X(i : i + rows - 1, j : j + cols - 1)`
/// on a process of X's grid: the descriptor (type 1, sizes, sources on the grid, LLD
/// at least this process's local rows), the submatrix inside X, and a buffer pointer
/// that is aligned and not null when the process holds part of X.
fn check_side<T>(
    raw: [i32; 9],
    info: GridInfo,
    (i, j): (c_int, c_int),
    (rows, cols): (usize, usize),
    ptr: *const T,
    args: &Args,
) -> Result<Side, Bad> {
    let (desc_arg, desc_name) = args.desc;
    let (p, q) = (info.p as usize, info.q as usize);
    let pos = info.me.expect("a member");
    let pos = (pos.0 as usize, pos.1 as usize);
    // type, non-negative fields, sources on the grid, positive block sizes and LLD,
    // LLD against this process's local rows of the whole matrix (as ScaLAPACK)
    let whole = BlockCyclic::from_descriptor(raw, p, q, Order::RowMajor)
        .map_err(|e| bad(desc_arg, desc_name, e.to_string()))?;
    whole
        .check_storage(pos.0 * q + pos.1)
        .map_err(|e| bad(desc_arg, desc_name, e.to_string()))?;
    let field = |k: usize| raw[k] as usize; // non-negative: checked above
    let desc = Desc {
        m: field(2),
        n: field(3),
        mb: field(4),
        nb: field(5),
        rsrc: field(6),
        csrc: field(7),
        lld: field(8),
    };
    for ((arg, name), start, len, size, what) in [
        (args.i, i, rows, desc.m, "rows"),
        (args.j, j, cols, desc.n, "columns"),
    ] {
        if start < 1 || (start as usize - 1).saturating_add(len) > size {
            return Err(bad(
                arg,
                name,
                format!(
                    "{name} = {start}, but the submatrix's {len} {what} from there do not fit in the matrix's {size} {what} (indices are 1-based)"
                ),
            ));
        }
    }
    let (i0, j0) = (i as usize - 1, j as usize - 1);
    let sub = Submatrix {
        ia: i0,
        ja: j0,
        m: rows,
        n: cols,
    };
    let local = layout(&desc, (p, q), sub, Some(desc.lld), None, p * q)
        .map_err(|e| bad(desc_arg, desc_name, e.to_string()))?;
    let len = local.local_len(pos.0 * q + pos.1);
    let (ptr_arg, ptr_name) = args.ptr;
    if len > 0 && ptr.is_null() {
        return Err(bad(
            ptr_arg,
            ptr_name,
            format!("null, but this process holds {len} elements of the matrix"),
        ));
    }
    if len > 0 && (ptr as usize) % std::mem::align_of::<T>() != 0 {
        return Err(bad(
            ptr_arg,
            ptr_name,
            format!(
                "{ptr:p} is not aligned to {} bytes",
                std::mem::align_of::<T>()
            ),
        ));
    }
    Ok(Side {
        grid: (p, q),
        pos,
        desc,
        i0,
        j0,
        len,
    })
}

/// Whether two buffers share memory.
fn overlap<T>(a: *const T, a_len: usize, b: *const T, b_len: usize) -> bool {
    let (a, b) = (a as usize, b as usize);
    let size = std::mem::size_of::<T>();
    let end = |start: usize, len: usize| start.saturating_add(len.saturating_mul(size));
    a_len > 0 && b_len > 0 && a < end(b, b_len) && b < end(a, a_len)
}

/// Words of one matrix's description gathered from every process (13 each).
const SIDE_WORDS: usize = 13;

fn side_words(side: Option<&Side>) -> [u64; SIDE_WORDS] {
    let Some(s) = side else {
        return [0; SIDE_WORDS];
    };
    let d = s.desc;
    [
        1, s.grid.0, s.grid.1, s.pos.0, s.pos.1, d.m, d.n, d.mb, d.nb, d.rsrc, d.csrc, s.i0, s.j0,
    ]
    .map(|x| x as u64)
}

/// One matrix's layout in the call's communicator, from what its grid's processes
/// reported (`rows[r]` from rank r): all of them must describe the same matrix, and the
/// grid's positions must be filled by the call's processes, each once.
fn gathered_layout(
    rows: &[&[u64]],
    (m, n): (usize, usize),
    own_lld: Option<usize>,
    what: &str,
) -> Result<Layout, String> {
    let members: Vec<usize> = (0..rows.len()).filter(|&r| rows[r][0] == 1).collect();
    let Some(&first) = members.first() else {
        return Err(format!(
            "no process of the context ICTXT is in {what}'s grid"
        ));
    };
    // grid shape, then the descriptor's global fields and the submatrix's start
    let global = |r: usize| -> Vec<u64> {
        let w = rows[r];
        [1, 2, 5, 6, 7, 8, 9, 10, 11, 12]
            .iter()
            .map(|&k| w[k])
            .collect()
    };
    let reference = global(first);
    if let Some(&r) = members.iter().find(|&&r| global(r) != reference) {
        return Err(format!(
            "processes {first} and {r} of ICTXT pass different global arguments for {what} (grid, descriptor or submatrix start)"
        ));
    }
    let w = rows[first];
    let (p, q) = (w[1] as usize, w[2] as usize);
    let mut map = vec![usize::MAX; p * q];
    for &r in &members {
        let k = rows[r][3] as usize * q + rows[r][4] as usize;
        if map[k] != usize::MAX {
            return Err(format!(
                "processes {} and {r} of ICTXT are both at position {k} of {what}'s grid",
                map[k]
            ));
        }
        map[k] = r;
    }
    if let Some(k) = map.iter().position(|&r| r == usize::MAX) {
        return Err(format!(
            "the process at position ({}, {}) of {what}'s grid is not in the context ICTXT",
            k / q,
            k % q
        ));
    }
    let desc = Desc {
        m: w[5] as usize,
        n: w[6] as usize,
        mb: w[7] as usize,
        nb: w[8] as usize,
        rsrc: w[9] as usize,
        csrc: w[10] as usize,
        lld: 0,
    };
    let sub = Submatrix {
        ia: w[11] as usize,
        ja: w[12] as usize,
        m,
        n,
    };
    layout(&desc, (p, q), sub, own_lld, Some(map), rows.len())
        .map(Layout::from)
        .map_err(|e| format!("{what}: {e}"))
}

/// The grid of BLACS context `ctxt` and copr's side of its communicator, for a process
/// in the grid (else a bad argument `arg`, the context being `prefix ctxt`).
fn context_comm<'s>(
    state: &'s mut State,
    ctxt: c_int,
    (arg, name): (u32, &'static str),
    prefix: &str,
) -> Result<(GridInfo, &'s mut Comm), (i32, Failed)> {
    let Some(
        info @ GridInfo {
            me: Some((row, col)),
            ..
        },
    ) = blacs::gridinfo(ctxt)
    else {
        return Err((
            -1,
            Failed::Here(bad(
                arg,
                name,
                format!("{prefix}{ctxt} is not a BLACS context that holds this process"),
            )),
        ));
    };
    // SAFETY: a live context holding this process (just checked).
    let (raw, me) = unsafe { (blacs::communicator(ctxt), blacs::pnum(ctxt, row, col)) };
    // the processes of the context meet before any collective (see crate::presence)
    // SAFETY: BLACS's communicator of that context.
    let (verdict, found) = unsafe { state.meet(raw) };
    if let Verdict::Fail(_) = verdict {
        return Err((me, Failed::Elsewhere));
    }
    // SAFETY: BLACS's communicator of that context, `found` answered just now.
    let comm = unsafe { state.comm(found, raw) };
    let rank = comm.transport.rank();
    if me as usize != rank {
        return Err((
            rank as i32,
            Failed::Engine(format!(
                "BLACS places this process at rank {me} of its communicator, MPI at rank {rank}"
            )),
        ));
    }
    Ok((info, comm))
}

/// The communicator on which this process meets the others of a call whose context
/// is `ctxt` (parameter `arg`, the context written `prefix ctxt` in messages), and
/// the bad argument to report when `ctxt` is not a live context holding this process.
///
/// Such a process cannot tell which processes take part, yet they wait for it: it
/// joins the call on the communicator of `alternative` (a context that must be the
/// same, such as DESCC's for `p?tran`) when that one holds it, and there reports the
/// error with the others. Else it answers the group that waits for it, if one does
/// within `COPR_CONTEXT_WAIT` seconds (see [`crate::presence`]), and returns its
/// error; so do the processes of that group. A context of -1 (BLACS's "not in this
/// grid") says the process takes no part: it returns alone at once.
#[allow(clippy::type_complexity)]
pub(crate) fn joined_comm<'s>(
    state: &'s mut State,
    ctxt: c_int,
    arg: (u32, &'static str),
    prefix: &str,
    alternative: Option<c_int>,
) -> Result<(Option<GridInfo>, &'s mut Comm, Option<Bad>), (i32, Failed)> {
    let holds = |c: c_int| matches!(blacs::gridinfo(c), Some(GridInfo { me: Some(_), .. }));
    if holds(ctxt) {
        let (info, comm) = context_comm(state, ctxt, arg, prefix)?;
        return Ok((Some(info), comm, None));
    }
    let refused = bad(
        arg.0,
        arg.1,
        format!("{prefix}{ctxt} is not a BLACS context that holds this process"),
    );
    if let Some(other) = alternative.filter(|&c| holds(c)) {
        let (_, comm) = context_comm(state, other, arg, prefix)?;
        return Ok((None, comm, Some(refused)));
    }
    if ctxt != -1 {
        state.presence.refuse();
    }
    Err((-1, Failed::Here(refused)))
}

/// The call's one collective step before any data moves: every process's `mine`
/// (first word 1 where it found a bad argument, `own`), gathered, so that all return
/// together when any found one.
pub(crate) fn gather_verdicts(
    transport: &mut dyn Transport,
    mine: &[u64],
    own: Option<Bad>,
) -> Result<Vec<u64>, (i32, Failed)> {
    let rank = transport.rank() as i32;
    let mut all = vec![0u64; mine.len() * transport.size()];
    transport
        .all_gather(mine, &mut all)
        .map_err(|e| (rank, Failed::Engine(e.to_string())))?;
    if let Some(e) = own {
        return Err((rank, Failed::Here(e)));
    }
    if all.chunks_exact(mine.len()).any(|w| w[0] != 0) {
        return Err((rank, Failed::Elsewhere));
    }
    Ok(all)
}

/// This process's local buffer of `len` elements at `ptr` (empty when `len` is 0).
///
/// # Safety
/// When `len > 0`, `ptr` is aligned and valid for `len` reads.
unsafe fn source<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if len == 0 {
        return &[];
    }
    // SAFETY: the caller's guarantee.
    unsafe { std::slice::from_raw_parts(ptr, len) }
}

/// As [`source`], writable.
///
/// # Safety
/// When `len > 0`, `ptr` is aligned, valid for `len` reads and writes, and no other
/// reference to that memory is alive.
unsafe fn target<'a, T>(ptr: *mut T, len: usize) -> &'a mut [T] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: the caller's guarantee.
    unsafe { std::slice::from_raw_parts_mut(ptr, len) }
}

/// One `sub(B) ← sub(A)` with ScaLAPACK's `p?gemr2d` arguments (A the source, B the
/// target).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CopyArgs<T> {
    pub(crate) m: c_int,
    pub(crate) n: c_int,
    pub(crate) a: *const T,
    pub(crate) ia: c_int,
    pub(crate) ja: c_int,
    pub(crate) desca: *const c_int,
    pub(crate) b: *mut T,
    pub(crate) ib: c_int,
    pub(crate) jb: c_int,
    pub(crate) descb: *const c_int,
}

/// The kind of redistribution call: how its parameters are numbered and where B's
/// blocks end up.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Call {
    /// `p?gemr2d`: one copy, parameters numbered as ScaLAPACK numbers them.
    Single,
    /// Several copies in one round: parameter 1 is their count, so each of
    /// `p?gemr2d`'s parameters comes one later, and names carry the copy's index.
    Batch,
    /// One copy to the whole of B with B's grid relabeled: parameters M, N, A, IA, JA,
    /// DESCA, B, LENB, DESCB, ICTXT, MAP (1 to 11). B's local buffer holds `lenb`
    /// elements on every process of ICTXT; `map[r + c·P]` receives the ICTXT rank that
    /// holds B's grid position (r, c) afterwards.
    Relabeled { lenb: c_int, map: *mut c_int },
}

/// A process's side of A and of B (`None` outside that matrix's grid).
type Sides = (Option<Side>, Option<Side>);

/// This process's checks of copy `c` (parameters numbered by `a_args`, `b_args`, `mn`):
/// its side of A and of B, where it is in their grids.
fn check_copy<T>(
    c: &CopyArgs<T>,
    (a_args, b_args): (&Args, &Args),
    mn: [(u32, &'static str); 2],
    whole_b: bool,
) -> Result<Sides, Bad> {
    if c.m < 0 {
        return Err(bad(mn[0].0, mn[0].1, format!("{} is negative", c.m)));
    }
    if c.n < 0 {
        return Err(bad(mn[1].0, mn[1].1, format!("{} is negative", c.n)));
    }
    let (mu, nu) = (c.m as usize, c.n as usize);
    let mut sides = [None, None];
    for (k, (desc, ptr, i, j, args)) in [
        (c.desca, c.a, c.ia, c.ja, a_args),
        (c.descb, c.b.cast_const(), c.ib, c.jb, b_args),
    ]
    .into_iter()
    .enumerate()
    {
        // SAFETY: ScaLAPACK's contract: a descriptor of 9 ints
        let raw = unsafe { descriptor::read(desc, Reader::Redist) }
            .map_err(|e| bad(args.desc.0, args.desc.1, e))?;
        let Some(raw) = raw else {
            return Err(bad(args.desc.0, args.desc.1, "null"));
        };
        if raw[1] == -1 {
            continue; // not in this matrix's grid
        }
        let Some(info) = blacs::gridinfo(raw[1]) else {
            return Err(bad(
                args.desc.0,
                args.desc.1,
                format!(
                    "CTXT = {} is neither -1 nor a BLACS context (parameter entry 2)",
                    raw[1]
                ),
            ));
        };
        if k == 1 && whole_b && (raw[2], raw[3]) != (c.m, c.n) {
            return Err(bad(
                mn[0].0,
                mn[0].1,
                format!(
                    "M x N = {} x {}, but the relabeled copy fills the whole of B, which is {} x {}",
                    c.m, c.n, raw[2], raw[3]
                ),
            ));
        }
        if info.me.is_some() {
            sides[k] = Some(check_side(raw, info, (i, j), (mu, nu), ptr, args)?);
        }
    }
    let [sa, sb] = sides;
    Ok((sa, sb))
}

/// The memory this process's part of a call reads (`false`) or writes (`true`):
/// pointer, elements, which copy, whether it is B.
type Span<T> = (*const T, usize, usize, bool);

/// The first written span that shares memory with another span, as a bad argument.
fn overlapping<T>(spans: &[Span<T>], b_arg: (u32, &'static str), batch: bool) -> Option<Bad> {
    for (x, &(p, len, k, written)) in spans.iter().enumerate() {
        if !written {
            continue;
        }
        for (y, &(q, qlen, l, b)) in spans.iter().enumerate() {
            if x != y && overlap(p, len, q, qlen) {
                let other = match (batch, b) {
                    (false, _) => "A".to_string(),
                    (true, false) => format!("A[{l}]"),
                    (true, true) => format!("B[{l}]"),
                };
                let mut e = bad(
                    b_arg.0,
                    b_arg.1,
                    format!("shares memory with {other} on this process"),
                );
                if batch {
                    e.item = Some(k);
                }
                return Some(e);
            }
        }
    }
    None
}

/// `sub(B) ← sub(A)` for every copy of `copies` in one round, with ScaLAPACK's
/// `p?gemr2d` arguments (`ictxt` a context holding every process of the grids), as
/// `call` says: a plain `p?gemr2d`, a batch, or a relabeled whole target.
///
/// `refused` is a bad argument this process found before it could read the copies
/// (a batch's COUNT or a null array): the call then fails on every process of ICTXT
/// together, as for any other bad argument.
///
/// A batch takes one collective step even when it has nothing to copy, so that the
/// processes agree on the number of copies (and on `refused`) instead of some waiting
/// for others that returned.
///
/// # Safety
/// As the exported entry points: ScaLAPACK's contract for these arguments; for
/// [`Call::Relabeled`], `b` valid for `lenb` elements and `map` for P·Q ints.
pub(crate) unsafe fn redistribute<T: Element>(
    routine: &str,
    copies: &[CopyArgs<T>],
    ictxt: c_int,
    call: Call,
    refused: Option<Bad>,
) {
    let batch = matches!(call, Call::Batch);
    // ScaLAPACK returns at once when there is nothing to copy; a negative M, N or LENB
    // is refused first (as PBLAS checks its arguments before its quick return), so
    // M = 0 with N < 0 is an error on every entry point, not an empty copy
    let live: Vec<(usize, CopyArgs<T>)> = copies
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, c)| (c.m != 0 && c.n != 0) || c.m < 0 || c.n < 0)
        .collect();
    let negative_lenb = matches!(call, Call::Relabeled { lenb, .. } if lenb < 0);
    if live.is_empty() && !batch && refused.is_none() && !negative_lenb {
        state::CALLS.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let relabel = match call {
        Call::Relabeled { lenb, map } => Some((lenb, map)),
        _ => None,
    };
    run(routine, |state| {
        let shift = u32::from(batch);
        let ictxt_arg = if relabel.is_some() { 10 } else { 11 + shift };
        let (_, comm, stranger) = joined_comm(state, ictxt, (ictxt_arg, "ICTXT"), "", None)?;
        let refused = refused.or(stranger);
        let rank_i = comm.transport.rank() as i32;

        // this process's own checks, in ScaLAPACK's order of parameters
        let args = CallArgs::of(shift, relabel.is_some());
        let (mut err, sides) =
            match refused.map_or_else(|| check_local(&live, &args, relabel, batch), Err) {
                Ok(sides) => (None, sides),
                Err(e) => (Some(e), Vec::new()),
            };

        // a batch: the processes must agree on their verdicts and the number of copies
        // before they gather words about each
        if batch {
            agree_on_batch(&mut comm.transport, live.len(), err.take())?;
            if live.is_empty() {
                return Ok(()); // nothing to copy anywhere
            }
        }

        // one gather: every process's verdict, and for every copy M, N and where the
        // process is in each grid
        let mut mine = vec![u64::from(err.is_some())];
        for (i, &(_, c)) in live.iter().enumerate() {
            let (sa, sb) = sides
                .get(i)
                .map_or((None, None), |(a, b)| (a.as_ref(), b.as_ref()));
            mine.extend([c.m as u64, c.n as u64]);
            mine.extend(side_words(sa));
            mine.extend(side_words(sb));
        }
        let width = mine.len();
        let all = gather_verdicts(&mut comm.transport, &mine, err)?;
        let rows: Vec<&[u64]> = all.chunks_exact(width).collect();
        let gathered = Gathered {
            rows: &rows,
            rank: comm.transport.rank(),
            batch,
            relabel: relabel.map(|(lenb, _)| lenb),
        };
        let (transforms, lens) = gathered.transforms(&live, &sides)?;
        // SAFETY: pointers checked (aligned, not null where used), lengths within what
        // ScaLAPACK requires the caller's buffers to hold (LENB for a relabeled B), and
        // no written buffer shares memory with another of the call.
        let mut jobs: Vec<Job<'_, T>> = live
            .iter()
            .zip(&lens)
            .map(|(&(_, c), &(a_len, b_len))| unsafe {
                Job::copy(source(c.a, a_len), target(c.b, b_len))
            })
            .collect();
        let plan = comm
            .cache
            .execute(&mut comm.transport, &transforms, &mut jobs)
            .map_err(|e| (rank_i, Failed::Engine(e.to_string())))?;
        comm.shared_reads += plan.last_stats().read_from_source as u64;
        if let Some((_, map)) = relabel {
            // SAFETY: MAP holds P·Q ints (the caller's contract), checked not null.
            unsafe { write_map(plan.target(0), map) }.map_err(|e| (rank_i, e))?;
        }
        Ok(())
    });
}

/// Where each argument of a call is, for messages: A's and B's four arguments, M and N.
struct CallArgs {
    a: Args,
    b: Args,
    mn: [(u32, &'static str); 2],
}

impl CallArgs {
    /// The arguments of `p?gemr2d` (`shift` 0) or of its batch (`shift` 1, after
    /// COUNT), or of the relabeled copy (B whole: IB = JB = 1, checked first).
    fn of(shift: u32, relabeled: bool) -> Self {
        let b = if relabeled {
            Args {
                ptr: (7, "B"),
                i: (0, "IB"),
                j: (0, "JB"),
                desc: (9, "DESCB"),
            }
        } else {
            Args::from(7 + shift, ["B", "IB", "JB", "DESCB"])
        };
        Self {
            a: Args::from(3 + shift, ["A", "IA", "JA", "DESCA"]),
            b,
            mn: [(1 + shift, "M"), (2 + shift, "N")],
        }
    }
}

/// This process's own checks of every copy with something to copy or a negative size
/// (`live`, with their indices in the batch), and of a relabeled call's B, LENB and
/// MAP; then no written buffer may overlap another buffer of the call.
fn check_local<T: Element>(
    live: &[(usize, CopyArgs<T>)],
    args: &CallArgs,
    relabel: Option<(c_int, *mut c_int)>,
    batch: bool,
) -> Result<Vec<Sides>, Bad> {
    let mut sides = Vec::with_capacity(live.len());
    let mut spans: Vec<Span<T>> = Vec::new();
    for &(k, c) in live {
        let (sa, sb) =
            check_copy(&c, (&args.a, &args.b), args.mn, relabel.is_some()).map_err(|mut e| {
                if batch {
                    e.item = Some(k);
                }
                e
            })?;
        spans.push((c.a, sa.as_ref().map_or(0, |s| s.len), k, false));
        if relabel.is_none() {
            spans.push((c.b.cast_const(), sb.as_ref().map_or(0, |s| s.len), k, true));
        }
        sides.push((sa, sb));
    }
    if let Some((lenb, map)) = relabel {
        if lenb < 0 {
            return Err(bad(8, "LENB", format!("{lenb} is negative")));
        }
        let Some(&(_, copy)) = live.first() else {
            return Ok(sides); // nothing to copy (not reached: such a call returned)
        };
        let b = copy.b;
        if lenb > 0 && b.is_null() {
            return Err(bad(7, "B", format!("null, but LENB = {lenb}")));
        }
        if lenb > 0 && (b as usize) % std::mem::align_of::<T>() != 0 {
            return Err(bad(7, "B", "not aligned for its element type"));
        }
        if map.is_null() {
            return Err(bad(11, "MAP", "null"));
        }
        spans.push((b.cast_const(), lenb as usize, 0, true));
    }
    if let Some(e) = overlapping(&spans, args.b.ptr, batch) {
        return Err(e);
    }
    Ok(sides)
}

/// A batch's first collective step: every process's count of copies and verdict
/// (`err`, this process's bad argument), so that all return together when any found
/// one and no process waits for copies another does not make.
fn agree_on_batch(
    transport: &mut dyn Transport,
    count: usize,
    err: Option<Bad>,
) -> Result<(), (i32, Failed)> {
    let rank_i = transport.rank() as i32;
    let mut words = vec![0u64; 2 * transport.size()];
    transport
        .all_gather(&[count as u64, u64::from(err.is_some())], &mut words)
        .map_err(|e| (rank_i, Failed::Engine(e.to_string())))?;
    if let Some(e) = err {
        return Err((rank_i, Failed::Here(e)));
    }
    if words.chunks_exact(2).any(|w| w[1] != 0) {
        return Err((rank_i, Failed::Elsewhere));
    }
    let counts: Vec<u64> = words.iter().step_by(2).copied().collect();
    if let Some(r) = counts.iter().position(|&c| c != counts[0]) {
        return Err((
            rank_i,
            Failed::Everywhere(format!(
                "processes 0 and {r} of ICTXT pass {} and {} copies (counting those with M and N not 0)",
                counts[0], counts[r]
            )),
        ));
    }
    Ok(())
}

/// Every process's words about the copies (one row per process: verdict, then per
/// copy M, N and its place in A's and B's grids), as gathered.
struct Gathered<'r> {
    rows: &'r [&'r [u64]],
    rank: usize,
    batch: bool,
    /// LENB of a relabeled call.
    relabel: Option<c_int>,
}

impl Gathered<'_> {
    /// Words per copy in a row.
    const COPY_WORDS: usize = 2 + 2 * SIDE_WORDS;

    /// The transform of each copy and this process's (A, B) buffer lengths, after
    /// checking that every process passes the same M and N and that the grids agree.
    #[allow(clippy::type_complexity)]
    fn transforms<T: Element>(
        &self,
        live: &[(usize, CopyArgs<T>)],
        sides: &[Sides],
    ) -> Result<(Vec<Transform>, Vec<(usize, usize)>), (i32, Failed)> {
        let rows = self.rows;
        let rank_i = self.rank as i32;
        let everywhere = |e: String| (rank_i, Failed::Everywhere(e));
        let mut transforms = Vec::with_capacity(live.len());
        let mut lens = Vec::with_capacity(live.len());
        for (i, &(k, c)) in live.iter().enumerate() {
            let at = 1 + i * Self::COPY_WORDS;
            let item = if self.batch {
                format!(" of copy {k}")
            } else {
                String::new()
            };
            if let Some(r) = rows
                .iter()
                .position(|w| w[at..at + 2] != rows[0][at..at + 2])
            {
                return Err(everywhere(format!(
                    "processes 0 and {r} of ICTXT pass different M, N{item} ({} x {} and {} x {})",
                    rows[0][at] as i64,
                    rows[0][at + 1] as i64,
                    rows[r][at] as i64,
                    rows[r][at + 1] as i64
                )));
            }
            let side = |s: usize| -> Vec<&[u64]> {
                let from = at + 2 + s * SIDE_WORDS;
                rows.iter().map(|w| &w[from..from + SIDE_WORDS]).collect()
            };
            let (sa, sb) = &sides[i];
            let shape = (c.m as usize, c.n as usize);
            let a_layout = gathered_layout(
                &side(0),
                shape,
                sa.as_ref().map(|s| s.desc.lld),
                &format!("A{item}"),
            )
            .map_err(everywhere)?;
            // a relabeled B is stored with the default LLD, whatever DESCB says (the
            // process may be given another position's blocks)
            let b_lld = sb
                .as_ref()
                .map(|s| s.desc.lld)
                .filter(|_| self.relabel.is_none());
            let b_layout =
                gathered_layout(&side(1), shape, b_lld, &format!("B{item}")).map_err(everywhere)?;
            let (a_len, b_len) = (a_layout.local_len(self.rank), b_layout.local_len(self.rank));
            // the lengths this process checked its pointers for
            let checked = (
                sa.as_ref().map_or(0, |s| s.len),
                sb.as_ref().map_or(0, |s| s.len),
            );
            if a_len != checked.0 || (self.relabel.is_none() && b_len != checked.1) {
                return Err((
                    rank_i,
                    Failed::Engine(format!(
                        "internal error: local lengths {a_len}, {b_len} differ from the checked ones"
                    )),
                ));
            }
            let t = Transform::new(a_layout, b_layout, Op::Identity);
            transforms.push(match self.relabel {
                // B's old contents are overwritten everywhere: any relabeling is sound
                Some(_) => t
                    .with_relabeling(Relabeling::Optimal)
                    .with_contents(TargetContents::Relabeled),
                None => t.with_relabeling(Relabeling::Off),
            });
            lens.push((a_len, self.relabel.map_or(b_len, |lenb| lenb as usize)));
        }
        Ok((transforms, lens))
    }
}

/// Writes MAP of a relabeled call: the process that holds each position of B's
/// grid, column-major (`map[r + c·P]`).
///
/// # Safety
/// `map` is not null and valid for P·Q writes of `c_int`.
unsafe fn write_map(b: &Layout, map: *mut c_int) -> Result<(), Failed> {
    let Layout::BlockCyclic(b) = b else {
        return Err(Failed::Engine(
            "internal error: B is not block-cyclic".into(),
        ));
    };
    let (p, q) = (b.spec().nprow, b.spec().npcol);
    for r in 0..p {
        for c in 0..q {
            // SAFETY: r + c·p < P·Q, within what the caller guarantees.
            unsafe { map.add(r + c * p).write_unaligned(b.rank_at(r, c) as c_int) };
        }
    }
    Ok(())
}

/// `sub(B) ← sub(A)` with ScaLAPACK's `p?gemr2d` arguments: [`redistribute`] of one
/// copy.
///
/// # Safety
/// As the exported entry points: ScaLAPACK's contract for these arguments.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn gemr2d<T: Element>(
    routine: &str,
    m: c_int,
    n: c_int,
    a: *const T,
    ia: c_int,
    ja: c_int,
    desca: *const c_int,
    b: *mut T,
    ib: c_int,
    jb: c_int,
    descb: *const c_int,
    ictxt: c_int,
) {
    let copy = CopyArgs {
        m,
        n,
        a,
        ia,
        ja,
        desca,
        b,
        ib,
        jb,
        descb,
    };
    // SAFETY: the caller's contract.
    unsafe { redistribute(routine, &[copy], ictxt, Call::Single, None) }
}

/// `sub(C) ← β·sub(C) + α·op(sub(A))` with PBLAS's `p?tran*` arguments, op the
/// transpose (`conj = false`) or the conjugate transpose.
///
/// # Safety
/// As the exported entry points: PBLAS's contract for these arguments.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn tran<T: Element>(
    routine: &str,
    conj: bool,
    m: c_int,
    n: c_int,
    alpha: T,
    a: *const T,
    ia: c_int,
    ja: c_int,
    desca: *const c_int,
    beta: T,
    c: *mut T,
    ic: c_int,
    jc: c_int,
    descc: *const c_int,
) {
    run(routine, |state| {
        // SAFETY: PBLAS's contract for DESCA and DESCC.
        let descs = unsafe { TranDescs::read(desca, descc) }?;
        let ctxt = descs.a[1];
        let (info, comm, stranger) =
            joined_comm(state, ctxt, (7, "DESCA"), "CTXT = ", descs.c.map(|d| d[1]))?;
        let rank = comm.transport.rank();
        let local = (|| -> Result<Option<(Side, Side)>, Bad> {
            if m < 0 {
                return Err(bad(1, "M", format!("{m} is negative")));
            }
            if n < 0 {
                return Err(bad(2, "N", format!("{n} is negative")));
            }
            if let Some(e) = stranger.or(descs.errors) {
                return Err(e);
            }
            let Some(info) = info else {
                return Err(bad(7, "DESCA", "internal error: no grid"));
            };
            let Some(dc) = descs.c else {
                return Err(bad(12, "DESCC", "null"));
            };
            if dc[1] != ctxt {
                return Err(bad(
                    12,
                    "DESCC",
                    format!("CTXT = {} differs from A's context {ctxt}", dc[1]),
                ));
            }
            // sub(A) is n x m, sub(C) is m x n; with nothing to move, PBLAS returns
            // (after checking its descriptors: copr needs them no further)
            if m == 0 || n == 0 {
                return Ok(None);
            }
            let (mu, nu) = (m as usize, n as usize);
            let a_args = Args::from(4, ["A", "IA", "JA", "DESCA"]);
            let c_args = Args::from(9, ["C", "IC", "JC", "DESCC"]);
            let sa = check_side(descs.a, info, (ia, ja), (nu, mu), a, &a_args)?;
            let sc = check_side(dc, info, (ic, jc), (mu, nu), c.cast_const(), &c_args)?;
            if overlap(a, sa.len, c.cast_const(), sc.len) {
                return Err(bad(9, "C", "shares memory with A on this process"));
            }
            Ok(Some((sa, sc)))
        })();
        // every process learns whether all may go on, and that they agree on what
        // decides whether data moves at all
        let (alpha0, beta1) = (alpha == T::zero(), beta == T::one());
        let mine = [
            u64::from(local.is_err()),
            m as u64,
            n as u64,
            u64::from(alpha0),
            u64::from(beta1),
        ];
        let rank_i = rank as i32;
        let (sides, own) = match local {
            Ok(sides) => (sides, None),
            Err(e) => (None, Some(e)),
        };
        let all = gather_verdicts(&mut comm.transport, &mine, own)?;
        let rows: Vec<&[u64]> = all.chunks_exact(mine.len()).collect();
        if let Some(r) = rows.iter().position(|w| w[1..] != rows[0][1..]) {
            return Err((
                rank_i,
                Failed::Everywhere(format!(
                    "processes 0 and {r} of the context pass different M, N, or disagree whether ALPHA is 0 or BETA is 1"
                )),
            ));
        }
        // PBLAS's quick returns: nothing to do, or C ← β·C without reading A
        let Some((sa, sc)) = sides else {
            return Ok(()); // M or N is 0
        };
        if alpha0 && beta1 {
            return Ok(());
        }
        let (mu, nu) = (m as usize, n as usize);
        let side_layout = |s: &Side, rows: usize, cols: usize| {
            side_layout(s, sa.grid, (rows, cols)).map_err(|e| (rank_i, Failed::Everywhere(e)))
        };
        let c_layout = side_layout(&sc, mu, nu)?;
        // SAFETY: C checked (aligned, not null where used), its length within what
        // PBLAS requires the caller's buffer to hold, and apart from A.
        let dst = unsafe { target(c, c_layout.local_len(rank)) };
        if alpha0 {
            scale(&c_layout, rank, dst, beta);
            return Ok(());
        }
        let a_layout = side_layout(&sa, nu, mu)?;
        let op = if conj {
            Op::ConjTranspose
        } else {
            Op::Transpose
        };
        let batch =
            [Transform::new(a_layout.clone(), c_layout, op).with_relabeling(Relabeling::Off)];
        // SAFETY: as for C.
        let src = unsafe { source(a, a_layout.local_len(rank)) };
        let mut jobs = [Job {
            alpha,
            beta,
            source: src,
            target: dst,
        }];
        let plan = comm
            .cache
            .execute(&mut comm.transport, &batch, &mut jobs)
            .map_err(|e| (rank_i, Failed::Engine(e.to_string())))?;
        comm.shared_reads += plan.last_stats().read_from_source as u64;
        Ok(())
    });
}

/// `p?tran`'s two descriptors as read: A's (its context in entry 2 even when the rest
/// is refused, -1 when unknown), C's (`None` when null), and the first of their errors.
struct TranDescs {
    a: [i32; 9],
    c: Option<[i32; 9]>,
    errors: Option<Bad>,
}

impl TranDescs {
    /// Reads DESCA (parameter 7) and DESCC (12); a null DESCA fails the call here.
    ///
    /// # Safety
    /// PBLAS's contract: each descriptor null or 9 ints, or 11 of type 2.
    unsafe fn read(desca: *const c_int, descc: *const c_int) -> Result<Self, (i32, Failed)> {
        // SAFETY: the caller's contract.
        let (da, dc) = unsafe {
            (
                descriptor::read(desca, Reader::Pblas),
                descriptor::read(descc, Reader::Pblas),
            )
        };
        // a type PBLAS rejects still names the context (entry 2 of every type)
        let ctxt_of = |d: *const c_int| {
            // SAFETY: the caller's contract; not null
            (!d.is_null()).then(|| unsafe { d.add(1).read_unaligned() })
        };
        let (a, a_err) = match da {
            Ok(Some(d)) => (d, None),
            Ok(None) => return Err((-1, Failed::Here(bad(7, "DESCA", "null")))),
            Err(e) => {
                let mut d = [0; 9];
                d[1] = ctxt_of(desca).unwrap_or(-1);
                (d, Some(bad(7, "DESCA", e)))
            }
        };
        let (c, c_err) = match dc {
            Ok(d) => (d, None),
            Err(e) => (
                ctxt_of(descc).map(|c| [0, c, 0, 0, 0, 0, 0, 0, 0]),
                Some(bad(12, "DESCC", e)),
            ),
        };
        Ok(Self {
            a,
            c,
            errors: a_err.or(c_err),
        })
    }
}

/// The layout of a checked submatrix of `rows x cols` with this process's LLD, on the
/// context's `grid`, whose row-major positions are the ranks of its communicator.
fn side_layout(
    s: &Side,
    grid: (usize, usize),
    (rows, cols): (usize, usize),
) -> Result<Layout, String> {
    let sub = Submatrix {
        ia: s.i0,
        ja: s.j0,
        m: rows,
        n: cols,
    };
    layout(&s.desc, grid, sub, Some(s.desc.lld), None, grid.0 * grid.1)
        .map(Layout::from)
        .map_err(|e| e.to_string())
}

/// `C ← β·C` on this process's blocks of `c` (C set to 0 when β is 0, never read).
fn scale<T: Element>(c: &Layout, rank: usize, dst: &mut [T], beta: T) {
    for blk in c.local_blocks(rank) {
        for j in 0..blk.cols.len() {
            for i in 0..blk.rows.len() {
                let x = &mut dst[blk.index(i, j)];
                *x = if beta == T::zero() {
                    T::zero()
                } else {
                    beta.mul(*x)
                };
            }
        }
    }
}

/// Reads the by-reference scalars of a Fortran-style call; a null one is reported
/// (parameter number and name) and the call does nothing.
///
/// # Safety
/// Each pointer is null or valid for one read of `V`.
pub(crate) unsafe fn by_reference<V: Copy, const N: usize>(
    routine: &str,
    args: [(*const V, u32, &'static str); N],
) -> Option<[V; N]> {
    if let Some(&(_, arg, name)) = args.iter().find(|(p, _, _)| p.is_null()) {
        run(routine, |_| Err((-1, Failed::Here(bad(arg, name, "null")))));
        return None;
    }
    // SAFETY: not null, and the caller's guarantee; Fortran may pass any address.
    Some(args.map(|(p, _, _)| unsafe { p.read_unaligned() }))
}
