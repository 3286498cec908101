//! What a run leaves behind when it ends early, and who may use a directory.
//!
//! - [`OwnedDir`]: a fresh directory in the system's temporary directory, named
//!   `<prefix>-<pid>-<n>`, removed when dropped, when the process is ended by SIGINT, SIGTERM or
//!   SIGHUP, and when it aborts an MPI job ([`run_now`]). A process that dies without running
//!   any of these (SIGKILL, power loss) leaves it behind; the next [`OwnedDir::create`] with
//!   the same prefix removes it, since no process holds its lock any more ([`remove_stale`]).
//! - [`DirLock`]: an advisory lock (`flock`) that says a directory is in use by this process.
//!   A second process asking for it gets [`Busy`] naming the holder's pid; the kernel releases
//!   the lock when the holder dies however it dies. Within one process the lock is shared: the
//!   same directory locked twice is one lock.
//! - [`end_group_on_signal`]: a child process group the signal cleanup sends SIGTERM to.
//!
//! The signal handlers are installed on first use, and only for signals whose disposition is
//! still the default: a program that handles SIGINT itself keeps its handler. The handler only
//! writes the signal number to a pipe; a thread reads it, cleans up, restores the default
//! disposition and raises the signal again, so the process still ends by that signal.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, PoisonError, Weak};
use std::time::{Duration, SystemTime};

/// The lock file every locked directory holds (its text is the holder's pid).
pub const LOCK_FILE: &str = ".mheta-lock";

/// How old a directory with an unheld lock must be before [`remove_stale`] removes it: a
/// directory just created has its lock file for a moment before the lock is taken.
const STALE_AFTER: Duration = Duration::from_secs(10);

/// The signals that end a process and after which it cleans up.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// A directory another process holds the lock of.
#[derive(Debug, thiserror::Error)]
#[error("{} is in use by another process{}", dir.display(), holder.map(|p| format!(" (pid {p})")).unwrap_or_default())]
pub struct Busy {
    /// The directory.
    pub dir: PathBuf,
    /// The holder's pid, as it wrote it into the lock file.
    pub holder: Option<u32>,
}

/// Why a directory could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process holds the lock.
    #[error(transparent)]
    Busy(#[from] Busy),
    /// The lock file could not be created or locked.
    #[error("cannot lock {}: {source}", path.display())]
    Io {
        /// The directory or lock file concerned.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

/// This process's lock on a directory; released when the last clone is dropped.
#[derive(Clone)]
pub struct DirLock {
    _held: Arc<HeldLock>,
}

impl std::fmt::Debug for DirLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("DirLock").field(&self._held.key).finish()
    }
}

struct HeldLock {
    key: PathBuf,
    _file: File,
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        let mut held = lock(held_locks());
        if held.get(&self.key).is_some_and(|w| w.strong_count() == 0) {
            held.remove(&self.key);
        }
    }
}

fn held_locks() -> &'static Mutex<HashMap<PathBuf, Weak<HeldLock>>> {
    static HELD: std::sync::OnceLock<Mutex<HashMap<PathBuf, Weak<HeldLock>>>> =
        std::sync::OnceLock::new();
    HELD.get_or_init(Mutex::default)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl DirLock {
    /// Lock the existing directory `dir` for this process, or fail at once with [`Busy`].
    pub fn acquire(dir: &Path) -> Result<DirLock, LockError> {
        let key = dir.canonicalize().map_err(|source| LockError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut held = lock(held_locks());
        if let Some(existing) = held.get(&key).and_then(Weak::upgrade) {
            return Ok(DirLock { _held: existing });
        }
        let path = key.join(LOCK_FILE);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        if !try_flock(&file).map_err(io)? {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            return Err(Busy {
                dir: dir.to_path_buf(),
                holder: text.trim().parse().ok(),
            }
            .into());
        }
        file.set_len(0).map_err(io)?;
        write!(file, "{}", std::process::id()).map_err(io)?;
        let held_lock = Arc::new(HeldLock {
            key: key.clone(),
            _file: file,
        });
        held.insert(key, Arc::downgrade(&held_lock));
        Ok(DirLock { _held: held_lock })
    }
}

/// Take `file`'s exclusive lock without waiting: `Ok(false)` when another holds it.
fn try_flock(file: &File) -> io::Result<bool> {
    // SAFETY: flock on a file descriptor this `File` owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// Take `file`'s exclusive lock, waiting for it (released when the file is closed).
pub fn flock_wait(file: &File) -> io::Result<()> {
    loop {
        // SAFETY: as in `try_flock`.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// A fresh temporary directory this process owns (see the module documentation).
pub struct OwnedDir {
    path: PathBuf,
    _lock: DirLock,
    _registration: Registration,
}

impl OwnedDir {
    /// Create `<temp>/<prefix>-<pid>-<n>`, after removing the directories with this prefix that
    /// dead processes left (once per prefix and process).
    pub fn create(prefix: &str) -> io::Result<OwnedDir> {
        Self::create_in(&std::env::temp_dir(), prefix)
    }

    /// [`OwnedDir::create`] under `parent` instead of the system's temporary directory.
    pub fn create_in(parent: &Path, prefix: &str) -> io::Result<OwnedDir> {
        static SWEPT: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        {
            let mut swept = lock(&SWEPT);
            let key = (parent.to_path_buf(), prefix.to_string());
            if !swept.contains(&key) {
                swept.push(key);
                remove_stale(parent, prefix);
            }
        }
        install_signal_cleanup();
        let path = loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let path = parent.join(format!("{prefix}-{}-{n}", std::process::id()));
            match std::fs::create_dir(&path) {
                Ok(()) => break path,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        };
        // Registered before it is locked, so that a signal from here on removes it.
        let registration = register(Cleanup::Dir(path.clone()));
        let dir_lock = DirLock::acquire(&path).map_err(|e| match e {
            LockError::Io { source, .. } => source,
            busy => io::Error::other(busy.to_string()),
        })?;
        Ok(OwnedDir {
            path,
            _lock: dir_lock,
            _registration: registration,
        })
    }

    /// The directory, which exists until this value is dropped.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for OwnedDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Remove the directories `<prefix>-<pid>-<n>` under `parent` whose owner is gone: their lock is
/// not held (or, written before locks existed, their pid is no longer a process) and they are
/// older than a few seconds. Returns how many were removed. Errors are ignored: a directory
/// that cannot be removed now is tried again next time.
pub fn remove_stale(parent: &Path, prefix: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return 0;
    };
    let own = std::process::id();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|rest| rest.strip_prefix('-'))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let dir = entry.path();
        if pid == own || !entry.file_type().is_ok_and(|t| t.is_dir()) || !older_than(&dir) {
            continue;
        }
        let gone = match File::options()
            .read(true)
            .write(true)
            .open(dir.join(LOCK_FILE))
        {
            // The lock file stays open until the directory is removed: nobody can take it in
            // between.
            Ok(file) => try_flock(&file).unwrap_or(false),
            Err(e) if e.kind() == io::ErrorKind::NotFound => !process_exists(pid),
            Err(_) => false,
        };
        if gone && std::fs::remove_dir_all(&dir).is_ok() {
            removed += 1;
        }
    }
    removed
}

fn older_than(dir: &Path) -> bool {
    let modified = std::fs::metadata(dir).and_then(|m| m.modified());
    modified.is_ok_and(|m| {
        SystemTime::now()
            .duration_since(m)
            .is_ok_and(|age| age >= STALE_AFTER)
    })
}

fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the process exists.
    unsafe {
        libc::kill(pid, 0) == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
}

/// Send SIGTERM to process group `group` (a child started in its own group) if this process is
/// ended by a signal or aborts, until the returned registration is dropped.
pub fn end_group_on_signal(group: u32) -> Registration {
    install_signal_cleanup();
    register(Cleanup::Group(group))
}

/// Do now what a signal would: end the registered process groups and remove the registered
/// directories. For a process about to abort (an MPI job ending on a failed rank).
pub fn run_now() {
    let items: Vec<Cleanup> = lock(registry()).values().cloned().collect();
    for item in items {
        match item {
            Cleanup::Dir(path) => {
                let _ = std::fs::remove_dir_all(path);
            }
            Cleanup::Group(group) => {
                if let Ok(group) = libc::pid_t::try_from(group) {
                    // SAFETY: sends a signal; no memory is involved.
                    unsafe { libc::kill(-group, libc::SIGTERM) };
                }
            }
        }
    }
}

#[derive(Clone)]
enum Cleanup {
    Dir(PathBuf),
    Group(u32),
}

/// An entry of the signal cleanup, removed when dropped.
pub struct Registration {
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        lock(registry()).remove(&self.id);
    }
}

fn registry() -> &'static Mutex<HashMap<u64, Cleanup>> {
    static REGISTRY: std::sync::OnceLock<Mutex<HashMap<u64, Cleanup>>> = std::sync::OnceLock::new();
    REGISTRY.get_or_init(Mutex::default)
}

fn register(item: Cleanup) -> Registration {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    lock(registry()).insert(id, item);
    Registration { id }
}

/// The write end of the pipe the signal handler writes to (-1 before installation).
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

/// Set when the cleanup starts handling a signal: the process is about to end by it.
static HANDLING: AtomicBool = AtomicBool::new(false);

/// When the cleanup is handling a signal, waits for it to end the process (once the registered
/// groups are ended and directories removed); returns at once otherwise. A front end that would
/// otherwise end the process itself (returning from `main` because its child died of the
/// cleanup's own SIGTERM) calls this first, so the process ends by the signal it was sent, as it
/// would have without the cleanup, and not with an error of its own.
pub fn await_signal() {
    while HANDLING.load(Ordering::SeqCst) {
        std::thread::park_timeout(std::time::Duration::from_millis(50));
    }
}

extern "C" fn on_signal(signal: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    let byte = signal as u8;
    // SAFETY: write(2) is async-signal-safe; errno is saved and restored around it.
    unsafe {
        let errno = *libc::__errno_location();
        libc::write(fd, (&byte as *const u8).cast(), 1);
        *libc::__errno_location() = errno;
    }
}

fn install_signal_cleanup() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: pipe2 fills `fds` with two new descriptors.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return;
        }
        // SAFETY: the read end is ours alone from here on.
        let mut reader = unsafe { File::from_raw_fd(fds[0]) };
        SIGNAL_PIPE.store(fds[1], Ordering::Relaxed);
        let watcher = std::thread::Builder::new()
            .name("mheta-signals".into())
            .spawn(move || {
                let mut byte = [0u8];
                while reader.read_exact(&mut byte).is_ok() {
                    let signal = libc::c_int::from(byte[0]);
                    HANDLING.store(true, Ordering::SeqCst);
                    run_now();
                    // SAFETY: restores the default action and raises the signal again, so the
                    // process ends as it would have without this cleanup.
                    unsafe {
                        libc::signal(signal, libc::SIG_DFL);
                        libc::raise(signal);
                    }
                }
            });
        if watcher.is_err() {
            return;
        }
        for signal in SIGNALS {
            // SAFETY: reads the current action, and replaces it only if it is the default.
            unsafe {
                let mut current: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut current) != 0
                    || current.sa_sigaction != libc::SIG_DFL
                {
                    continue;
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    });
}
