//! Single-copy reads from another process of the same node: Linux cross-memory attach
//! (`process_vm_readv`). The kernel copies straight from the peer's pages into this
//! process's, so a package read this way is copied once, instead of being packed into
//! a shared window by its sender and copied out of it by its receiver.

use super::Span;

/// Largest number of iovecs one `process_vm_readv` call takes on each side (Linux's
/// `UIO_MAXIOV`).
const IOV_MAX: usize = 1024;

/// A walk over the blocks of a list of spans, byte by byte: the block under the
/// cursor and how much of it is already done.
#[derive(Clone)]
struct Cursor<'a> {
    spans: &'a [Span],
    /// Span under the cursor.
    span: usize,
    /// Block of that span.
    block: usize,
    /// Bytes of that block already done.
    done: usize,
}

impl<'a> Cursor<'a> {
    fn new(spans: &'a [Span]) -> Self {
        let mut c = Self {
            spans,
            span: 0,
            block: 0,
            done: 0,
        };
        c.settle();
        c
    }

    /// Moves past finished blocks and empty spans.
    fn settle(&mut self) {
        while let Some(s) = self.spans.get(self.span) {
            if self.block < s.count() && self.done < s.len() {
                return;
            }
            if self.block + 1 < s.count() && !s.is_empty() {
                self.block += 1;
            } else {
                self.span += 1;
                self.block = 0;
            }
            self.done = 0;
        }
    }

    /// The rest of the block under the cursor: address and bytes (`None`: at the end).
    fn peek(&self) -> Option<(usize, usize)> {
        let s = self.spans.get(self.span)?;
        let at = s.addr() + self.block * s.stride() + self.done;
        Some((at, s.len() - self.done))
    }

    /// Moves `bytes` ahead.
    fn advance(&mut self, mut bytes: usize) {
        while bytes > 0 {
            let Some((_, rest)) = self.peek() else {
                return;
            };
            let step = rest.min(bytes);
            self.done += step;
            bytes -= step;
            self.settle();
        }
    }

    /// Up to [`IOV_MAX`] segments from the cursor on, at most `budget` bytes in all,
    /// into `out` (cleared first); returns their bytes.
    fn segments(&self, budget: usize, out: &mut Vec<(usize, usize)>) -> usize {
        out.clear();
        let mut c = self.clone();
        let mut total = 0;
        while out.len() < IOV_MAX && total < budget {
            let Some((at, rest)) = c.peek() else { break };
            let take = rest.min(budget - total);
            out.push((at, take));
            total += take;
            c.advance(take);
        }
        total
    }
}

/// Why a single-copy read failed: the `errno` of `process_vm_readv`, or 0 if it
/// stopped making progress before all bytes were in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ReadError(pub(crate) i32);

/// Copies the bytes `remote` covers in process `pid`, in order, into the bytes `local`
/// covers in this process, in order (both cover `bytes` bytes), in batches of at most
/// [`IOV_MAX`] blocks on each side.
///
/// # Safety
/// `local` must be valid for writes as [`Span::new`] requires of a receive, until this
/// returns; the memory `remote` names in `pid` is the peer's business (the kernel
/// checks it and fails with `EFAULT` if it is not mapped there).
pub(crate) unsafe fn read(
    pid: i32,
    local: &[Span],
    remote: &[Span],
    bytes: usize,
) -> Result<(), ReadError> {
    let (local, remote) = (merged(local), merged(remote));
    let (mut lc, mut rc) = (Cursor::new(&local), Cursor::new(&remote));
    let (mut ls, mut rs) = (Vec::with_capacity(IOV_MAX), Vec::with_capacity(IOV_MAX));
    let mut left = bytes;
    while left > 0 {
        let r = rc.segments(left, &mut rs);
        let l = lc.segments(r, &mut ls);
        let r = if l < r { rc.segments(l, &mut rs) } else { r };
        if r == 0 {
            return Err(ReadError(0));
        }
        // SAFETY: the local segments lie in `local` (the caller's contract); the
        // kernel checks the remote ones against the peer's mappings.
        let got = unsafe { readv(pid, &ls, &rs) }?;
        if got == 0 {
            return Err(ReadError(0));
        }
        lc.advance(got);
        rc.advance(got);
        left -= got.min(left);
    }
    Ok(())
}

/// `spans` with every span whose blocks follow each other without a gap made one
/// block (one iovec instead of many).
pub(crate) fn merged(spans: &[Span]) -> Vec<Span> {
    spans
        .iter()
        .map(|s| match s.count {
            c if c > 1 && s.stride == s.len => Span {
                len: s.len * c,
                count: 1,
                ..*s
            },
            _ => *s,
        })
        .collect()
}

/// One `process_vm_readv` call: bytes read, or the `errno`.
///
/// # Safety
/// Every local segment is writable memory of this process that nothing else uses
/// meanwhile.
#[cfg(target_os = "linux")]
unsafe fn readv(
    pid: i32,
    local: &[(usize, usize)],
    remote: &[(usize, usize)],
) -> Result<usize, ReadError> {
    let iov = |s: &[(usize, usize)]| -> Vec<libc::iovec> {
        s.iter()
            .map(|&(at, len)| libc::iovec {
                iov_base: at as *mut libc::c_void,
                iov_len: len,
            })
            .collect()
    };
    let (l, r) = (iov(local), iov(remote));
    // SAFETY: `l` names writable memory of this process (the caller's contract);
    // `r` is only read by the kernel, in the other process, after its own checks.
    let n = unsafe {
        libc::process_vm_readv(
            pid,
            l.as_ptr(),
            l.len() as libc::c_ulong,
            r.as_ptr(),
            r.len() as libc::c_ulong,
            0,
        )
    };
    if n < 0 {
        Err(ReadError(
            std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
        ))
    } else {
        Ok(n as usize)
    }
}

/// Not on Linux: no cross-memory attach (`ENOSYS`).
#[cfg(not(target_os = "linux"))]
unsafe fn readv(
    _pid: i32,
    _local: &[(usize, usize)],
    _remote: &[(usize, usize)],
) -> Result<usize, ReadError> {
    Err(ReadError(38))
}

/// Whether one kernel copy (`process_vm_readv`) of a package costs less than the two
/// copies of the shared window (the sender's into the window, the receiver's out of it)
/// on this machine: the best of three reads of 4 MiB from this process by the kernel
/// takes at most 1.5 times the best of three `memcpy`s of the same bytes. Measured once
/// per process (a few milliseconds), the first time a transport asks.
///
/// The kernel pins every page it copies and copies with the plain string instructions
/// of kernel code, so depending on the processor and the virtualisation it copies at
/// anything from the speed of `memcpy` to a third of it.
pub(crate) fn pays() -> bool {
    static PAYS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *PAYS.get_or_init(|| {
        let n = 4 << 20;
        let src = vec![1u8; n];
        let mut dst = vec![0u8; n];
        let (mut kernel, mut user) = (f64::MAX, f64::MAX);
        for _ in 0..3 {
            let t = std::time::Instant::now();
            // SAFETY: `dst` is `n` writable bytes of this process, `src` `n` readable
            // ones.
            let ok = unsafe {
                let local = Span::new(dst.as_mut_ptr(), n, 1, n);
                let remote = Span::new(src.as_ptr(), n, 1, n);
                read(pid(), &[local], &[remote], n)
            };
            if ok.is_err() {
                return false;
            }
            kernel = kernel.min(t.elapsed().as_secs_f64());
            let t = std::time::Instant::now();
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&dst);
            user = user.min(t.elapsed().as_secs_f64());
        }
        kernel <= 1.5 * user
    })
}

/// This process's id.
pub(crate) fn pid() -> i32 {
    std::process::id() as i32
}

/// Whether this process can read 8 bytes at `addr` in process `pid` and finds `want`
/// there (the probe a transport runs once per peer before using single-copy reads:
/// `EPERM` under a ptrace restriction or another user's process, `ENOSYS` without the
/// system call, both mean no).
pub(crate) fn probe(pid: i32, addr: usize, want: u64) -> bool {
    let mut got = 0u64;
    // SAFETY: `got` is 8 writable bytes of this process; the remote address is checked
    // by the kernel.
    let ok = unsafe {
        let local = Span::new((&mut got as *mut u64).cast::<u8>(), 8, 1, 8);
        let remote = Span::new(addr as *const u8, 8, 1, 8);
        read(pid, &[local], &[remote], 8)
    };
    ok.is_ok() && got == want
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads within this process (a process may always read itself): blocks of
    /// different shapes on the two sides, more than one batch of iovecs, against a
    /// plain gather and scatter of the same bytes.
    #[test]
    fn read_matches_gather_scatter() {
        let src: Vec<u8> = (0..40_000u32).map(|i| (i * 7 + 3) as u8).collect();
        // Remote: 1500 blocks of 5 bytes every 11, then 300 blocks of 17 every 40.
        let base = src.as_ptr();
        let remote = unsafe {
            [
                Span::new(base, 5, 1500, 11),
                Span::new(base.add(16_600), 17, 300, 40),
            ]
        };
        let bytes = 5 * 1500 + 17 * 300;
        let mut want = Vec::new();
        for s in &remote {
            for b in 0..s.count() {
                let at = s.addr() - base as usize + b * s.stride();
                want.extend_from_slice(&src[at..at + s.len()]);
            }
        }
        assert_eq!(want.len(), bytes);
        // Local: blocks of 3 bytes every 4 (a gap after each), then one block.
        let mut dst = vec![0u8; 4 * 3000 + 4000];
        let d = dst.as_mut_ptr();
        let local = unsafe {
            [
                Span::new(d, 3, 3000, 4),
                Span::new(d.add(12_000), 3600, 1, 0),
            ]
        };
        assert_eq!(3 * 3000 + 3600, bytes);
        match unsafe { read(pid(), &local, &remote, bytes) } {
            Ok(()) => {}
            // A sandbox without the system call or without ptrace rights over itself.
            Err(ReadError(e)) if e == 38 || e == 1 => return,
            Err(e) => panic!("read failed: {e:?}"),
        }
        let mut got = Vec::new();
        for b in 0..3000 {
            got.extend_from_slice(&dst[4 * b..4 * b + 3]);
            assert_eq!(dst[4 * b + 3], 0, "the gap after block {b} was written");
        }
        got.extend_from_slice(&dst[12_000..15_600]);
        assert_eq!(got, want);
        assert!(dst[15_600..].iter().all(|&x| x == 0));
    }

    #[test]
    fn probe_reads_itself_and_rejects_a_wrong_word() {
        let word = Box::new(0x1234_5678_9abc_def0u64);
        let addr = &*word as *const u64 as usize;
        let me = pid();
        if probe(me, addr, *word) {
            assert!(!probe(me, addr, 1));
        }
        // An unmapped address fails (EFAULT), never a crash.
        assert!(!probe(me, 8, 0));
    }
}
