//! Job backends ([`JobBackend`]): where a point's job runs (`--executor local|slurm`). [`LocalBackend`] runs the job script on this machine
//! as its own process group (one point at a time); [`SlurmBackend`] submits one `sbatch` job
//! per point with `--gpus`, reads its state from `scontrol`/`squeue` (and `sacct -c` once the
//! controller has forgotten it) and cancels with `scancel`.

use std::fs::OpenOptions;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Result, RunnerError};
use crate::signal;

/// A submitted job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobHandle {
    /// `local` or `slurm`.
    pub executor: String,
    /// Local: the job's process group id; Slurm: the job id.
    pub id: String,
    /// The attempt directory.
    pub dir: PathBuf,
    /// The job log.
    pub log: PathBuf,
}

/// A job's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobState {
    /// Queued (Slurm PENDING).
    Pending,
    /// Running.
    Running,
    /// Finished: `exit_code` of the job script (`None` when killed by a signal); `state` as the
    /// scheduler says it (`COMPLETED`, `FAILED`, `CANCELLED`, `TIMEOUT`, `exit 0`…).
    Done {
        /// Exit code.
        exit_code: Option<i32>,
        /// Scheduler state.
        state: String,
    },
}

/// Where jobs run.
pub trait JobBackend {
    /// `local` or `slurm`.
    fn name(&self) -> &'static str;
    /// Jobs that may run at once (local: 1; Slurm: the scheduler decides).
    fn max_parallel(&self) -> usize;
    /// Starts the job script `script` of the attempt in `dir`, its output going to `log`.
    fn submit(&mut self, script: &Path, dir: &Path, log: &Path) -> Result<JobHandle>;
    /// The job's state now.
    fn poll(&mut self, h: &JobHandle) -> Result<JobState>;
    /// Stops the job (local: SIGTERM to its process group, then SIGKILL; Slurm: `scancel`).
    fn cancel(&mut self, h: &JobHandle) -> Result<()>;
}

/// Runs jobs on this machine, one at a time (or `parallel` at a time), each as its own process
/// group.
#[derive(Default)]
pub struct LocalBackend {
    children: Vec<(String, Child)>,
    parallel: usize,
}

impl LocalBackend {
    /// A local backend (one job at a time).
    pub fn new() -> LocalBackend {
        LocalBackend::default()
    }

    /// A local executor running up to `n` jobs at once (`servebench coverage --jobs N`; each
    /// job picks its own free port).
    pub fn with_parallel(n: usize) -> LocalBackend {
        LocalBackend {
            parallel: n.max(1),
            ..LocalBackend::default()
        }
    }
}

impl JobBackend for LocalBackend {
    fn name(&self) -> &'static str {
        "local"
    }
    fn max_parallel(&self) -> usize {
        self.parallel.max(1)
    }
    fn submit(&mut self, script: &Path, dir: &Path, log: &Path) -> Result<JobHandle> {
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| RunnerError::io(log, e))?;
        let err = out.try_clone().map_err(|e| RunnerError::io(log, e))?;
        let child = Command::new("bash")
            .arg(script)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out))
            .stderr(Stdio::from(err))
            .env("SERVEBENCH_JOB_LOG", log)
            .process_group(0)
            .spawn()
            .map_err(|e| RunnerError::io(script, e))?;
        let id = child.id().to_string();
        self.children.push((id.clone(), child));
        Ok(JobHandle {
            executor: "local".into(),
            id,
            dir: dir.to_path_buf(),
            log: log.to_path_buf(),
        })
    }
    /// A job reaped here leaves the list at once: its pid (the handle's id) may be reused by a
    /// later job's process (pid_max is 32,768 on many hosts, and a coverage run spawns
    /// thousands), and an old exited entry under that id answered for the new job ("failed (job
    /// exit 0)" while it was still measuring, seen in a whole-catalog coverage run).
    fn poll(&mut self, h: &JobHandle) -> Result<JobState> {
        let Some(i) = self.children.iter().rposition(|(id, _)| *id == h.id) else {
            return Ok(JobState::Done {
                exit_code: None,
                state: "unknown (not started by this process)".into(),
            });
        };
        match self.children[i].1.try_wait() {
            Ok(None) => Ok(JobState::Running),
            Ok(Some(st)) => {
                self.children.remove(i);
                Ok(JobState::Done {
                    exit_code: st.code(),
                    state: match (st.code(), st.signal()) {
                        (Some(c), _) => format!("exit {c}"),
                        (_, Some(s)) => format!("signal {s}"),
                        _ => "ended".into(),
                    },
                })
            }
            Err(e) => Err(RunnerError::io(&h.log, e)),
        }
    }
    fn cancel(&mut self, h: &JobHandle) -> Result<()> {
        let pgid: i32 = h.id.parse().unwrap_or(0);
        let idx = self.children.iter().position(|(id, _)| *id == h.id);
        let children = &mut self.children;
        // SIGTERM to the job's group: the job tears its engine group down, then exits
        signal::teardown_group(pgid, Duration::from_secs(20), || {
            if let Some(i) = idx {
                let _ = children[i].1.try_wait();
            }
        });
        kill_engine_of(&h.dir);
        Ok(())
    }
}

/// Belt and braces after a job ended or was cancelled: if the engine's process group recorded
/// in `engine.pgid` still has a process (its job was SIGKILLed before it could tear it down),
/// tear it down. Returns true when it is gone.
pub fn kill_engine_of(dir: &Path) -> bool {
    let Some(pgid) = std::fs::read_to_string(dir.join("engine.pgid"))
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
    else {
        return true;
    };
    signal::teardown_group(pgid, Duration::from_secs(5), || {})
}

/// Submits one Slurm job per point through `sbatch`.
#[derive(Debug, Clone, Default)]
pub struct SlurmBackend {
    /// Extra `sbatch` flags (`--partition` is in the job script).
    pub sbatch_args: Vec<String>,
}

fn run_cmd(prog: &str, args: &[&str]) -> Result<(bool, String, String)> {
    let out = Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            RunnerError::Slurm(format!(
                "{prog}: cannot run: {e} (is Slurm installed and on PATH?)"
            ))
        })?;
    Ok((
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// `JobState=` and `ExitCode=` of `scontrol -o show job ID` (None when Slurm forgot the job).
pub fn scontrol_state(id: &str) -> Result<Option<(String, String)>> {
    let (ok, out, _) = run_cmd("scontrol", &["-o", "show", "job", id])?;
    if !ok {
        return Ok(None);
    }
    let field = |k: &str| {
        out.split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .map(str::to_string)
    };
    Ok(field("JobState=").map(|s| (s, field("ExitCode=").unwrap_or_else(|| "0:0".into()))))
}

/// Why a pending job can never start, when Slurm says so: `Reason=PartitionNodeLimit` (it asks
/// for more nodes than its partition has: a multinode plan larger than the cluster) or
/// `BadConstraints`. Slurm keeps such a job pending forever.
pub fn never_starts(id: &str) -> Result<Option<String>> {
    let (ok, out, _) = run_cmd("scontrol", &["-o", "show", "job", id])?;
    if !ok || !out.contains("JobState=PENDING") {
        return Ok(None);
    }
    let reason = out
        .split_whitespace()
        .find_map(|w| w.strip_prefix("Reason="))
        .unwrap_or("");
    let nodes = out
        .split_whitespace()
        .find_map(|w| w.strip_prefix("NumNodes="))
        .map(|n| n.split('-').next().unwrap_or(n))
        .unwrap_or("?");
    Ok(match reason {
        "PartitionNodeLimit" => Some(format!(
            "Reason=PartitionNodeLimit: it asks for {nodes} node(s), more than its partition has"
        )),
        "BadConstraints" => Some("Reason=BadConstraints: no node can satisfy its request".into()),
        _ => None,
    })
}

/// State and exit code from `sacct -c` (jobcomp/filetxt: the durable record).
pub fn sacct_state(id: &str) -> Result<Option<(String, String)>> {
    let (_, out, _) = run_cmd(
        "sacct",
        &["-c", "-n", "-P", "-o", "JobID,State,ExitCode", "-j", id],
    )?;
    Ok(out.lines().find_map(|l| {
        let f: Vec<&str> = l.split('|').collect();
        (f.len() >= 3 && f[0] == id).then(|| (f[1].to_string(), f[2].to_string()))
    }))
}

fn done_from(state: &str, exit: &str) -> Option<JobState> {
    let state = state.split_whitespace().next().unwrap_or(state);
    match state {
        "PENDING" | "CONFIGURING" | "REQUEUED" | "RESV_DEL_HOLD" | "SUSPENDED" => {
            Some(JobState::Pending)
        }
        "RUNNING" | "COMPLETING" | "STAGE_OUT" | "SIGNALING" => Some(JobState::Running),
        _ => {
            let (code, sig) = exit.split_once(':').unwrap_or((exit, "0"));
            let code: i32 = code.parse().unwrap_or(0);
            let sig: i32 = sig.parse().unwrap_or(0);
            Some(JobState::Done {
                exit_code: if sig != 0 { None } else { Some(code) },
                state: state.to_string(),
            })
        }
    }
}

impl JobBackend for SlurmBackend {
    fn name(&self) -> &'static str {
        "slurm"
    }
    fn max_parallel(&self) -> usize {
        usize::MAX
    }
    fn submit(&mut self, script: &Path, dir: &Path, log: &Path) -> Result<JobHandle> {
        let mut args: Vec<String> = vec!["--parsable".into(), format!("--chdir={}", dir.display())];
        args.extend(self.sbatch_args.iter().cloned());
        args.push(script.display().to_string());
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (ok, out, err) = run_cmd("sbatch", &a)?;
        if !ok {
            return Err(RunnerError::Slurm(format!(
                "sbatch {}: {}",
                script.display(),
                err.trim()
            )));
        }
        let id = out.trim().split(';').next().unwrap_or("").to_string();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
            return Err(RunnerError::Slurm(format!(
                "sbatch {}: unexpected answer {:?}",
                script.display(),
                out.trim()
            )));
        }
        Ok(JobHandle {
            executor: "slurm".into(),
            id,
            dir: dir.to_path_buf(),
            log: log.to_path_buf(),
        })
    }
    fn poll(&mut self, h: &JobHandle) -> Result<JobState> {
        if let Some(why) = never_starts(&h.id)? {
            // said in the job's log (it has none yet) so the failure is triaged from it
            let line = format!(
                "servebench-job: ERROR: Slurm will never start job {}: {why}; cancelled",
                h.id
            );
            if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(&h.log) {
                use std::io::Write;
                let _ = writeln!(f, "{line}");
            }
            let _ = run_cmd("scancel", &[&h.id]);
            return Ok(JobState::Done {
                exit_code: None,
                state: format!("PENDING ({why}); cancelled"),
            });
        }
        if let Some((s, e)) = scontrol_state(&h.id)? {
            if let Some(st) = done_from(&s, &e) {
                return Ok(st);
            }
        }
        if let Some((s, e)) = sacct_state(&h.id)? {
            if let Some(st) = done_from(&s, &e) {
                return Ok(st);
            }
        }
        Ok(JobState::Done {
            exit_code: None,
            state: "UNKNOWN (not in scontrol or sacct -c)".into(),
        })
    }
    fn cancel(&mut self, h: &JobHandle) -> Result<()> {
        let (ok, _, err) = run_cmd("scancel", &[&h.id])?;
        if !ok {
            return Err(RunnerError::Slurm(format!(
                "scancel {}: {}",
                h.id,
                err.trim()
            )));
        }
        // wait until Slurm has ended it (the job's SIGTERM handler tears its engine down)
        for _ in 0..150 {
            match self.poll(h)? {
                JobState::Done { .. } => break,
                _ => std::thread::sleep(Duration::from_millis(200)),
            }
        }
        kill_engine_of(&h.dir);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reaped job leaves the list, so a later job whose pid (the handle id) equals the
    /// reaped one's is answered from its own process, not from the old exit status.
    #[test]
    fn a_reused_pid_is_answered_by_the_live_job() {
        let dir = tempfile::tempdir().unwrap();
        let (quick, slow) = (dir.path().join("quick.sh"), dir.path().join("slow.sh"));
        std::fs::write(&quick, "exit 0\n").unwrap();
        std::fs::write(&slow, "sleep 30\n").unwrap();
        let log = dir.path().join("job.log");
        let mut b = LocalBackend::new();
        let first = b.submit(&quick, dir.path(), &log).unwrap();
        while !matches!(b.poll(&first).unwrap(), JobState::Done { .. }) {
            std::thread::yield_now();
        }
        let second = b.submit(&slow, dir.path(), &log).unwrap();
        // the kernel hands the first job's pid to the second one
        b.children.last_mut().unwrap().0 = first.id.clone();
        let reused = JobHandle {
            id: first.id.clone(),
            ..second.clone()
        };
        assert_eq!(b.poll(&reused).unwrap(), JobState::Running);
        b.children.last_mut().unwrap().0 = second.id.clone();
        b.cancel(&second).unwrap();
    }

    #[test]
    fn slurm_states_map() {
        assert_eq!(done_from("PENDING", "0:0"), Some(JobState::Pending));
        assert_eq!(done_from("RUNNING", "0:0"), Some(JobState::Running));
        assert_eq!(
            done_from("FAILED", "1:0"),
            Some(JobState::Done {
                exit_code: Some(1),
                state: "FAILED".into()
            })
        );
        assert_eq!(
            done_from("CANCELLED by 0", "0:15"),
            Some(JobState::Done {
                exit_code: None,
                state: "CANCELLED".into()
            })
        );
    }
}
