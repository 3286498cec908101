//! Directories a run leaves behind, and directories two processes would share: an owned
//! scratch directory is removed when the process is ended by a signal (and the processes it
//! started are ended too), a killed process's directory is removed by the next one, and a store
//! directory in use by another process is refused naming that process.
//!
//! The other processes are this test binary run again on an `#[ignore]`d helper test, told
//! what to do by `MHETA_CLEANUP_HELPER`.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use mheta_runtime::cleanup::{self, DirLock, OwnedDir, LOCK_FILE};
use mheta_runtime::cluster::DiskModel;
use mheta_runtime::ooc::{NodeStore, OocError, StoreConfig};

const HELPER: &str = "MHETA_CLEANUP_HELPER";

fn store_config(dir: &Path) -> StoreConfig {
    StoreConfig {
        dir: dir.to_path_buf(),
        memory_bytes: u64::MAX,
        disk: DiskModel::unthrottled(),
        instrumented: false,
        force_out_of_core: false,
    }
}

/// Start this binary on the helper test with `task` and `dir`; returns the child and the first
/// line it prints once it is ready.
fn start_helper(task: &str, dir: &Path) -> (Child, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "helper",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HELPER, format!("{task}:{}", dir.display()))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = lines
        .by_ref()
        .map(Result::unwrap)
        // The harness prints `test helper ... ` on the same line first.
        .find_map(|l| l.split_once("ready ").map(|(_, rest)| rest.to_string()))
        .expect("the helper prints `ready ...`");
    // Read the rest, so that the helper never writes to a closed pipe.
    std::thread::spawn(move || lines.for_each(drop));
    (child, ready)
}

/// What the helper process does, then it waits for its stdin to close (or a signal).
#[test]
#[ignore = "run by the other tests in a process of its own"]
fn helper() {
    let Ok(task) = std::env::var(HELPER) else {
        return;
    };
    let (task, dir) = task.split_once(':').unwrap();
    // The signals the tests send must have their default action here, as in a program run from
    // a terminal, whatever the test run inherited: a shell starts background jobs with SIGINT
    // ignored, and `nohup` ignores SIGHUP (the cleanup leaves an ignored signal ignored, so the
    // helper would never end).
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: restores the default action of a signal in this helper process.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
    let dir = PathBuf::from(dir);
    match task {
        "store" => {
            let _store = NodeStore::open(store_config(&dir)).unwrap();
            println!("ready {}", std::process::id());
            wait_for_stdin();
        }
        "owned" => {
            let owned = OwnedDir::create_in(&dir, "mheta-test").unwrap();
            std::fs::write(owned.path().join("block"), [0u8; 64]).unwrap();
            let mut sleeper = Command::new("sleep");
            std::os::unix::process::CommandExt::process_group(&mut sleeper, 0);
            // Never waited for: this helper is ended by a signal, whose cleanup ends the sleeper.
            #[allow(clippy::zombie_processes)]
            let sleeper = sleeper.arg("300").spawn().unwrap();
            let _group = cleanup::end_group_on_signal(sleeper.id());
            println!("ready {} {}", owned.path().display(), sleeper.id());
            wait_for_stdin();
        }
        other => panic!("unknown helper task {other}"),
    }
}

fn wait_for_stdin() {
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
}

/// Whether `pid` is a live process (not gone, not a zombie).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            Some(state != 'Z' && state != 'X')
        })
        .unwrap_or(false)
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The helper's exit status once it has ended; a helper still running after 20 s is killed and
/// the test fails (a signal it ignores would otherwise leave the test waiting for ever).
fn wait_for_end(child: &mut Child, signal: i32) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("signal {signal}: the helper did not end within 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_store_in_use_by_another_process_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, pid) = start_helper("store", dir.path());
    let err = NodeStore::open(store_config(dir.path())).err().unwrap();
    assert!(
        matches!(&err, OocError::InUse { holder: Some(p), .. } if p.to_string() == pid),
        "{err}"
    );
    assert!(err.to_string().contains("--scratch"), "{err}");
    drop(child.stdin.take());
    child.wait().unwrap();
    // The lock dies with its holder; in one process, two opens share one lock.
    let a = NodeStore::open(store_config(dir.path())).unwrap();
    let b = NodeStore::open(store_config(dir.path())).unwrap();
    drop((a, b));
}

#[test]
fn a_signal_removes_the_owned_directory_and_ends_the_child_groups() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let parent = tempfile::tempdir().unwrap();
        let (mut child, ready) = start_helper("owned", parent.path());
        let (path, sleeper) = ready.rsplit_once(' ').unwrap();
        let (path, sleeper) = (PathBuf::from(path), sleeper.parse::<u32>().unwrap());
        assert!(path.join("block").is_file() && alive(sleeper));
        // SAFETY: signals the helper process this test started.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        // Held open while waiting (`wait` would close it, and the helper would end on its own).
        let stdin = child.stdin.take();
        let status = wait_for_end(&mut child, signal);
        drop(stdin);
        assert_eq!(status.signal(), Some(signal), "{status}");
        assert!(!path.exists(), "{} left behind", path.display());
        wait_until(
            &format!("signal {signal}: the child's process group ends"),
            || !alive(sleeper),
        );
    }
}

#[test]
fn directories_of_dead_processes_are_removed_and_live_ones_kept() {
    let parent = tempfile::tempdir().unwrap();
    let old = SystemTime::now() - Duration::from_secs(3600);
    let make = |name: &str, lock: bool, age: SystemTime| {
        let dir = parent.path().join(name);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("data"), b"x").unwrap();
        if lock {
            std::fs::write(dir.join(LOCK_FILE), b"1").unwrap();
        }
        std::fs::File::open(&dir)
            .unwrap()
            .set_modified(age)
            .unwrap();
        dir
    };
    // A killed process's directory: its lock file is not held by anyone.
    let killed = make("mheta-test-4000001-0", true, old);
    // Written before locks existed, by a pid that is no process (above the kernel's maximum).
    let legacy = make("mheta-test-4194305-3", false, old);
    // Held by a live process (this one, through a lock taken like another process's).
    let held = make("mheta-test-1-0", true, old);
    let _lock = DirLock::acquire(&held).unwrap();
    // Fresh: its owner may not have taken its lock yet.
    let fresh = make("mheta-test-4000002-0", true, SystemTime::now());
    // Another prefix, and a file that only looks like a directory of ours.
    let other = make("mheta-other-4000003-0", true, old);
    std::fs::write(parent.path().join("mheta-test-4000004-0"), b"x").unwrap();

    assert_eq!(cleanup::remove_stale(parent.path(), "mheta-test"), 2);
    assert!(!killed.exists() && !legacy.exists());
    assert!(held.exists() && fresh.exists() && other.exists());
    assert!(parent.path().join("mheta-test-4000004-0").is_file());
}
