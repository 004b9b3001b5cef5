//! Shared by the benches: percentiles, CPU time, peak memory, a scripted-run fixture.
#![allow(clippy::unwrap_used, clippy::expect_used)]
#![allow(dead_code)]
use std::path::Path;
use std::time::Duration;

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// p50 / p99 / max of `samples`, one line.
pub fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{name:<48} p50 {:>9.3} ms   p99 {:>9.3} ms   max {:>9.3} ms   (n={})",
        ms(percentile(&samples, 0.5)),
        ms(percentile(&samples, 0.99)),
        ms(samples.last().copied().unwrap_or_default()),
        samples.len()
    );
}

/// User + system CPU time of this process so far (getrusage).
pub fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// A field of /proc/self/status in KiB (`VmHWM` peak RSS, `VmRSS` current).
pub fn status_kib(field: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub fn write_json(path: &Path, v: &serde_json::Value) -> String {
    std::fs::write(path, v.to_string()).expect("write script");
    format!("scripted:{}", path.display())
}

pub fn tokio() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio")
}
