//! A `while` whose body works on each lane alone runs a block of lanes at a time, each block
//! through all of its steps (Note [Lanes of a while] in `passes::fuse::lanes`; the body's
//! `Schedule::lanes`).

use ndarray::{Axis, Slice};

use super::lanes::Column;
use super::tensor::{map_tensor, with_tensor, Tensor};
use super::{as_bool, pool, Exec, Res, Slot};
use crate::core::ir::{Atom, VarId};
use crate::core::kernel::{Schedule, Step};

/// Lanes per block at most: the carries, inputs and intermediates of a step of newton's
/// method on 2^17 lanes (about 2 MB) stay in the two cores' L2 caches.
const BLOCK_LANES: usize = 1 << 17;
/// Blocks at least, so that a while of few lanes still runs by blocks.
const MIN_BLOCKS: usize = 4;

impl Exec<'_> {
    /// The while over `lanes` lanes whose body is `schedule`, from `carry`, a block of lanes
    /// at a time: its final carries.
    pub(super) fn run_while_by_lanes(
        &mut self,
        carry: Vec<Slot>,
        schedule: &Schedule,
        lanes: usize,
    ) -> Res<Vec<Tensor>> {
        let inputs = schedule.lane_inputs(self.program, lanes);
        let whole: Vec<Tensor> = (inputs.iter())
            .map(|&var| self.tensor(&Atom::Var(var)))
            .collect();
        let saved: Vec<Option<Slot>> = inputs.iter().map(|&var| self.env[var].take()).collect();
        let carry: Vec<Tensor> = carry.into_iter().map(|slot| slot.tensor).collect();
        let ran = self.run_blocks(&carry, schedule, lanes, (&inputs, &whole));
        for (&var, slot) in inputs.iter().zip(saved) {
            self.env[var] = slot;
        }
        let finals = ran?;
        Ok(finals
            .into_iter()
            .zip(&carry)
            .map(|(column, start)| column.into_tensor(start.shape()))
            .collect())
    }

    fn run_blocks(
        &mut self,
        carry: &[Tensor],
        schedule: &Schedule,
        lanes: usize,
        (inputs, whole): (&[VarId], &[Tensor]),
    ) -> Res<Vec<Column>> {
        let mut finals: Vec<Column> = (carry.iter())
            .map(|start| pool::take(start.elem(), with_tensor!(start, array => array.len())))
            .collect();
        let per_lane: Vec<usize> = (carry.iter())
            .map(|start| start.shape()[1..].iter().product())
            .collect();
        let block = BLOCK_LANES.min(lanes.div_ceil(MIN_BLOCKS)).max(1);
        let full = with_lanes(schedule, lanes, block);
        let last = with_lanes(schedule, lanes, lanes - (lanes - 1) / block * block);
        for first in (0..lanes).step_by(block) {
            let len = block.min(lanes - first);
            let schedule = if len == block { &full } else { &last };
            for (&var, tensor) in inputs.iter().zip(whole) {
                self.env[var] = Some(Slot::plain(rows_of(tensor, first, len)));
            }
            let mut state: Vec<Slot> = (carry.iter())
                .map(|start| Slot::plain(rows_of(start, first, len)))
                .collect();
            loop {
                self.check_interrupt()?;
                let mut results = self.run_schedule(schedule, state, false)?;
                let go = as_bool(&results.remove(0).tensor);
                state = results;
                if !go {
                    break;
                }
            }
            for ((column, slot), per_lane) in finals.iter_mut().zip(&state).zip(&per_lane) {
                column.write_at(first * per_lane, &slot.tensor);
            }
        }
        Ok(finals)
    }
}

/// Rows `first..first + len` of `tensor`'s axis 0, as a value of its own.
fn rows_of(tensor: &Tensor, first: usize, len: usize) -> Tensor {
    map_tensor!(tensor, array => array
        .slice_axis(Axis(0), Slice::from(first..first + len))
        .to_owned()
        .into_shared())
}

/// `schedule` with its iteration over `lanes` lanes (axis 0 of its kernels and row groups)
/// made one over `len`.
fn with_lanes(schedule: &Schedule, lanes: usize, len: usize) -> Schedule {
    let mut resized = schedule.clone();
    let resize = |shape: &mut Vec<usize>| {
        if shape.first() == Some(&lanes) {
            shape[0] = len;
        }
    };
    for step in &mut resized.steps {
        match step {
            Step::Kernel(kernel) => resize(&mut kernel.shape),
            Step::Rows(rows) => {
                if rows.rows == lanes {
                    rows.rows = len;
                }
                rows.kernels
                    .iter_mut()
                    .for_each(|kernel| resize(&mut kernel.shape));
            }
            _ => {}
        }
    }
    resized
}
