//! What the machine's memory is, as `/proc/meminfo` reports it (Linux; elsewhere nothing is
//! known and every answer is "no limit").

/// The memory the system can give (`MemAvailable` plus free swap): a request beyond it is
/// refused before it is made (`fused::check_size`).
pub fn available() -> u64 {
    let Some(text) = meminfo() else {
        return u64::MAX;
    };
    match field(&text, "MemAvailable:") {
        Some(available) => available + field(&text, "SwapFree:").unwrap_or(0),
        None => u64::MAX,
    }
}

/// The machine's physical memory (`MemTotal`), if known.
pub fn total() -> Option<u64> {
    field(&meminfo()?, "MemTotal:")
}

fn meminfo() -> Option<String> {
    std::fs::read_to_string("/proc/meminfo").ok()
}

/// A `name: <n> kB` line of `/proc/meminfo`, in bytes.
fn field(text: &str, name: &str) -> Option<u64> {
    let line = text.lines().find(|line| line.starts_with(name))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_fields_are_read_in_bytes() {
        let text = "MemTotal:       24576000 kB\nMemFree:  12 kB\nMemAvailable:   1000 kB\n";
        assert_eq!(field(text, "MemTotal:"), Some(24576000 * 1024));
        assert_eq!(field(text, "MemAvailable:"), Some(1000 * 1024));
        assert_eq!(field(text, "SwapFree:"), None);
        if cfg!(target_os = "linux") {
            let total = total().expect("Linux reports MemTotal");
            assert!(available() > 0 && total > 0);
        }
    }
}
