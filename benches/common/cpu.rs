//! The process's CPU time, for benches that report CPU per message.

use std::time::Duration;

/// The process's CPU time, read from `/proc/self/stat`.
///
/// `getrusage(RUSAGE_SELF)` would give the same numbers at finer resolution (both come
/// from the kernel's per-process accounting, which counts every thread, exited ones too),
/// but calling it takes `unsafe`, which the workspace forbids for every target. Clock ticks
/// (10 ms) are fine against the seconds of CPU a run takes.
pub struct CpuClock {
    ticks_per_second: f64,
}

#[derive(Clone, Copy)]
pub struct Cpu {
    /// User time.
    pub user: Duration,
    /// System time.
    pub system: Duration,
}

impl CpuClock {
    pub fn new() -> CpuClock {
        let ticks = std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|output| String::from_utf8(output.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            // USER_HZ is 100 on every architecture Linux runs herald on.
            .unwrap_or(100.0);
        CpuClock {
            ticks_per_second: ticks,
        }
    }

    pub fn now(&self) -> Cpu {
        let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
        // The command name in parentheses may hold spaces; the fields after it do not.
        // `utime` and `stime` are fields 14 and 15, the 12th and 13th after the name.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .expect("stat has a command name")
            .1
            .split_whitespace()
            .collect();
        let ticks = |i: usize| fields[i].parse::<f64>().expect("CPU ticks") / self.ticks_per_second;
        Cpu {
            user: Duration::from_secs_f64(ticks(11)),
            system: Duration::from_secs_f64(ticks(12)),
        }
    }
}

impl Cpu {
    pub fn since(self, earlier: Cpu) -> Cpu {
        Cpu {
            user: self.user - earlier.user,
            system: self.system - earlier.system,
        }
    }
}
