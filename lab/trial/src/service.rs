//! `--service CMD --load CMD`: a server in the memory-limited cgroup and its
//! load generator outside it (the client must not be throttled by the limit
//! it measures).
//!
//! A run: the service starts in the run's cgroup (its own process group,
//! `sh -c CMD`); zmem waits until it is ready (`--ready tcp:PORT`: a
//! connection to 127.0.0.1:PORT is accepted; `unix:PATH`: a connection to
//! the socket; `line:REGEX`: a line of its standard output matches), at most
//! `--ready-timeout`; then runs `--fill` (if given) and `--load`, each
//! outside the cgroup in a process group of its own with `ZMEM_METRICS` set;
//! the load's standard output goes to the readers. The run's wall time is
//! the load's. Then the service's process group gets SIGTERM, after 5 s
//! SIGKILL, and the cgroup's removal kills whatever it started that is
//! left. If the service exits before it is ready, or while the fill or the
//! load runs, the run fails (`service failed: …`), the fill or load is
//! killed (its process group), and nothing is left behind; the same on
//! Ctrl-C/SIGTERM (`interrupted`).

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::measure::{
    close_pidfd, finish, outcome, pidfd_open, poll_pidfd, sampler, workload_command, Before,
    Captured, Ended, Outcome, RunEnv, RunRecord, Running, Sampler, ServiceTimes,
};

/// How long the service has to stop after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// When the service is ready.
#[derive(Debug, Clone)]
pub enum Ready {
    /// A TCP connection to 127.0.0.1:PORT is accepted.
    Tcp(u16),
    /// A connection to this unix socket is accepted.
    Unix(PathBuf),
    /// A line of its standard output matches.
    Line(regex::Regex),
}

impl FromStr for Ready {
    type Err = String;

    fn from_str(s: &str) -> Result<Ready, String> {
        let bad = || format!("--ready {s:?}: tcp:PORT, unix:PATH or line:REGEX");
        match s.split_once(':').ok_or_else(bad)? {
            ("tcp", p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .map(Ready::Tcp)
                .ok_or_else(bad),
            ("unix", p) if p.starts_with('/') => Ok(Ready::Unix(p.into())),
            ("line", r) if !r.is_empty() => regex::Regex::new(r)
                .map(Ready::Line)
                .map_err(|e| format!("--ready line:{r}: {e}")),
            _ => Err(bad()),
        }
    }
}

/// A service, how to know it is ready, and its load.
#[derive(Debug, Clone)]
pub struct ServiceSpec {
    /// Shell command line of the service (runs in the cgroup).
    pub service: String,
    pub ready: Ready,
    pub ready_timeout: Duration,
    /// Shell command line run once it is ready, before the load (outside).
    pub fill: Option<String>,
    /// Shell command line of the load generator (outside).
    pub load: String,
}

fn sh(line: &str) -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), line.into()]
}

/// Whether the service answers as `ready` asks; `line` is its output so far.
fn is_ready(ready: &Ready, out: Option<&Captured>) -> bool {
    match ready {
        Ready::Tcp(port) => {
            let a = SocketAddrV4::new(Ipv4Addr::LOCALHOST, *port);
            TcpStream::connect_timeout(&a.into(), Duration::from_millis(200)).is_ok()
        }
        Ready::Unix(p) => UnixStream::connect(p).is_ok(),
        Ready::Line(re) => out.is_some_and(|c| c.peek().lines().any(|l| re.is_match(l))),
    }
}

/// What happened while zmem waited.
enum Waited {
    Done,
    /// The command (fill or load) ended with this wait status.
    Exited(i32, libc::rusage),
    ServiceDied(i32),
    TimedOut,
    Interrupted,
}

/// The service and what watches it.
struct Watch<'a, 'e> {
    env: &'a RunEnv<'e>,
    service: Running,
    pidfd: Option<i32>,
    sampler: Sampler<'e>,
    /// The service's rusage, once it was reaped.
    ended: Option<libc::rusage>,
}

impl Watch<'_, '_> {
    /// Wait for `cmd` to exit (or, without one, for `ready`), watching the
    /// service, the stop flag and `deadline`.
    fn wait(
        &mut self,
        mut cmd: Option<&mut Running>,
        ready: Option<(&Ready, Option<&Captured>)>,
        deadline: Option<Instant>,
    ) -> io::Result<Waited> {
        loop {
            if let Some(c) = cmd.as_deref_mut() {
                if c.exited() {
                    // Its leader is a zombie still: the group id cannot have
                    // been reused, so what it left running goes too.
                    c.signal(libc::SIGKILL);
                    if let Some((status, ru)) = c.wait(true)? {
                        return Ok(Waited::Exited(status, ru));
                    }
                }
            }
            if let Some((status, ru)) = self.service.wait(false)? {
                self.ended = Some(ru);
                return Ok(Waited::ServiceDied(status));
            }
            if self.env.stop.load(Ordering::SeqCst) {
                return Ok(Waited::Interrupted);
            }
            if ready.is_some_and(|(r, out)| is_ready(r, out)) {
                return Ok(Waited::Done);
            }
            if deadline.is_some_and(|d| Instant::now() > d) {
                return Ok(Waited::TimedOut);
            }
            self.sampler.sample();
            if let Some(f) = self.env.observe {
                f(self.env.cgroup);
            }
            poll_pidfd(self.pidfd, 50);
        }
    }

    /// SIGTERM to the service's process group, SIGKILL after the grace;
    /// its rusage once reaped.
    fn stop(&mut self) -> io::Result<libc::rusage> {
        if let Some(ru) = self.ended {
            return Ok(ru);
        }
        self.service.signal(libc::SIGTERM);
        let until = Instant::now() + STOP_GRACE;
        loop {
            if let Some((_, ru)) = self.service.wait(false)? {
                return Ok(ru);
            }
            if Instant::now() > until {
                self.service.kill();
                return Ok(self.service.wait(true)?.map_or_else(zero_rusage, |r| r.1));
            }
            poll_pidfd(self.pidfd, 50);
        }
    }
}

fn zero_rusage() -> libc::rusage {
    // SAFETY: rusage is plain old data, all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

fn status_text(status: i32) -> String {
    if libc::WIFEXITED(status) {
        format!("exit {}", libc::WEXITSTATUS(status))
    } else {
        format!("signal {}", libc::WTERMSIG(status))
    }
}

/// Start one of the outside commands (fill or load): its own process group,
/// `ZMEM_METRICS` set, not in the cgroup.
fn start_outside(line: &str, env: &RunEnv<'_>) -> io::Result<(Running, Option<Captured>)> {
    let argv = sh(line);
    let mut cmd = workload_command(&argv, None, env.metrics)?;
    Running::spawn(&mut cmd, &argv[0])
}

/// A failure of the service (or the fill) as the run's outcome.
fn failed(why: String) -> Outcome {
    Outcome::ServiceFailed { error: why }
}

/// One run of the service and its load in `env`, measured.
pub(crate) fn run_service(
    spec: &ServiceSpec,
    config: &str,
    round: u32,
    env: &RunEnv<'_>,
) -> io::Result<RunRecord> {
    let mut cmd = workload_command(&sh(&spec.service), Some(env.cgroup), None)?;
    let before = Before::read(env)?;
    let started = Instant::now();
    let (service, service_out) = Running::spawn(&mut cmd, "the service")?;
    let mut w = Watch {
        env,
        pidfd: pidfd_open(service.pid),
        service,
        sampler: sampler(env),
        ended: None,
    };
    let (outcome, times, load) = phases(spec, &mut w, service_out.as_ref(), started)?;
    let ru = w.stop()?;
    close_pidfd(w.pidfd);
    let kills = env.cgroup.oom_kills().saturating_sub(before.oom);
    let outcome = match outcome {
        Outcome::Interrupted => Outcome::Interrupted,
        _ if kills > 0 => Outcome::OomKilled { kills },
        o => o,
    };
    let (wall, stdout) = load.map_or((0.0, None), |l| (l.0, l.1));
    let ended = Ended {
        interrupted: outcome == Outcome::Interrupted,
        status: 0,
        ru,
        wall,
        stdout,
    };
    let mut r = finish((config, round, outcome), env, before, &w.sampler, ended)?;
    r.service = times;
    Ok(r)
}

/// The load's wall time and output.
type LoadRan = Option<(f64, Option<Captured>)>;

/// Ready, fill, load: the outcome, the phases' times, and the load's run.
fn phases(
    spec: &ServiceSpec,
    w: &mut Watch<'_, '_>,
    service_out: Option<&Captured>,
    started: Instant,
) -> io::Result<(Outcome, Option<ServiceTimes>, LoadRan)> {
    let deadline = started + spec.ready_timeout;
    match w.wait(None, Some((&spec.ready, service_out)), Some(deadline))? {
        Waited::Done => {}
        Waited::Interrupted => return Ok((Outcome::Interrupted, None, None)),
        Waited::ServiceDied(st) => {
            let why = format!("it ended ({}) before it was ready", status_text(st));
            return Ok((failed(why), None, None));
        }
        _ => {
            let why = format!("not ready after {} s", spec.ready_timeout.as_secs());
            return Ok((failed(why), None, None));
        }
    }
    let mut times = ServiceTimes {
        ready_s: started.elapsed().as_secs_f64(),
        fill_s: None,
    };
    if let Some(fill) = &spec.fill {
        let t = Instant::now();
        let (o, _) = outside(w, fill, "the fill")?;
        times.fill_s = Some(t.elapsed().as_secs_f64());
        if let Some(o) = o {
            return Ok((o, Some(times), None));
        }
    }
    let t = Instant::now();
    let (o, out) = outside(w, &spec.load, "the load")?;
    let wall = t.elapsed().as_secs_f64();
    Ok((
        o.unwrap_or(Outcome::Exited { code: 0 }),
        Some(times),
        Some((wall, out)),
    ))
}

/// Run an outside command to its end while watching the service: `None`
/// when it exited 0, else the run's outcome (its exit, or the service's
/// death: then it is killed).
fn outside(
    w: &mut Watch<'_, '_>,
    line: &str,
    what: &str,
) -> io::Result<(Option<Outcome>, Option<Captured>)> {
    let (mut c, out) = start_outside(line, w.env)?;
    let o = match w.wait(Some(&mut c), None, None)? {
        Waited::Exited(st, _ru) => match outcome(false, 0, st) {
            Outcome::Exited { code: 0 } => None,
            o if what == "the load" => Some(o),
            _ => Some(failed(format!("{what} ended with {}", status_text(st)))),
        },
        Waited::ServiceDied(st) => Some(failed(format!(
            "it ended ({}) while {what} ran",
            status_text(st)
        ))),
        Waited::Interrupted | Waited::TimedOut | Waited::Done => Some(Outcome::Interrupted),
    };
    // Whatever it started goes with it (Running's drop kills and reaps the group).
    c.kill();
    drop(c);
    Ok((o, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_specs() {
        assert!(matches!("tcp:6379".parse::<Ready>(), Ok(Ready::Tcp(6379))));
        assert!(matches!(
            "unix:/run/x.sock".parse::<Ready>(),
            Ok(Ready::Unix(_))
        ));
        let Ok(Ready::Line(re)) = "line:Ready to accept".parse::<Ready>() else {
            panic!()
        };
        assert!(re.is_match("1:M 29 Nov * Ready to accept connections tcp"));
        for bad in [
            "tcp:0", "tcp:x", "unix:rel", "line:", "line:(", "http:80", "6379",
        ] {
            assert!(bad.parse::<Ready>().is_err(), "{bad}");
        }
    }
}
