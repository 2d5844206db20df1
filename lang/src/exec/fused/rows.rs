//! Row groups (`Step::Rows`, Note [Row groups] in `passes::fuse::rows`): the members run a
//! block of rows at a time, every member on the block before the next block, in parallel over
//! blocks. A member reads the earlier members' outputs for the block's rows (`Line::group`);
//! an output the group keeps local lives in a block-sized buffer of the task, reused from
//! block to block. A scatter the group adds into its last output (`Rows::scatter_add`) is
//! added block by block, after the last member has written the block.

use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use super::{launch_inputs, Binding, GroupRead, Launch, Scratch};
use crate::core::ir::{Atom, Scatter, Stmt, VarId};
use crate::core::kernel::{Reduction, Rows};
use crate::exec::indexing;
use crate::exec::lanes::{match_column, Column, ColumnMut, ColumnRef, LaneElem};
use crate::exec::tensor::Tensor;
use crate::exec::{pool, Exec, Res, PAR_THRESHOLD};
use crate::prim::{Max, Min};

/// Bytes of one member's block of rows the engine aims at: the blocks of a group's members
/// (input, intermediates, output) stay in a core's L2 cache together.
const BLOCK_BYTES: usize = 128 << 10;
/// Blocks per thread at least, so that threads share the work evenly.
const BLOCKS_PER_THREAD: usize = 4;

/// A task's working space: scratch lanes per member, and the local members' buffers.
struct Task {
    scratch: Vec<Scratch>,
    local: Vec<Option<Column>>,
}

/// A scatter added into a row group's last output block by block (`Rows::scatter_add`): its
/// array, the length of the array's rows, their targets, and how many points each index of
/// its first axis has.
pub(super) struct RowScatter {
    source: ScatterSource,
    n_sub: usize,
    targets: indexing::Rows,
    first_axis: usize,
    points_per_index: usize,
}

/// Where a row scatter's array is: a value (row-major), or a member's output, whose block
/// holds the rows of the block's points.
enum ScatterSource {
    Value(Tensor),
    Member(usize),
}

impl RowScatter {
    /// Adds the points whose first index is in `first..first + count` into `out`, which holds
    /// those rows of the target (`row_elems` elements each); `member(m)` is member `m`'s
    /// output for the block.
    fn add_block<'a, T: LaneElem>(
        &self,
        out: &mut [T],
        (first, count, row_elems): (usize, usize, usize),
        member: impl Fn(usize) -> ColumnRef<'a>,
    ) {
        let end = (first + count).min(self.first_axis);
        if first >= end {
            return;
        }
        let points = first * self.points_per_index..end * self.points_per_index;
        let data = match &self.source {
            ScatterSource::Value(tensor) => {
                let values = T::of(tensor)
                    .and_then(|array| array.as_slice())
                    .expect("a scatter adds its own element type, stored row-major");
                &values[points.start * self.n_sub..]
            }
            ScatterSource::Member(index) => T::slice(member(*index)),
        };
        indexing::add_rows_from(
            data,
            self.n_sub,
            &self.targets,
            points,
            out,
            first * row_elems,
        );
    }
}

impl Exec<'_> {
    /// The scatter statement `stmt` ready to be added by rows into the last output of
    /// `rows`: its targets now, its array now or from a member's block.
    pub(super) fn row_scatter(&mut self, stmt: &Stmt, rows: &Rows) -> Res<RowScatter> {
        let Some(Scatter { shape, array, body }) = Scatter::of(&stmt.expr) else {
            unreachable!("fuse adds scatters by rows")
        };
        let array_shape = self.program.atom_ty(array).shape;
        let (n_sub, targets) = self.scatter_targets(shape, &array_shape, *body)?;
        let member = (rows.kernels.iter()).position(|kernel| Atom::Var(kernel.output.0) == *array);
        let source = match member {
            Some(member) => ScatterSource::Member(member),
            None => ScatterSource::Value(self.tensor(array).to_standard_layout()),
        };
        let n_params = self.program.blocks[*body].params.len();
        let grid = &array_shape[..n_params];
        Ok(RowScatter {
            source,
            n_sub,
            targets,
            first_axis: grid[0],
            points_per_index: grid[1..].iter().product(),
        })
    }

    /// Runs a row group (adding `scatter` into its last output); returns the outputs it
    /// materialises.
    pub(super) fn run_rows(
        &self,
        rows: &Rows,
        scatter: Option<&RowScatter>,
    ) -> Res<Vec<(VarId, Tensor)>> {
        let kernels = &rows.kernels;
        let made = rows.made();
        let plans: Vec<_> = (kernels.iter().enumerate())
            .map(|(member, kernel)| {
                let binding = Binding {
                    members: &made[..member],
                    first_merged: Rows::row_axis(kernel) + 1,
                    // Note [Prefetching streams]: measured neutral to slower in row groups.
                    prefetch: false,
                    moves: false,
                };
                self.launch_plan(kernel, binding)
            })
            .collect();
        let inputs: Vec<_> = (plans.iter())
            .map(|plan| launch_inputs(self, plan))
            .collect();
        let launches: Vec<Launch<'_>> = (kernels.iter().zip(plans).zip(&inputs))
            .map(|((kernel, plan), inputs)| Launch::bind(kernel, plan, inputs))
            .collect();
        // Note [Compiled kernels]: members the lanes would sum output by output run
        // compiled, each block from its own output position; a block where a computed
        // coordinate leaves its axis runs on lanes.
        let compiled: Vec<_> = (launches.iter())
            .map(|launch| launch.compiled(self, true))
            .collect();
        let on_lanes: Vec<AtomicBool> = kernels.iter().map(|_| AtomicBool::new(false)).collect();
        let elems: Vec<_> = kernels
            .iter()
            .map(|kernel| kernel.nodes[kernel.output.1].1)
            .collect();
        // Output points per row of each member.
        let row_points: Vec<usize> = kernels
            .iter()
            .map(|kernel| kernel.out_shape()[1..].iter().product())
            .collect();
        let block = block_rows(rows);
        let n_blocks = rows.rows.div_ceil(block);
        let mut outputs: Vec<Option<Column>> = rows
            .local
            .iter()
            .enumerate()
            .map(|(member, &local)| {
                (!local).then(|| pool::take(elems[member], rows.rows * row_points[member]))
            })
            .collect();
        // Each block's part of each materialised output.
        let mut blocks: Vec<Vec<Option<ColumnMut<'_>>>> =
            (0..n_blocks).map(|_| Vec::new()).collect();
        for (member, output) in outputs.iter_mut().enumerate() {
            match output {
                Some(column) => {
                    for (parts, part) in blocks
                        .iter_mut()
                        .zip(column.chunks_mut(block * row_points[member]))
                    {
                        parts.push(Some(part));
                    }
                }
                None => blocks.iter_mut().for_each(|parts| parts.push(None)),
            }
        }
        let new_task = || Task {
            scratch: launches.iter().map(Launch::scratch).collect(),
            local: rows
                .local
                .iter()
                .enumerate()
                .map(|(member, &local)| {
                    local.then(|| Column::with_len(elems[member], block * row_points[member]))
                })
                .collect(),
        };
        let run_block =
            |task: &mut Task, (number, mut parts): (usize, Vec<Option<ColumnMut<'_>>>)| {
                if self.interrupt_requested() {
                    return;
                }
                let first = number * block;
                let count = block.min(rows.rows - first);
                for member in 0..kernels.len() {
                    let (done, rest) = parts.split_at_mut(member);
                    let (done_local, rest_local) = task.local.split_at_mut(member);
                    let group: Vec<GroupRead<'_>> = (0..member)
                        .map(|earlier| GroupRead {
                            data: block_output(
                                &done[earlier],
                                &done_local[earlier],
                                count * row_points[earlier],
                            ),
                            origin: (first * row_points[earlier]) as isize,
                        })
                        .collect();
                    let mut dst = match &mut rest[0] {
                        Some(part) => part.reborrow(),
                        None => rest_local[0]
                            .as_mut()
                            .expect("a local member has a buffer")
                            .as_mut()
                            .prefix(count * row_points[member]),
                    };
                    let launch = &launches[member];
                    let first_output = first * row_points[member];
                    let ran = compiled[member].is_some_and(|compiled| {
                        compiled.run(launch.bases(&group), dst.reborrow(), first_output)
                    });
                    if !ran {
                        on_lanes[member].store(true, Ordering::Relaxed);
                        launch.run_block(&mut task.scratch[member], first, dst, &group, self);
                    }
                }
                if let Some(scatter) = scatter {
                    let (done, last) = parts.split_at_mut(kernels.len() - 1);
                    let member = |index: usize| {
                        block_output(&done[index], &task.local[index], count * row_points[index])
                    };
                    let block = (first, count, row_points[kernels.len() - 1]);
                    let last = last[0]
                        .as_mut()
                        .expect("the group materialises its last output");
                    match_column!(ColumnMut, last.reborrow(), values => {
                        scatter.add_block(values, block, member)
                    });
                }
            };
        let work: usize = kernels
            .iter()
            .map(|kernel| kernel.shape.iter().product::<usize>())
            .sum();
        if work < PAR_THRESHOLD {
            let mut task = new_task();
            blocks
                .into_iter()
                .enumerate()
                .for_each(|block| run_block(&mut task, block));
        } else {
            blocks
                .into_par_iter()
                .enumerate()
                .for_each_init(new_task, run_block);
        }
        if self.interrupt_requested() {
            return Err(crate::ops::interp::InterpError::Interrupted.into());
        }
        let ran_compiled = (compiled.iter().zip(&on_lanes))
            .filter(|(compiled, on_lanes)| compiled.is_some() && !on_lanes.load(Ordering::Relaxed))
            .count();
        (self.compiled_kernels).fetch_add(ran_compiled, Ordering::Relaxed);
        Ok(outputs
            .into_iter()
            .zip(kernels)
            .filter_map(|(output, kernel)| {
                output.map(|column| (kernel.output.0, column.into_tensor(kernel.out_shape())))
            })
            .collect())
    }
}

/// A member's output for the current block (`len` elements): its part of the materialised
/// output, or the task's buffer of a local member.
fn block_output<'a>(
    part: &'a Option<ColumnMut<'_>>,
    local: &'a Option<Column>,
    len: usize,
) -> ColumnRef<'a> {
    match part {
        Some(part) => part.as_ref(),
        None => (local.as_ref())
            .expect("a local member has a buffer")
            .as_ref()
            .run(0, len),
    }
}

/// Rows per block: a member's block of iteration points about `BLOCK_BYTES`, and at least
/// `BLOCKS_PER_THREAD` blocks per thread.
fn block_rows(rows: &Rows) -> usize {
    let row_bytes = rows
        .kernels
        .iter()
        .map(|kernel| {
            let elem = kernel.nodes[kernel.output.1].1;
            kernel.shape.iter().product::<usize>() / rows.rows * elem.bytes()
        })
        .max()
        .unwrap_or(1)
        .max(1);
    let threads = rayon::current_num_threads().max(1);
    (BLOCK_BYTES / row_bytes)
        .min(rows.rows.div_ceil(BLOCKS_PER_THREAD * threads))
        .max(1)
}

impl Launch<'_> {
    /// A row group member over the rows from `first` on that `dst` holds (a block), reading
    /// the earlier members' blocks from `group`. Each output is computed as the kernel alone
    /// computes it: a map along its rows, a reduction along axis 0.
    fn run_block(
        &self,
        scratch: &mut Scratch,
        first: usize,
        dst: ColumnMut<'_>,
        group: &[GroupRead<'_>],
        exec: &Exec<'_>,
    ) {
        // Outputs of a reduction per group row.
        let per_row: usize = self.plan.shape.iter().skip(2).product();
        let in_lines = self.kernel.reduce.is_some() && self.outputs_per_line() > 1;
        macro_rules! select {
            ($values:expr, $ty:ty, $select:ty) => {
                if in_lines {
                    self.reduce_in_lines(scratch, first * per_row, $values, group, |values| {
                        self.line_fold::<$ty, $select>(values)
                    })
                } else {
                    self.reduce_rows(scratch, first, $values, |scratch, output| {
                        self.fold_output::<$ty, $select>(scratch, output, group, exec)
                    })
                }
            };
        }
        match (self.kernel.reduce, dst) {
            // A map over the rows alone: one line along the block's rows.
            (None, dst) if self.plan.shape.len() == 1 => match_column!(ColumnMut, dst, values => {
                self.map_row(scratch, 0, first, values, group)
            }),
            (None, dst) => match_column!(ColumnMut, dst, values => {
                // The rows of the map over the axes before the last, per group row.
                let last = self.plan.shape.len() - 1;
                let per_row: usize = self.plan.shape[1..last].iter().product();
                self.map_rows(scratch, first * per_row, values, group)
            }),
            (Some(Reduction::Sum), dst) if in_lines => match_column!(ColumnMut, dst, values => {
                self.reduce_in_lines(scratch, first * per_row, values, group, |values| {
                    self.line_sum(values)
                })
            }),
            (Some(Reduction::Sum), dst) => match_column!(ColumnMut, dst, values => {
                self.reduce_rows(scratch, first, values, |scratch, output| {
                    self.sum_along(scratch, output, group, exec)
                })
            }),
            (Some(Reduction::Max), ColumnMut::F32(values)) => select!(values, f32, Max),
            (Some(Reduction::Min), ColumnMut::F32(values)) => select!(values, f32, Min),
            (Some(Reduction::Max), ColumnMut::F64(values)) => select!(values, f64, Max),
            (Some(Reduction::Min), ColumnMut::F64(values)) => select!(values, f64, Min),
            (Some(selection), dst) => unreachable!(
                "row groups fold floats only, not {} of {dst:?}",
                selection.name()
            ),
        }
    }

    /// The outputs of a reduction from group row `first` on into `dst`, each `output(scratch,
    /// position)` (a row-major position in the output).
    fn reduce_rows<T: LaneElem>(
        &self,
        scratch: &mut Scratch,
        first: usize,
        dst: &mut [T],
        mut output: impl FnMut(&mut Scratch, usize) -> T,
    ) {
        let per_row: usize = self.plan.shape[2..].iter().product();
        for (offset, slot) in dst.iter_mut().enumerate() {
            *slot = output(scratch, first * per_row + offset);
        }
    }
}
