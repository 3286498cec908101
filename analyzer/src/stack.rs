//! The stack an analysis runs on.
//!
//! Parsing (syn) and every pass recurse over the syntax tree, some 100 KB of stack per level of
//! nesting in a debug build, so nested code of a few dozen levels overflows a test thread's
//! 2 MiB, and thousands of nested parentheses the main thread's 8 MiB; overflowing aborts the
//! process. So an analysis runs on a stack of its own: 1 GiB of address space, reserved once
//! per thread and kept for the thread's later analyses. Only the pages a deep input touches are
//! committed, and after each analysis all but the top few MiB are handed back to the kernel, so
//! one deep input does not leave the thread holding its memory.
//!
//! Allocating the stack per analysis (`stacker::grow`) cost a map, a protect, an unmap and the
//! page faults of refilling fresh pages on every call: the kernel's share of a small file's
//! analysis was four times its share of parsing the same file.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// The analysis stack's usable size.
const BYTES: usize = 1 << 30;

/// How much of the stack's top (where it starts) stays committed between analyses.
const KEEP: usize = 8 << 20;

thread_local! {
    /// This thread's analysis stack, mapped at its first analysis.
    #[cfg(all(unix, any(target_arch = "x86_64", target_arch = "aarch64")))]
    static KEPT: RefCell<Option<Mapping>> = const { RefCell::new(None) };
    /// Whether this thread is on its analysis stack now: a nested call (the proc macro's
    /// expansion calling an analysis) stays where it is.
    static ON_IT: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` on this thread's analysis stack (already on it: directly). A panic in `f` unwinds
/// to here, off the foreign stack, and goes on from the caller.
pub(crate) fn run<R>(f: impl FnOnce() -> R) -> R {
    if ON_IT.with(Cell::get) {
        return f();
    }
    on_own_stack(f)
}

/// Where the analysis can switch stacks: elsewhere it runs on the caller's stack.
macro_rules! switching {
    ($($item:item)*) => {
        $(#[cfg(all(unix, any(target_arch = "x86_64", target_arch = "aarch64")))] $item)*
    };
}

switching! {
    fn on_own_stack<R>(f: impl FnOnce() -> R) -> R {
        let Some(base) = KEPT.with(|kept| {
            let mut kept = kept.borrow_mut();
            if kept.is_none() {
                *kept = Mapping::new(BYTES);
            }
            kept.as_ref().map(|m| m.base)
        }) else {
            // No address space for it: the caller's stack is all there is.
            return f();
        };
        ON_IT.with(|on| on.set(true));
        // SAFETY: `base..base + BYTES` is a read-write mapping owned by this thread's `KEPT`
        // and used by nothing else while `ON_IT` is set; `f` does not unwind through the stack
        // switch (caught here).
        let outcome =
            unsafe { on_stack(base.add(BYTES - TOP_GAP), || catch_unwind(AssertUnwindSafe(f))) };
        ON_IT.with(|on| on.set(false));
        KEPT.with(|kept| {
            if let Some(m) = kept.borrow().as_ref() {
                m.release_below(BYTES - KEEP);
            }
        });
        match outcome {
            Ok(value) => value,
            Err(panic) => resume_unwind(panic),
        }
    }

    /// Bytes left unused at the stack's top, zero as mapped: an unwinder walking out of the
    /// callback (a backtrace taken inside an analysis) reads a zero return address there and
    /// stops, instead of reading past the mapping.
    const TOP_GAP: usize = 4096;

    /// Runs `f` with the stack pointer at `top` (16-byte aligned; the stack grows down from it)
    /// and returns on the caller's stack.
    ///
    /// # Safety
    /// `top` must be the top of writable memory deep enough for `f` and used by nothing else
    /// until `f` returns; `f` must not unwind.
    unsafe fn on_stack<R, F: FnOnce() -> R>(top: *mut u8, f: F) -> R {
        struct Call<F, R> {
            f: Option<F>,
            out: Option<R>,
        }
        /// Runs on the new stack, given the `Call`.
        unsafe extern "C" fn trampoline<F: FnOnce() -> R, R>(call: *mut u8) {
            // SAFETY: `call` is `on_stack`'s `Call`, alive until `switch` returns.
            let call = unsafe { &mut *call.cast::<Call<F, R>>() };
            if let Some(f) = call.f.take() {
                call.out = Some(f());
            }
        }
        let mut call = Call { f: Some(f), out: None };
        let data: *mut Call<F, R> = &mut call;
        // SAFETY: this function's contract.
        unsafe { switch(top, trampoline::<F, R>, data.cast()) };
        match call.out {
            Some(out) => out,
            // `trampoline` always runs `f`; an unwind out of an `extern "C"` function aborts.
            None => unreachable!("the callback returned without a result"),
        }
    }

    /// An anonymous mapping with a guard page below the usable part (the stack grows down into
    /// it).
    struct Mapping {
        start: *mut libc::c_void,
        len: usize,
        base: *mut u8,
        /// The system's page size.
        page: usize,
    }

    impl Mapping {
        fn new(usable: usize) -> Option<Mapping> {
            // SAFETY: plain system calls on a fresh anonymous mapping.
            unsafe {
                let page = usize::try_from(libc::sysconf(libc::_SC_PAGESIZE)).ok()?;
                let len = usable + page;
                let start = libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_NONE,
                    libc::MAP_PRIVATE | libc::MAP_ANON | libc::MAP_NORESERVE,
                    -1,
                    0,
                );
                if start == libc::MAP_FAILED {
                    return None;
                }
                let base = start.cast::<u8>().add(page);
                if libc::mprotect(base.cast(), usable, libc::PROT_READ | libc::PROT_WRITE) != 0 {
                    libc::munmap(start, len);
                    return None;
                }
                Some(Mapping {
                    start,
                    len,
                    base,
                    page,
                })
            }
        }

        /// Hands the pages of the stack's first `bytes` (its deep end) back to the kernel; they
        /// read as zero when touched again.
        ///
        /// Only when the analysis reached them: the stack grows down one page at a time (a call
        /// pushes its return address less than a page below the last one, and a frame larger
        /// than a page probes each of its pages), so if the page right below the kept part is
        /// not resident, no page below it is either. Asking costs one page's `mincore`; the
        /// `madvise` over the whole range, even empty, cost a small file's analysis 3 % of its
        /// time.
        fn release_below(&self, bytes: usize) {
            let page = self.page;
            if bytes < page {
                return;
            }
            let mut resident = 0u8;
            // SAFETY: the page lies inside the mapping; `mincore` writes one byte per page.
            let status = unsafe {
                libc::mincore(self.base.add(bytes - page).cast(), page, &mut resident)
            };
            if status == 0 && resident & 1 == 0 {
                return;
            }
            // SAFETY: the range lies inside the mapping, and nothing is on it (the stack is not
            // in use).
            unsafe {
                libc::madvise(self.base.cast(), bytes, libc::MADV_DONTNEED);
            }
        }
    }

    impl Drop for Mapping {
        fn drop(&mut self) {
            // SAFETY: the mapping is this value's and no stack frame is on it (a thread's locals
            // are dropped after its last frame on it returned).
            unsafe {
                libc::munmap(self.start, self.len);
            }
        }
    }
}

/// Calls `callback(data)` with the stack pointer at `top`; r12, callee-saved in the System V
/// ABI, keeps the caller's stack pointer across the call.
///
/// # Safety
/// As [`on_stack`]'s.
#[cfg(all(unix, target_arch = "x86_64"))]
unsafe fn switch(top: *mut u8, callback: unsafe extern "C" fn(*mut u8), data: *mut u8) {
    // SAFETY: the caller's contract; `clobber_abi` declares what the callee may change.
    unsafe {
        std::arch::asm!(
            "mov r12, rsp",
            "mov rsp, {top}",
            "call {callback}",
            "mov rsp, r12",
            top = in(reg) top,
            callback = in(reg) callback,
            in("rdi") data,
            out("r12") _,
            clobber_abi("C"),
        );
    }
}

/// Calls `callback(data)` with the stack pointer at `top`; x20, callee-saved in AAPCS64, keeps
/// the caller's stack pointer across the call.
///
/// # Safety
/// As [`on_stack`]'s.
#[cfg(all(unix, target_arch = "aarch64"))]
unsafe fn switch(top: *mut u8, callback: unsafe extern "C" fn(*mut u8), data: *mut u8) {
    // SAFETY: the caller's contract; `clobber_abi` declares what the callee may change (x30,
    // the link register, among it).
    unsafe {
        std::arch::asm!(
            "mov x20, sp",
            "mov sp, {top}",
            "blr {callback}",
            "mov sp, x20",
            top = in(reg) top,
            callback = in(reg) callback,
            in("x0") data,
            out("x20") _,
            clobber_abi("C"),
        );
    }
}

#[cfg(not(all(unix, any(target_arch = "x86_64", target_arch = "aarch64"))))]
fn on_own_stack<R>(f: impl FnOnce() -> R) -> R {
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An address in the caller's frame.
    #[inline(never)]
    fn stack_pointer() -> usize {
        let here = 0u8;
        std::hint::black_box(&here) as *const u8 as usize
    }

    /// Recurses `depth` times with a 64 KiB frame each.
    fn deep(depth: usize) -> usize {
        let frame = std::hint::black_box([depth as u8; 64 << 10]);
        if depth == 0 {
            return frame[0] as usize;
        }
        deep(depth - 1) + 1 + usize::from(frame[1] != depth as u8)
    }

    #[test]
    fn a_deep_call_fits_on_a_small_thread() {
        // 64 MiB of frames on a thread of 256 KiB.
        let depth = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(|| run(|| deep(1024)))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(depth, 1024);
    }

    #[cfg(all(unix, any(target_arch = "x86_64", target_arch = "aarch64")))]
    #[test]
    fn the_stack_is_kept_and_nested_calls_stay_on_it() {
        std::thread::spawn(|| {
            let first = run(stack_pointer);
            let again = run(|| run(stack_pointer));
            let base = KEPT
                .with(|k| k.borrow().as_ref().map(|m| m.base as usize))
                .unwrap();
            for sp in [first, again] {
                assert!(
                    sp > base && sp <= base + BYTES,
                    "{sp:#x} not on the kept stack"
                );
            }
            assert!(!ON_IT.with(Cell::get));
        })
        .join()
        .unwrap();
    }

    /// Whether the page holding `address` is in memory.
    #[cfg(all(unix, any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn resident(address: usize) -> bool {
        // SAFETY: sysconf has no memory effects.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap();
        let mut status = 0u8;
        // SAFETY: a query on one page of this thread's analysis stack mapping.
        let r = unsafe { libc::mincore((address & !(page - 1)) as *mut _, page, &mut status) };
        assert_eq!(r, 0, "mincore failed");
        status & 1 == 1
    }

    #[cfg(all(unix, any(target_arch = "x86_64", target_arch = "aarch64")))]
    #[test]
    fn the_pages_a_deep_analysis_touched_are_handed_back() {
        std::thread::spawn(|| {
            let base = || {
                KEPT.with(|k| k.borrow().as_ref().map(|m| m.base as usize))
                    .unwrap()
            };
            // 64 MiB of frames: far below the kept part.
            let mut top_frame = 0;
            assert_eq!(
                run(|| {
                    top_frame = stack_pointer();
                    deep(1024)
                }),
                1024
            );
            let (deep_page, below_kept) = (base() + BYTES - (40 << 20), base() + BYTES - KEEP - 1);
            assert!(!resident(deep_page), "a page 40 MiB down is still resident");
            assert!(
                !resident(below_kept),
                "the page below the kept part is still resident"
            );
            // A shallow analysis leaves them so, and the kept part stays.
            assert_eq!(run(|| deep(4)), 4);
            assert!(!resident(deep_page) && !resident(below_kept));
            assert!(resident(top_frame), "the kept part was released");
            // And a deep one after it is released again.
            assert_eq!(run(|| deep(1024)), 1024);
            assert!(!resident(deep_page));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_backtrace_taken_on_the_stack_ends_there() {
        // The unwinder walks out of the callback to the stack's top and stops.
        let (frames, depth) = run(|| {
            let trace = std::backtrace::Backtrace::force_capture().to_string();
            (trace.lines().count(), deep(8))
        });
        assert!(frames > 0);
        assert_eq!(depth, 8);
    }

    #[test]
    fn a_panic_on_the_stack_reaches_the_caller_and_the_stack_stays_usable() {
        std::thread::spawn(|| {
            let caught = catch_unwind(|| run(|| panic!("deep trouble")));
            let message = caught.unwrap_err();
            assert_eq!(message.downcast_ref::<&str>(), Some(&"deep trouble"));
            assert!(!ON_IT.with(Cell::get));
            assert_eq!(run(|| deep(16)), 16);
        })
        .join()
        .unwrap();
    }
}
