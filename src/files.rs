//! Reading the text files copr takes as input: one size limit for every file, and the
//! same errors (naming the file) whichever command or module reads it.

use std::io::Read;
use std::path::Path;

use crate::error::{Error, Result};

/// Input files are read up to this size (one limit for every file copr reads).
pub use copr_topology::files::MAX_FILE_BYTES;

/// Reads a text file of at most [`MAX_FILE_BYTES`] (a NUL byte, never in a text file,
/// stops it early: `/dev/zero` is refused at once).
///
/// # Errors
/// [`Error::Io`] if it cannot be read, [`Error::Parse`] if it is larger or not text.
pub fn read_file(path: &Path) -> Result<String> {
    copr_topology::files::read_text(path).map_err(|e| match e {
        copr_topology::TopologyError::Io { path, source } => Error::Io { path, source },
        e => e.into(),
    })
}

/// Reads at most [`MAX_FILE_BYTES`] of text from `input`, which errors call `path`.
///
/// # Errors
/// [`Error::Io`] if it cannot be read, [`Error::Parse`] if it is larger or not text.
pub fn read_limited(input: impl Read, path: &Path) -> Result<String> {
    let io = |source| Error::Io {
        path: path.to_owned(),
        source,
    };
    let mut text = String::new();
    input
        .take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(io)?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(Error::Parse {
            path: path.to_owned(),
            detail: format!("larger than {MAX_FILE_BYTES} bytes"),
        });
    }
    if let Some(k) = text.find('\0') {
        return Err(Error::Parse {
            path: path.to_owned(),
            detail: format!("a NUL byte at offset {k}: not a text file"),
        });
    }
    Ok(text)
}

/// The text of a file — or of standard input for the path `-` — read as every input
/// file is (at most [`MAX_FILE_BYTES`]).
///
/// # Errors
/// [`Error::Io`] if it cannot be read, [`Error::Parse`] if it is larger or not text.
pub fn read_text(path: &Path) -> Result<String> {
    if path == Path::new("-") {
        read_limited(std::io::stdin().lock(), path)
    } else {
        read_file(path)
    }
}
