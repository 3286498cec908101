//! Atomic file writes: a temporary file in the same directory, flushed to disk, then renamed, so
//! a reader never sees a partial file and a crash leaves the old file (or none).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::Error;

/// Symbolic links followed from one path at most (the kernel's own limit, `MAXSYMLINKS`).
const MAX_LINKS: u32 = 40;

/// Write `bytes` to `path` atomically.
///
/// A symbolic link is written through: the file it names is replaced, the link stays. A path
/// naming something that is not a regular file (a device such as `/dev/null`, a FIFO) is
/// written directly, since renaming a file over it would replace the device node; a directory
/// is an error.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let target = follow_links(path)?;
    match std::fs::metadata(&target) {
        Ok(m) if m.is_dir() => {
            return Err(Error::io(path, std::io::Error::other("is a directory")))
        }
        Ok(m) if !m.is_file() => {
            return std::fs::OpenOptions::new()
                .write(true)
                .open(&target)
                .and_then(|mut f| f.write_all(bytes))
                .map_err(|e| Error::io(path, e));
        }
        _ => {}
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = target.with_file_name(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &target)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    Ok(())
}

/// The path `path` names once every symbolic link along its last component is followed (a
/// dangling link gives the path it points to, which the write then creates).
fn follow_links(path: &Path) -> Result<PathBuf, Error> {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&at).map_err(|e| Error::io(path, e))?;
                at = match at.parent() {
                    Some(parent) if link.is_relative() => parent.join(link),
                    _ => link,
                };
            }
            _ => return Ok(at),
        }
    }
    Err(Error::io(
        path,
        std::io::Error::other(format!("more than {MAX_LINKS} symbolic links")),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "no temporary file left"
        );
    }

    #[test]
    fn symbolic_links_are_written_through_and_stay_links() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, b"old").unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink("real.json", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        // A dangling link creates the file it names.
        let dangling = dir.path().join("dangling.json");
        std::os::unix::fs::symlink(dir.path().join("made.json"), &dangling).unwrap();
        write_atomic(&dangling, b"made").unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("made.json")).unwrap(),
            b"made"
        );
        // A loop of links is an error naming the path, not a hang.
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let err = write_atomic(&a, b"x").unwrap_err().to_string();
        assert!(
            err.contains("symbolic links") && err.contains(&*a.to_string_lossy()),
            "{err}"
        );
    }

    #[test]
    fn what_is_not_a_regular_file_is_written_in_place_or_refused() {
        let dir = tempfile::tempdir().unwrap();
        // A FIFO stays a FIFO, and its reader gets the bytes.
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let reader = {
                let fifo = fifo.clone();
                std::thread::spawn(move || std::fs::read(fifo).unwrap())
            };
            write_atomic(&fifo, b"through").unwrap();
            assert_eq!(reader.join().unwrap(), b"through");
            use std::os::unix::fs::FileTypeExt as _;
            assert!(std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo());
        }
        // A directory is refused.
        let err = write_atomic(dir.path(), b"x").unwrap_err().to_string();
        assert!(err.contains("is a directory"), "{err}");
        assert!(dir.path().is_dir());
    }

    #[test]
    fn error_names_the_file() {
        let err = write_atomic(Path::new("/nonexistent-dir/m.json"), b"x").unwrap_err();
        assert!(err.to_string().contains("/nonexistent-dir/m.json"), "{err}");
    }
}
