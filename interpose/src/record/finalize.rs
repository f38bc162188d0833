//! Checking the file at `MPI_Init` and writing it at `MPI_Finalize`.
//!
//! Each process sends rank 0 its own edges (three integers per destination), its
//! collective counts and its host name; rank 0 writes the file. Rank 0 receives
//! O(p + edges) integers; nothing of size p² exists anywhere.

use std::ffi::{c_char, c_int, c_void};
use std::fmt::Write as _;

use mpi::ffi::{
    MPI_Datatype, PMPI_Bcast, PMPI_Comm_rank, PMPI_Comm_size, PMPI_Gather, PMPI_Gatherv,
    PMPI_Get_processor_name, RSMPI_INT32_T, RSMPI_MAX_PROCESSOR_NAME, RSMPI_UINT64_T,
    RSMPI_UINT8_T,
};

use super::collectives::{self, NAMES};
use super::{comms::world, path, table, turn_off, ENV_RECORD};

fn rank_and_size() -> (c_int, c_int) {
    let (mut r, mut p) = (0, 1);
    // SAFETY: write one int each.
    unsafe {
        PMPI_Comm_rank(world(), &mut r);
        PMPI_Comm_size(world(), &mut p);
    }
    (r, p)
}

/// Collective on `MPI_COMM_WORLD`: rank 0 creates the file; if it cannot, it says so
/// once and the recorder is off on every process.
pub(super) fn check_path() {
    let (rank, _) = rank_and_size();
    let mut ok: u8 = 1;
    if rank == 0 {
        if let Some(p) = path() {
            // replaced at MPI_Finalize; a run that ends before it leaves this line,
            // which `copr map` refuses in one line instead of mapping no traffic
            let marker = format!(
                "{} ({ENV_RECORD}): the run has not reached MPI_Finalize, where the traffic is written\n",
                copr_mapping::INCOMPLETE_RECORDING
            );
            if let Err(e) = std::fs::write(&p, marker) {
                eprintln!(
                    "copr-interpose: {ENV_RECORD}={p}: cannot create the file ({e}); \
                     the traffic is not recorded"
                );
                ok = 0;
            }
        }
    }
    // SAFETY: one byte from rank 0 to all.
    unsafe {
        PMPI_Bcast(
            (&mut ok as *mut u8).cast::<c_void>(),
            1,
            RSMPI_UINT8_T,
            0,
            world(),
        );
    }
    if ok == 0 {
        turn_off();
    }
}

/// Collective on `MPI_COMM_WORLD`: every process's `mine` on rank 0, one vector per
/// rank (empty elsewhere); `None` if MPI fails or the total exceeds an int.
fn gather<T: Copy + Default>(
    mine: &[T],
    datatype: MPI_Datatype,
    p: usize,
    root: bool,
) -> Option<Vec<Vec<T>>> {
    let n = c_int::try_from(mine.len()).ok()?;
    let mut counts = vec![0 as c_int; if root { p } else { 1 }];
    // SAFETY: one int from each process to rank 0.
    let rc = unsafe {
        PMPI_Gather(
            (&n as *const c_int).cast::<c_void>(),
            1,
            RSMPI_INT32_T,
            counts.as_mut_ptr().cast::<c_void>(),
            1,
            RSMPI_INT32_T,
            0,
            world(),
        )
    };
    if rc != 0 {
        return None;
    }
    let mut displs = vec![0 as c_int; counts.len()];
    let mut total: c_int = 0;
    if root {
        for (d, &c) in displs.iter_mut().zip(&counts) {
            *d = total;
            total = total.checked_add(c)?;
        }
    }
    let mut all = vec![T::default(); total as usize];
    // SAFETY: n elements from each process, counts[r] of them at displs[r] on rank 0.
    let rc = unsafe {
        PMPI_Gatherv(
            mine.as_ptr().cast::<c_void>(),
            n,
            datatype,
            all.as_mut_ptr().cast::<c_void>(),
            counts.as_ptr(),
            displs.as_ptr(),
            datatype,
            0,
            world(),
        )
    };
    if rc != 0 {
        return None;
    }
    if !root {
        return Some(Vec::new());
    }
    Some(
        counts
            .iter()
            .zip(&displs)
            .map(|(&c, &d)| all[d as usize..(d + c) as usize].to_vec())
            .collect(),
    )
}

fn host_name() -> Vec<u8> {
    // SAFETY: a constant of the MPI library.
    let max = unsafe { RSMPI_MAX_PROCESSOR_NAME }.max(1) as usize;
    let mut buf = vec![0 as c_char; max + 1];
    let mut len: c_int = 0;
    // SAFETY: a buffer of MPI_MAX_PROCESSOR_NAME characters.
    if unsafe { PMPI_Get_processor_name(buf.as_mut_ptr(), &mut len) } != 0 {
        return b"unknown".to_vec();
    }
    let name: Vec<u8> = buf[..(len.max(0) as usize).min(max)]
        .iter()
        .map(|&c| c as u8)
        .filter(|c| !c.is_ascii_whitespace() && *c != b'#')
        .collect();
    if name.is_empty() {
        b"unknown".to_vec()
    } else {
        name
    }
}

/// Collective on `MPI_COMM_WORLD`: gathers everything and writes the file on rank 0.
pub(super) fn write() {
    let (rank, p) = rank_and_size();
    let root = rank == 0;
    let p = p.max(1) as usize;
    let edges: Vec<u64> = table::totals()
        .into_iter()
        .flat_map(|(d, (m, b))| [u64::from(d), m, b])
        .collect();
    let colls: Vec<u64> = collectives::totals()
        .into_iter()
        .flat_map(|((op, size, leader), (calls, bytes))| {
            [
                u64::from(op),
                u64::from(size),
                u64::from(leader),
                calls,
                bytes,
            ]
        })
        .collect();
    // SAFETY: constants of the MPI library.
    let (u64_t, u8_t) = unsafe { (RSMPI_UINT64_T, RSMPI_UINT8_T) };
    let e = gather(&edges, u64_t, p, root);
    let c = gather(&colls, u64_t, p, root);
    let h = gather(&host_name(), u8_t, p, root);
    turn_off();
    if !root {
        return;
    }
    let Some(file) = path() else { return };
    let (Some(e), Some(c), Some(h)) = (e, c, h) else {
        eprintln!(
            "copr-interpose: {ENV_RECORD}={file}: gathering the counts failed; nothing written"
        );
        return;
    };
    let text = render(p, &e, &c, &h, super::alltoall_in_graph());
    if let Err(err) = std::fs::write(&file, text) {
        eprintln!("copr-interpose: {ENV_RECORD}={file}: cannot write the file ({err})");
    }
}

/// The file's text from each rank's edges, collective counts and host name.
fn render(
    p: usize,
    edges: &[Vec<u64>],
    colls: &[Vec<u64>],
    hosts: &[Vec<u8>],
    alltoall: bool,
) -> String {
    let mut t = String::new();
    // u128: the sum of 64-bit counters must not wrap (`copr map` checks it)
    let (mut messages, mut bytes) = (0u128, 0u128);
    for row in edges.iter().flat_map(|e| e.chunks_exact(3)) {
        messages += u128::from(row[1]);
        bytes += u128::from(row[2]);
    }
    let _ = writeln!(
        t,
        "# copr traffic recording (libcopr_interpose, {ENV_RECORD}) of {p} ranks of MPI_COMM_WORLD\n\
         # a line `src dst bytes # messages` sums what world rank src sent world rank dst:\n\
         # point-to-point sends (Send, Isend, Ssend, Issend, Bsend, Ibsend, Rsend, Irsend,\n\
         # persistent sends when started, Sendrecv, Sendrecv_replace) and neighbourhood\n\
         # collectives; a rank's sends to itself are listed (copr map leaves them out).\n\
         # {}\n\
         # total: {messages} messages, {bytes} bytes\n\
         tasks {p}",
        if alltoall {
            "MPI_Alltoall and MPI_Alltoallv are in the graph, one message per non-empty \
             block (COPR_RECORD_ALLTOALL=1);\n# every collective is also listed at the end."
        } else {
            "Collectives are not in the graph: they are listed at the end."
        }
    );
    for (r, h) in hosts.iter().enumerate() {
        let _ = writeln!(t, "# host {r} {}", String::from_utf8_lossy(h));
    }
    for (src, e) in edges.iter().enumerate() {
        for row in e.chunks_exact(3) {
            let _ = writeln!(t, "{src} {} {} # {} messages", row[0], row[2], row[1]);
        }
    }
    let mut sum: collectives::Counts = Default::default();
    for row in colls.iter().flat_map(|c| c.chunks_exact(5)) {
        let key = (row[0] as u8, row[1] as u32, row[2] as u32);
        let e = sum.entry(key).or_insert((0, 0));
        e.0 = e.0.max(row[3]);
        e.1 += row[4];
    }
    for ((op, size, leader), (calls, bytes)) in sum {
        let name = NAMES.get(op as usize).unwrap_or(&"?");
        let comm = if size as usize == p && leader == 0 {
            format!("a communicator of all {p} ranks")
        } else {
            format!("a communicator of {size} ranks whose rank 0 is world rank {leader}")
        };
        let _ = writeln!(
            t,
            "# collective {name} on {comm}: {calls} calls, {bytes} bytes in the send arguments"
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_file_is_a_graph_with_hosts_and_counts() {
        let edges = vec![vec![1, 3, 300, 0, 1, 8], vec![0, 2, 64]];
        let colls = vec![vec![3, 2, 0, 5, 40], vec![3, 2, 0, 5, 40]];
        let hosts = vec![b"a".to_vec(), b"b".to_vec()];
        let t = render(2, &edges, &colls, &hosts, false);
        let lines: Vec<&str> = t.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            lines,
            [
                "tasks 2",
                "0 1 300 # 3 messages",
                "0 0 8 # 1 messages",
                "1 0 64 # 2 messages"
            ]
        );
        assert!(t.contains("# host 1 b\n"));
        assert!(t.contains("# total: 6 messages, 372 bytes\n"));
        // totals past 64 bits are written whole
        let big = vec![vec![1, 1, u64::MAX], vec![0, 1, u64::MAX]];
        let wide = render(2, &big, &[vec![], vec![]], &hosts, false);
        assert!(
            wide.contains("# total: 2 messages, 36893488147419103230 bytes\n"),
            "{wide}"
        );
        assert!(t.contains(
            "# collective MPI_Allreduce on a communicator of all 2 ranks: 5 calls, 80 bytes in the send arguments\n"
        ));
    }
}
