//! One block of an out-of-core array on disk: a small header, the elements, a checksum.
//!
//! Layout (all integers little-endian):
//!
//! | bytes | field |
//! |---|---|
//! | 0..8 | magic `MHETABLK` |
//! | 8..12 | format version (1) |
//! | 12..16 | element size in bytes |
//! | 16..24 | rows in this block |
//! | 24..32 | elements per row |
//! | 32..36 | CRC-32 of the payload |
//! | 36..40 | reserved (0) |
//! | 40.. | payload: rows × row_len elements |
//!
//! Writes are atomic and durable: the block goes to `<block>.tmp`, is flushed to the device
//! (`fsync`), renamed over the block, and the directory is flushed so the rename survives a
//! crash. A crash at any point leaves either the old block or the new one, never a mix; a
//! leftover `.tmp` is ignored and removed when the array is opened again. The checksum catches
//! what atomicity cannot (a damaged disk, a file truncated by hand): such a block is an error
//! naming the file, never silently wrong data.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::OocError;

const MAGIC: &[u8; 8] = b"MHETABLK";
const VERSION: u32 = 1;
/// Bytes before the payload.
pub(crate) const HEADER_BYTES: usize = 40;

/// The shape a block file must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockShape {
    pub elem_size: u32,
    pub rows: u64,
    pub row_len: u64,
}

impl BlockShape {
    pub(crate) fn payload_bytes(&self) -> usize {
        (self.rows * self.row_len) as usize * self.elem_size as usize
    }
}

/// A failure injected into a block write, for testing crash safety.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteFault {
    /// Write this many bytes of the block file, then fail with [`OocError::InjectedFault`]
    /// (the temporary file stays behind, as after a crash).
    FailAfter(usize),
    /// Write this many bytes of the block file, flush them, then abort the process.
    AbortAfter(usize),
}

/// The path of the temporary file a block is written through.
pub(crate) fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Write `payload` as the block at `path`, atomically and durably. `file_bytes` is scratch
/// space for the whole file.
pub(crate) fn write_block_file(
    path: &Path,
    shape: BlockShape,
    payload: &[u8],
    file_bytes: &mut Vec<u8>,
    fault: Option<WriteFault>,
) -> Result<(), OocError> {
    debug_assert_eq!(payload.len(), shape.payload_bytes());
    file_bytes.clear();
    file_bytes.extend_from_slice(MAGIC);
    file_bytes.extend_from_slice(&VERSION.to_le_bytes());
    file_bytes.extend_from_slice(&shape.elem_size.to_le_bytes());
    file_bytes.extend_from_slice(&shape.rows.to_le_bytes());
    file_bytes.extend_from_slice(&shape.row_len.to_le_bytes());
    file_bytes.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    file_bytes.extend_from_slice(&0u32.to_le_bytes());
    file_bytes.extend_from_slice(payload);

    let temp = temp_path(path);
    let io = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| OocError::Io {
            action,
            path,
            source,
        }
    };
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&temp)
        .map_err(io("create", &temp))?;
    match fault {
        None => file.write_all(file_bytes).map_err(io("write", &temp))?,
        Some(WriteFault::FailAfter(after)) | Some(WriteFault::AbortAfter(after)) => {
            let after = after.min(file_bytes.len());
            file.write_all(&file_bytes[..after])
                .map_err(io("write", &temp))?;
            file.sync_all().map_err(io("flush", &temp))?;
            if matches!(fault, Some(WriteFault::AbortAfter(_))) {
                std::process::abort();
            }
            return Err(OocError::InjectedFault { path: temp, after });
        }
    }
    file.sync_data().map_err(io("flush", &temp))?;
    drop(file);
    std::fs::rename(&temp, path).map_err(io("rename into place", path))?;
    sync_dir(path)
}

/// Flush the directory holding `path`, so that a rename into it is durable.
fn sync_dir(path: &Path) -> Result<(), OocError> {
    let Some(dir) = path.parent() else {
        return Ok(());
    };
    match File::open(dir).and_then(|d| d.sync_all()) {
        Ok(()) => Ok(()),
        // Some file systems cannot flush a directory; the rename is still atomic there.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => Ok(()),
        Err(source) => Err(OocError::Io {
            action: "flush directory",
            path: dir.to_path_buf(),
            source,
        }),
    }
}

/// Read the block at `path` into `payload` (resized to the shape's payload). A block never
/// written reads as zeros; one that was (`written`) and whose file is gone is an error, never
/// zeros. Returns whether the file existed.
pub(crate) fn read_block_file(
    path: &Path,
    shape: BlockShape,
    file_bytes: &mut Vec<u8>,
    written: bool,
) -> Result<bool, OocError> {
    file_bytes.clear();
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && written => {
            return Err(OocError::Missing {
                path: path.to_path_buf(),
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            file_bytes.resize(HEADER_BYTES + shape.payload_bytes(), 0);
            return Ok(false);
        }
        Err(source) => {
            return Err(OocError::Io {
                action: "open",
                path: path.to_path_buf(),
                source,
            })
        }
    };
    file_bytes.reserve(HEADER_BYTES + shape.payload_bytes());
    file.read_to_end(file_bytes)
        .map_err(|source| OocError::Io {
            action: "read",
            path: path.to_path_buf(),
            source,
        })?;
    check(path, shape, file_bytes)?;
    Ok(true)
}

/// Validate a block file's header and checksum against the expected shape.
fn check(path: &Path, shape: BlockShape, bytes: &[u8]) -> Result<(), OocError> {
    let corrupt = |reason: String| OocError::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let expected_len = HEADER_BYTES + shape.payload_bytes();
    if bytes.len() < HEADER_BYTES || &bytes[..8] != MAGIC {
        return Err(corrupt("not an mheta block file (bad header)".into()));
    }
    let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap_or([0; 4]));
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap_or([0; 8]));
    if u32_at(8) != VERSION {
        return Err(corrupt(format!(
            "format version {} (expected {VERSION})",
            u32_at(8)
        )));
    }
    let found = BlockShape {
        elem_size: u32_at(12),
        rows: u64_at(16),
        row_len: u64_at(24),
    };
    if found != shape {
        return Err(corrupt(format!(
            "holds {} rows of {} elements of {} bytes, expected {} rows of {} elements of {} \
             bytes (was the store written with another distribution or memory budget?)",
            found.rows, found.row_len, found.elem_size, shape.rows, shape.row_len, shape.elem_size
        )));
    }
    if bytes.len() != expected_len {
        return Err(corrupt(format!(
            "{} bytes long, expected {expected_len}",
            bytes.len()
        )));
    }
    if crc32fast::hash(&bytes[HEADER_BYTES..]) != u32_at(32) {
        return Err(corrupt("checksum mismatch".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: BlockShape = BlockShape {
        elem_size: 1,
        rows: 2,
        row_len: 3,
    };

    #[test]
    fn write_then_read_and_missing_reads_as_zeros() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.blk");
        let mut scratch = Vec::new();
        assert!(!read_block_file(&path, SHAPE, &mut scratch, false).unwrap());
        assert_eq!(&scratch[HEADER_BYTES..], &[0; 6]);
        write_block_file(&path, SHAPE, &[1, 2, 3, 4, 5, 6], &mut Vec::new(), None).unwrap();
        assert!(read_block_file(&path, SHAPE, &mut scratch, false).unwrap());
        assert_eq!(&scratch[HEADER_BYTES..], &[1, 2, 3, 4, 5, 6]);
        assert!(!temp_path(&path).exists());
        // Once written, a block whose file disappears is an error naming the file.
        std::fs::remove_file(&path).unwrap();
        let err = read_block_file(&path, SHAPE, &mut scratch, true).unwrap_err();
        assert!(matches!(err, OocError::Missing { .. }), "{err}");
        assert!(err.to_string().contains("0.blk"), "{err}");
    }

    #[test]
    fn corruption_is_detected_and_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.blk");
        write_block_file(&path, SHAPE, &[1, 2, 3, 4, 5, 6], &mut Vec::new(), None).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[HEADER_BYTES + 2] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        let err = read_block_file(&path, SHAPE, &mut Vec::new(), true).unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
        assert!(
            err.to_string().contains(&path.display().to_string()),
            "{err}"
        );

        let other = BlockShape { rows: 1, ..SHAPE };
        write_block_file(&path, SHAPE, &[0; 6], &mut Vec::new(), None).unwrap();
        let err = read_block_file(&path, other, &mut Vec::new(), true).unwrap_err();
        assert!(err.to_string().contains("expected 1 rows"), "{err}");
    }
}
