//! The memory figures of a process on this machine, from `/proc/PID/status` (Linux).

/// A `kB` field of `/proc/PID/status` (`VmRSS:`, `VmHWM:`, …), in KiB.
pub(crate) fn kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    parse_kib(&status, field)
}

fn parse_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_read_in_kib() {
        let status = "Name:\trummy\nVmHWM:\t  500000 kB\nVmRSS:\t   12976 kB\nThreads:\t5\n";
        assert_eq!(parse_kib(status, "VmRSS:"), Some(12_976));
        assert_eq!(parse_kib(status, "VmHWM:"), Some(500_000));
        assert_eq!(parse_kib("Name:\trummy\n", "VmRSS:"), None);
    }
}
