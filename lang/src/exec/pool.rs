//! Buffers of dead values, kept for the next kernel output of the same type and length
//! ([Shaikhha23] §5.3's destination-passing reuse, at run time).
//!
//! A fresh output buffer costs more than the kernel that fills it when the kernel streams:
//! `vec![0.0; n]` of 16 MB is a page fault per 4 KB page and a memset. The `dx` binary's
//! allocator settings (`repl/src/allocator.rs`) keep freed memory in glibc's heap, yet in the
//! profile of the gradient of a row-wise `logsumexp` over 4096 × 1000 zeroing and faulting
//! in kernel outputs was still a quarter of the time (likely because the engine's thread
//! allocates from a secondary arena, whose memory glibc unmaps when the arena empties;
//! zeroing a reused buffer remains either way). When the engine drops a
//! value after its last reader (`Exec::release`) and it owns its buffer alone, the buffer
//! comes here; `take` hands it to the next kernel output of the same element type and
//! length, which overwrites every element. The session gives back what it drops too: the
//! results of a `%bench` run, a value replaced by a new one of the same name (`give`),
//! and scratch buffers their owner is done with (`give_column`: a monoid scan's tiles).
//! The pool is shared by all runs of the process
//! (a function called again, `%bench`, a training loop) and bounded (`max_bytes`,
//! `MAX_KEPT`); tiny buffers are not kept (`MIN_BYTES`), the allocator serves them well.

use std::collections::VecDeque;
use std::sync::Mutex;

use super::lanes::{Column, LaneElem};
use super::tensor::{with_tensor, Tensor};
use crate::core::ir::Elem;

/// Buffers smaller than this are dropped, not kept. A loop over small tables allocates its
/// outputs at every step: state_sim's two 40 KB outputs a step (10⁴ f32) were zeroed anew by
/// the allocator, with the buffers of the step before just dead.
const MIN_BYTES: usize = 1 << 14;
/// The pool never holds more than this many buffers (the oldest go first), so that finding
/// one stays a short scan.
const MAX_KEPT: usize = 256;
/// The pool never holds more than `max_bytes()`: an eighth of the machine's memory, within
/// these bounds; the oldest buffers go first. A gradient keeps several intermediates of its
/// primal alive (ADBench's GMM: three or four of 256 MB), and every one the pool cannot hold
/// is a fresh allocation in the next run, a page fault per 4 KB.
const MAX_BYTES: (usize, usize) = (1 << 29, 1 << 32);

fn max_bytes() -> usize {
    static BOUND: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BOUND.get_or_init(|| {
        let eighth = super::memory::total().map_or(0, |total| total / 8);
        usize::try_from(eighth)
            .unwrap_or(usize::MAX)
            .clamp(MAX_BYTES.0, MAX_BYTES.1)
    })
}

/// The kept buffers, oldest first.
static FREE: Mutex<VecDeque<Column>> = Mutex::new(VecDeque::new());

/// A buffer of `len` elements of `elem` whose contents are unspecified (a dead value's, or
/// zeros; poison in debug builds, Note [Poisoned buffers]): the caller writes every element.
pub fn take(elem: Elem, len: usize) -> Column {
    let mut column = take_kept(elem, len).unwrap_or_else(|| Column::with_len(elem, len));
    poison(&mut column);
    column
}

// Note [Poisoned buffers]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A buffer from the pool holds a dead value's elements, and the pool is shared by every run
// of the process: a kernel that forgets to write some elements can find the right answer
// there (a test running one program twice did), or zeros in a fresh buffer, which are the
// right answer of every masked read. In debug builds, which the tests use, every buffer
// handed out is first filled with a value no kernel computes by accident (NaN, the largest
// integer, `true`), so a missing write shows in the comparisons against the interpreter.
// Release builds skip the fill: the caller writes every element.

/// Fills `column` with poison in debug builds (Note [Poisoned buffers]).
fn poison(column: &mut Column) {
    if !cfg!(debug_assertions) {
        return;
    }
    match column {
        Column::F32(values) => values.fill(f32::NAN),
        Column::F64(values) => values.fill(f64::NAN),
        Column::I32(values) => values.fill(i32::MAX),
        Column::I64(values) => values.fill(i64::MAX),
        Column::U32(values) => values.fill(u32::MAX),
        Column::U64(values) => values.fill(u64::MAX),
        Column::Bool(values) => values.fill(true),
    }
}

/// A kept buffer of exactly `len` elements of `elem`.
fn take_kept(elem: Elem, len: usize) -> Option<Column> {
    if byte_len(elem, len) < MIN_BYTES {
        return None;
    }
    let mut free = FREE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let position = free
        .iter()
        .rposition(|column| column.elem() == elem && column.len() == len)?;
    free.remove(position)
}

/// A kept buffer of `len` elements of `T` (unspecified contents), if there is one.
pub fn reuse<T: LaneElem>(len: usize) -> Option<Vec<T>> {
    let mut column = take_kept(T::ELEM, len)?;
    poison(&mut column);
    Some(std::mem::take(T::values_mut(&mut column)))
}

/// Keeps the buffer of a value nothing reads any more (an engine value after its last
/// reader, a `%bench` run's result, a session value replaced by a new one of the same
/// name), if it owns it alone and is big enough to be worth keeping.
pub fn give(tensor: Tensor) {
    let elem = tensor.elem();
    let len = with_tensor!(&tensor, array => array.len());
    if byte_len(elem, len) < MIN_BYTES {
        return;
    }
    if let Some(column) = Column::from_unique(tensor) {
        give_column(column);
    }
}

/// Keeps a scratch buffer its owner is done with, if it is big enough to be worth keeping.
pub fn give_column(column: Column) {
    if byte_len(column.elem(), column.len()) >= MIN_BYTES {
        keep(column);
    }
}

fn keep(column: Column) {
    let mut free = FREE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    free.push_back(column);
    let mut held: usize = free
        .iter()
        .map(|column| byte_len(column.elem(), column.len()))
        .sum();
    while held > max_bytes() || free.len() > MAX_KEPT {
        let Some(oldest) = free.pop_front() else {
            break;
        };
        held -= byte_len(oldest.elem(), oldest.len());
    }
}

/// Drops every kept buffer (before a large request is checked against the memory left).
pub fn clear() {
    FREE.lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clear();
}

fn byte_len(elem: Elem, len: usize) -> usize {
    elem.bytes() * len
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::tensor::from_vec;

    #[test]
    fn a_dead_buffer_serves_the_next_output_of_its_type_and_length_only() {
        let n = MIN_BYTES / 4 + 7;
        let values: Vec<f32> = (0..n).map(|i| i as f32).collect();
        let tensor = Tensor::F32(from_vec(&[n], values));
        let address = with_tensor!(&tensor, array => array.as_ptr() as usize);
        // Shared with another value: not kept.
        let other = tensor.clone();
        give(tensor);
        let fresh = take(Elem::F32, n);
        assert_ne!(column_address(&fresh), address);
        // Owned alone: kept, and handed out once, for the same element type and length.
        give(other);
        assert_ne!(column_address(&take(Elem::I32, n)), address);
        assert_ne!(column_address(&take(Elem::F32, n - 1)), address);
        let reused = take(Elem::F32, n);
        assert_eq!(column_address(&reused), address);
        assert_ne!(column_address(&take(Elem::F32, n)), address);
        // The dead value's elements are not handed on where the tests run (Note [Poisoned
        // buffers]): a kernel that skips an element reads poison, not a stale right answer.
        if cfg!(debug_assertions) {
            let Column::F32(values) = &reused else {
                panic!("an f32 buffer")
            };
            assert!(values.iter().all(|value| value.is_nan()));
            assert!(matches!(take(Elem::I64, 3), Column::I64(values) if values == [i64::MAX; 3]));
        }
    }

    fn column_address(column: &Column) -> usize {
        crate::exec::lanes::with_column!(column, values => values.as_ptr() as usize)
    }
}
