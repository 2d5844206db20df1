//! Keeps the buffers of freed tables in the process for the next block to reuse.
//!
//! glibc serves large allocations with fresh `mmap`s and unmaps them when they are freed, so
//! every run of a block that makes a large table pays first-touch page faults on all of it:
//! measured with `%bench` on this project's machine, the gradient of a sum of squares over
//! 10⁶ Float32 (a new 4 MB table per run) took 8.1 ms with glibc's defaults and 1.2 ms with
//! large allocations served from the heap and freed memory kept (docs/performance.md).
//! Up to `KEEP_BYTES` of freed memory stays with the process; allocations above it are still
//! `mmap`ed and returned on free. Elsewhere than glibc this does nothing.

/// Allocations below this come from the heap, and this much freed memory is kept.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const KEEP_BYTES: libc::c_int = 1 << 30;

/// Sets glibc's thresholds (best effort: an older glibc may refuse a value, and then keeps
/// its default).
pub fn keep_freed_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets allocator parameters; it is called before any other thread
    // exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, KEEP_BYTES);
        libc::mallopt(libc::M_TRIM_THRESHOLD, KEEP_BYTES);
    }
}
