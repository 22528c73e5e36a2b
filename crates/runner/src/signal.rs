//! Ctrl-C / SIGTERM: an async-signal-safe handler that only sets a flag; the runner's and the
//! job's loops poll [`interrupted`] (every ≤ 200 ms) and tear down what they started.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Installs the handler for SIGINT and SIGTERM (idempotent).
pub fn install() {
    // SAFETY: the handler only stores to atomics, which is async-signal-safe.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
}

/// True once SIGINT or SIGTERM arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The signal that arrived (2 = SIGINT, 15 = SIGTERM), 0 when none.
pub fn signal_number() -> i32 {
    SIGNAL.load(Ordering::SeqCst)
}

/// Sends `sig` to every process of group `pgid`. Returns false when the group is gone.
pub fn kill_group(pgid: i32, sig: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: plain syscall.
    unsafe { libc::killpg(pgid, sig) == 0 }
}

/// True while some process of group `pgid` exists (zombies included until reaped).
pub fn group_alive(pgid: i32) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: signal 0 only checks existence and permission.
    let r = unsafe { libc::kill(-pgid, 0) };
    if r == 0 {
        return true;
    }
    std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Tears a process group down: SIGTERM, up to `grace` for it to go, then SIGKILL and up to 5 s
/// more. Returns true when no process of the group is left. `reap` is called while waiting (the
/// caller reaps its own direct child there, so a zombie leader does not count as alive).
pub fn teardown_group(pgid: i32, grace: std::time::Duration, mut reap: impl FnMut()) -> bool {
    if !group_alive(pgid) {
        return true;
    }
    kill_group(pgid, libc::SIGTERM);
    // a stopped process ignores SIGTERM until continued
    kill_group(pgid, libc::SIGCONT);
    let wait = |limit: std::time::Duration, reap: &mut dyn FnMut()| {
        let t0 = std::time::Instant::now();
        while t0.elapsed() < limit {
            reap();
            if !group_alive(pgid) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        false
    };
    if wait(grace, &mut reap) {
        return true;
    }
    kill_group(pgid, libc::SIGKILL);
    wait(std::time::Duration::from_secs(5), &mut reap)
}
