//! [`Console`]: where every line for the user goes (the session, its workloads, observers and
//! tables write through it); [`StdConsole`] is the process's stdout and stderr. A leaf of the
//! crate: it imports nothing from the other modules, so any of them may report through it.

/// Lines for the user: stdout for progress facts, stderr for warnings and errors. The one
/// reporter of a sweep: the session, its executors, observers and tables write through it.
pub trait Console: Send + Sync {
    /// A line on stdout.
    fn line(&self, s: &str);
    /// A line on stderr.
    fn warn(&self, s: &str);
}

/// The process's stdout and stderr.
pub struct StdConsole;

impl Console for StdConsole {
    fn line(&self, s: &str) {
        println!("{s}");
    }
    fn warn(&self, s: &str) {
        eprintln!("{s}");
    }
}
