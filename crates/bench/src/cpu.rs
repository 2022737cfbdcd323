//! The proxy's CPU and memory, sampled from /proc while a run goes on, and the arithmetic that
//! turns samples into max %, mean %, CPU microseconds per query and peak RSS.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One reading of a process: CPU time used so far (user + system, in clock ticks) and RSS.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Seconds since the sampler started.
    pub at: f64,
    pub cpu_ticks: u64,
    pub rss_kb: u64,
}

/// What a run's samples say about the process.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuSummary {
    /// Highest CPU % over one sampling interval (100 = one full core).
    pub max_pct: f64,
    /// CPU % over the whole measured window.
    pub mean_pct: f64,
    /// CPU microseconds per query over the measured window.
    pub us_per_query: f64,
    /// Highest RSS seen, in kB.
    pub peak_rss_kb: u64,
}

/// utime + stime (fields 14 and 15) of a `/proc/<pid>/stat` line. The command name (field 2)
/// may contain spaces and parentheses, so fields are counted after its closing parenthesis.
pub fn parse_stat_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    // after_name starts at field 3 (state); utime is field 14, i.e. the 12th from here.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// `VmRSS` of a `/proc/<pid>/status` text, in kB.
pub fn parse_status_rss_kb(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Summarises samples taken every so often during a run that completed `queries` queries.
/// Samples before `skip_until` seconds (a warm-up) are left out of the window.
pub fn summarize(samples: &[Sample], ticks_per_sec: f64, queries: u64, skip_until: f64) -> Option<CpuSummary> {
    let window: Vec<&Sample> = samples.iter().filter(|s| s.at >= skip_until).collect();
    let (first, last) = (window.first()?, window.last()?);
    let span = last.at - first.at;
    if span <= 0.0 || ticks_per_sec <= 0.0 {
        return None;
    }
    let cpu_secs = |a: &Sample, b: &Sample| b.cpu_ticks.saturating_sub(a.cpu_ticks) as f64 / ticks_per_sec;
    let max_pct = window
        .windows(2)
        .filter(|w| w[1].at > w[0].at)
        .map(|w| 100.0 * cpu_secs(w[0], w[1]) / (w[1].at - w[0].at))
        .fold(0.0, f64::max);
    let total = cpu_secs(first, last);
    let us_per_query = if queries == 0 {
        0.0
    } else {
        total * 1e6 / queries as f64
    };
    Some(CpuSummary {
        max_pct,
        mean_pct: 100.0 * total / span,
        us_per_query,
        peak_rss_kb: samples.iter().map(|s| s.rss_kb).max().unwrap_or(0),
    })
}

/// Clock ticks per second (`getconf CLK_TCK`).
pub fn ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

/// Reads one sample of `pid`, or None when the process is gone.
pub fn read_sample(pid: u32, at: f64) -> Option<Sample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(Sample {
        at,
        cpu_ticks: parse_stat_ticks(&stat)?,
        rss_kb: parse_status_rss_kb(&status).unwrap_or(0),
    })
}

/// A background thread sampling one process every `interval` until stopped.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<Vec<Sample>>,
}

impl Sampler {
    /// Starts sampling `pid` now.
    pub fn start(pid: u32, interval: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let started = Instant::now();
            let mut samples = Vec::new();
            loop {
                let at = started.elapsed().as_secs_f64();
                if let Some(s) = read_sample(pid, at) {
                    samples.push(s);
                }
                if flag.load(Ordering::Relaxed) {
                    return samples;
                }
                sleep_unless_stopped(&flag, interval);
            }
        });
        Sampler { stop, handle }
    }

    /// Takes a last sample and returns them all.
    pub fn finish(self) -> Vec<Sample> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().unwrap_or_default()
    }
}

/// Sleeps `total` in small steps so that a stop request ends the sleep early.
fn sleep_unless_stopped(flag: &AtomicBool, total: Duration) {
    let step = Duration::from_millis(20);
    let until = Instant::now() + total;
    while Instant::now() < until && !flag.load(Ordering::Relaxed) {
        std::thread::sleep(step.min(until.saturating_duration_since(Instant::now())));
    }
}

/// The whole machine's CPU time from `/proc/stat`'s `cpu` line, in ticks.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MachineTicks {
    pub busy: u64,
    pub total: u64,
}

/// `cpu  user nice system idle iowait irq softirq steal ...`: idle and iowait are not busy.
pub fn parse_machine_ticks(stat: &str) -> Option<MachineTicks> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let total: u64 = fields.iter().sum();
    let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
    Some(MachineTicks {
        busy: total.saturating_sub(idle),
        total,
    })
}

/// The machine's CPU ticks now (None where /proc/stat cannot be read).
pub fn machine_ticks() -> Option<MachineTicks> {
    parse_machine_ticks(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// Percent of all cores busy between two readings (100 = every core busy).
pub fn machine_busy_pct(before: MachineTicks, after: MachineTicks) -> Option<f64> {
    let total = after.total.checked_sub(before.total)?;
    let busy = after.busy.checked_sub(before.busy)?;
    (total > 0).then(|| 100.0 * busy as f64 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_busy_leaves_out_idle_and_iowait() {
        let before = parse_machine_ticks("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n").unwrap();
        assert_eq!(before, MachineTicks { busy: 200, total: 1000 });
        let after = parse_machine_ticks("cpu  250 0 150 800 100 0 0 0 0 0\n").unwrap();
        assert_eq!(machine_busy_pct(before, after), Some(100.0 * 200.0 / 300.0));
        assert_eq!(machine_busy_pct(after, before), None);
        assert_eq!(parse_machine_ticks("intr 1 2 3\n"), None);
    }

    fn s(at: f64, cpu_ticks: u64, rss_kb: u64) -> Sample {
        Sample { at, cpu_ticks, rss_kb }
    }

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let stat = "4242 (tessera (w) 1) S 1 4242 4242 0 -1 4194560 1085 0 0 0 1234 567 0 0 20 0 3 0 99 0 0";
        assert_eq!(parse_stat_ticks(stat), Some(1234 + 567));
        assert_eq!(parse_stat_ticks("garbage"), None);
        assert_eq!(parse_stat_ticks("1 (x) S 1 2"), None);
    }

    #[test]
    fn rss_comes_from_vmrss() {
        let status = "Name:\ttessera\nVmHWM:\t  30000 kB\nVmRSS:\t   20428 kB\nThreads:\t2\n";
        assert_eq!(parse_status_rss_kb(status), Some(20428));
        assert_eq!(parse_status_rss_kb("Name: x\n"), None);
    }

    #[test]
    fn summary_arithmetic() {
        // 100 ticks/s. 0-1 s: 50 ticks (50%); 1-2 s: 150 ticks (150%, two cores); 2-3 s: 100 ticks.
        let samples = [s(0.0, 1000, 10), s(1.0, 1050, 30), s(2.0, 1200, 20), s(3.0, 1300, 25)];
        let sum = summarize(&samples, 100.0, 30_000, 0.0).unwrap();
        assert!((sum.max_pct - 150.0).abs() < 1e-9, "{sum:?}");
        assert!((sum.mean_pct - 100.0).abs() < 1e-9, "{sum:?}");
        // 3 CPU seconds over 30,000 queries = 100 us each.
        assert!((sum.us_per_query - 100.0).abs() < 1e-9, "{sum:?}");
        assert_eq!(sum.peak_rss_kb, 30);
    }

    #[test]
    fn warm_up_samples_are_left_out_of_the_window() {
        let samples = [s(0.0, 0, 1), s(1.0, 500, 1), s(2.0, 550, 1), s(3.0, 600, 1)];
        let sum = summarize(&samples, 100.0, 1000, 1.0).unwrap();
        assert!((sum.mean_pct - 50.0).abs() < 1e-9, "{sum:?}");
        assert!((sum.max_pct - 50.0).abs() < 1e-9, "{sum:?}");
        assert!((sum.us_per_query - 1000.0).abs() < 1e-9, "{sum:?}");
    }

    #[test]
    fn too_few_samples_give_no_summary() {
        assert_eq!(summarize(&[], 100.0, 10, 0.0), None);
        assert_eq!(summarize(&[s(1.0, 5, 1)], 100.0, 10, 0.0), None);
        let zero_queries = summarize(&[s(0.0, 0, 1), s(1.0, 10, 1)], 100.0, 0, 0.0).unwrap();
        assert_eq!(zero_queries.us_per_query, 0.0);
    }

    #[test]
    fn sampling_this_process_sees_cpu_and_memory() {
        let sampler = Sampler::start(std::process::id(), Duration::from_millis(50));
        let until = Instant::now() + Duration::from_millis(300);
        let mut x = 0u64;
        while Instant::now() < until {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let samples = sampler.finish();
        assert!(samples.len() >= 3, "{samples:?}");
        let sum = summarize(&samples, ticks_per_sec(), 1, 0.0).unwrap();
        assert!(sum.mean_pct > 0.0 && sum.peak_rss_kb > 0, "{sum:?}");
    }
}
