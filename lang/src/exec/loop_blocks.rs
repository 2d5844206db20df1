//! The carry-free part of a scalar loop body, run a block of iterations at a time.
//!
//! In `fold(0.0, \i c. c + exp (n_to_f (ordinal i) * 0.1))` only the `add` depends on the
//! carry; the cast, the product and the `exp` depend on the index alone. Run one iteration at
//! a time they cost tens of nanoseconds of scalar latency a step; computed for a block of up
//! to `LINE` iterations at once on lanes (`exec/lanes.rs`: the kernels' vectorised loops,
//! with `prim`'s rules, so the same bits), they cost about a nanosecond. Each step then runs
//! only the carried operations (`RegisterCode::run_carried`) after importing the free values
//! they read from the block's lanes.
//!
//! Used only where reads out of range give zero: in strict mode the error must be the first
//! out-of-range read in iteration order, which reading ahead for a block would change.

use crate::core::ir::Scalar;
use crate::ops::scalar_code::{Op, Operand};
use crate::prim::Prim;

use super::lanes::{with_operands, Lane, LaneElem, LaneRef, LINE};
use super::register_code::{Bits, RegisterCode, Side, Table};
use super::tensor::with_elem_type;

/// Loops with fewer iterations run one step at a time: a block's lanes cost more to set up
/// than the steps save.
pub(super) const MIN_ITERATIONS: usize = 256;

/// Where a free operation's operand comes from.
#[derive(Clone, Copy, Debug)]
enum Src {
    /// The lane of a register.
    Lane(usize),
    /// `consts[k]`, a splat.
    Const(usize),
}

/// An operation computed for a whole block.
#[derive(Clone, Debug)]
enum FreeOp {
    Prim {
        dst: usize,
        prim: Prim,
        args: Vec<Src>,
    },
    Read {
        dst: usize,
        table: usize,
        index: Vec<Src>,
        gather: Gather,
    },
}

/// Reads `table` at the index lanes into a lane, for the first `len` points.
type Gather = fn(&Table, &[LaneRef], &mut Lane, usize);

/// Writes the bits of a lane's values at the first `bits.len()` points into `bits`.
type Import = fn(&Lane, &mut [u64]);

/// How to run a loop body a block at a time.
pub(super) struct BlockPlan {
    ops: Vec<FreeOp>,
    /// Per register of the code: where its values are, if it is free (a free copy's are
    /// its source's).
    lane_of: Vec<Option<Src>>,
    consts: Vec<Scalar>,
    /// The free registers the carried operations and the results read, each with its values.
    imports: Vec<(usize, Src, Import)>,
}

/// The lanes of one run.
pub(super) struct BlockLanes {
    /// Per register; `None` for registers without a lane of their own.
    lanes: Vec<Option<Lane>>,
    consts: Vec<Lane>,
    /// Per import, its values at each point of the block, as register bits.
    imported: Vec<Vec<u64>>,
}

impl BlockPlan {
    /// A plan for `body`, or `None` if it has nothing worth computing a block at a time (no
    /// free primitive or read).
    pub fn new(body: &RegisterCode) -> Option<BlockPlan> {
        let code = &body.code;
        let n_regs = code.reg_elems.len();
        let mut lane_of: Vec<Option<Src>> = vec![None; n_regs];
        // The index and the outer scalars are free; the carries are not.
        lane_of[code.params[0]] = Some(Src::Lane(code.params[0]));
        for (_, reg) in &code.outer_scalars {
            lane_of[*reg] = Some(Src::Lane(*reg));
        }
        let mut consts = Vec::new();
        let mut ops = Vec::new();
        for op in code.ops.iter().filter(|op| !body.carried[op.dst()]) {
            let mut src = |operand: &Operand| -> Option<Src> {
                match operand {
                    Operand::Reg(reg) => lane_of[*reg],
                    Operand::Const(scalar) => {
                        consts.push(*scalar);
                        Some(Src::Const(consts.len() - 1))
                    }
                }
            };
            let srcs = op
                .operands()
                .iter()
                .map(&mut src)
                .collect::<Option<Vec<_>>>()?;
            // Operations run in register order, each writing a lane after those it reads.
            if srcs
                .iter()
                .any(|src| matches!(src, Src::Lane(lane) if *lane >= op.dst()))
            {
                return None;
            }
            let dst = op.dst();
            lane_of[dst] = Some(match op {
                Op::Copy { .. } => srcs[0],
                Op::Prim { prim, .. } => {
                    ops.push(FreeOp::Prim {
                        dst,
                        prim: *prim,
                        args: srcs,
                    });
                    Src::Lane(dst)
                }
                Op::Read { table, elem, .. } => {
                    ops.push(FreeOp::Read {
                        dst,
                        table: *table,
                        index: srcs,
                        gather: with_elem_type!(elem, T => gather::<T> as Gather),
                    });
                    Src::Lane(dst)
                }
            });
        }
        if ops.is_empty() {
            return None;
        }
        let mut imports = Vec::new();
        let carried_reads = code
            .ops
            .iter()
            .filter(|op| body.carried[op.dst()])
            .flat_map(|op| op.operands())
            .chain(&code.results)
            .filter_map(|operand| match operand {
                Operand::Reg(reg) => Some(*reg),
                Operand::Const(_) => None,
            });
        let outer: Vec<usize> = code.outer_scalars.iter().map(|(_, reg)| *reg).collect();
        for reg in carried_reads {
            // Outer scalars are in the registers already; carried registers have no lane.
            let Some(src) = lane_of[reg] else { continue };
            let imported = imports.iter().any(|(imported, _, _)| *imported == reg);
            if !imported && !outer.contains(&reg) {
                let elem = code.reg_elems[reg];
                imports.push((reg, src, with_elem_type!(elem, T => import::<T> as Import)));
            }
        }
        Some(BlockPlan {
            ops,
            lane_of,
            consts,
            imports,
        })
    }

    /// Lanes for a run of `body`, the outer scalars set to `outer_scalars`.
    pub fn lanes(&self, body: &RegisterCode, outer_scalars: &[Scalar]) -> BlockLanes {
        let code = &body.code;
        let mut lanes: Vec<Option<Lane>> = (0..code.reg_elems.len())
            .map(|reg| {
                matches!(self.lane_of[reg], Some(Src::Lane(lane)) if lane == reg)
                    .then(|| Lane::new(code.reg_elems[reg]))
            })
            .collect();
        for ((_, reg), value) in code.outer_scalars.iter().zip(outer_scalars) {
            let lane = lanes[*reg].as_mut().expect("outer scalars have lanes");
            lane.column.set(0, *value);
        }
        let consts = self
            .consts
            .iter()
            .map(|value| {
                let mut lane = Lane::new(value.elem());
                lane.column.set(0, *value);
                lane
            })
            .collect();
        BlockLanes {
            lanes,
            consts,
            imported: vec![vec![0; LINE]; self.imports.len()],
        }
    }

    /// Computes the free operations for iterations `base..base + len` (`len <= LINE`).
    pub fn compute(
        &self,
        body: &RegisterCode,
        lanes: &mut BlockLanes,
        side: &Side,
        base: usize,
        len: usize,
    ) {
        debug_assert!(len <= LINE);
        let index = lanes.lanes[body.code.params[0]]
            .as_mut()
            .expect("the index has a lane");
        index.splat = false;
        for (k, value) in i64::values_mut(&mut index.column)[..len]
            .iter_mut()
            .enumerate()
        {
            *value = (base + k) as i64;
        }
        for op in &self.ops {
            let (dst, srcs) = match op {
                FreeOp::Prim { dst, args, .. } => (*dst, args),
                FreeOp::Read { dst, index, .. } => (*dst, index),
            };
            let (before, after) = lanes.lanes.split_at_mut(dst);
            let out = after[0]
                .as_mut()
                .expect("free operations write their own lanes");
            let consts = &lanes.consts;
            let lane_ref = |k: usize| match srcs[k] {
                Src::Lane(lane) => before[lane].as_ref().expect("sources have lanes").as_ref(),
                Src::Const(k) => consts[k].as_ref(),
            };
            match op {
                FreeOp::Prim { prim, .. } => {
                    with_operands(srcs.len(), lane_ref, |operands| {
                        out.eval(*prim, operands, len)
                    });
                }
                FreeOp::Read { table, gather, .. } => {
                    with_operands(srcs.len(), lane_ref, |index| {
                        gather(side.table(*table), index, out, len)
                    });
                }
            }
        }
        let mut imported = std::mem::take(&mut lanes.imported);
        for ((_, src, import), bits) in self.imports.iter().zip(&mut imported) {
            import(lanes.lane(*src), &mut bits[..len]);
        }
        lanes.imported = imported;
    }

    /// The registers whose values `compute` imports, in the order of `BlockLanes::imported`.
    pub fn import_regs(&self) -> impl Iterator<Item = usize> + '_ {
        self.imports.iter().map(|(reg, _, _)| *reg)
    }

    /// Sets the free registers the carried operations read to their values at point `point`
    /// of the block.
    #[inline]
    pub fn import(&self, lanes: &BlockLanes, point: usize, regs: &mut [u64]) {
        for ((reg, _, _), bits) in self.imports.iter().zip(&lanes.imported) {
            regs[*reg] = bits[point];
        }
    }
}

impl BlockLanes {
    /// Per register of `BlockPlan::import_regs`, its values at the block's points.
    pub fn imported(&self) -> &[Vec<u64>] {
        &self.imported
    }

    fn lane(&self, src: Src) -> &Lane {
        match src {
            Src::Lane(lane) => self.lanes[lane]
                .as_ref()
                .expect("free registers have lanes"),
            Src::Const(k) => &self.consts[k],
        }
    }
}

fn import<T: Bits>(lane: &Lane, bits: &mut [u64]) {
    let values = T::values(&lane.column);
    if lane.splat {
        bits.fill(values[0].into_reg());
    } else {
        for (bits, value) in bits.iter_mut().zip(values) {
            *bits = value.into_reg();
        }
    }
}

/// The `i64` coordinate at `point` of an index lane.
fn coordinate(lane: &LaneRef, point: usize) -> i64 {
    i64::slice(lane.column)[if lane.splat { 0 } else { point }]
}

/// Whether `ks` is `first, first + step, first + 2 step, …` (checked without an early exit,
/// so that the check vectorises).
#[inline(always)]
fn is_run(ks: &[i64], first: i64, step: i64) -> bool {
    let expected = (0i64..).map(|j| first.wrapping_add(step.wrapping_mul(j)));
    ks.iter()
        .zip(expected)
        .fold(0, |diff, (k, e)| diff | (k ^ e))
        == 0
}

/// `table[index…]` at each of the first `len` points (zero out of range).
fn gather<T: Bits>(table: &Table, index: &[LaneRef], out: &mut Lane, len: usize) {
    let values = T::slice(table.values());
    let at = |offset: Option<usize>| offset.map_or_else(T::default, |offset| values[offset]);
    let splat = index.iter().all(|lane| lane.splat);
    out.splat = splat;
    let out = &mut T::values_mut(&mut out.column)[..if splat { 1 } else { len }];
    match index {
        [lane] if !splat => {
            let ks = &i64::slice(lane.column)[..len];
            // `xs[i + c]` and `xs[c - i]` (a backward scan's reads) in range: one copy.
            let in_range = |k: i64| usize::try_from(k).is_ok_and(|k| k < values.len());
            let (first, last) = (ks.first().copied(), ks.last().copied());
            let ends = first
                .zip(last)
                .filter(|(a, b)| in_range(*a) && in_range(*b));
            let run = |step: i64| ends.is_some_and(|(first, _)| is_run(ks, first, step));
            if let Some((first, last)) = ends.filter(|_| run(1)) {
                out.copy_from_slice(&values[first as usize..=last as usize]);
            } else if let Some((first, last)) = ends.filter(|_| run(-1)) {
                let backwards = values[last as usize..=first as usize].iter().rev();
                for (value, &read) in out.iter_mut().zip(backwards) {
                    *value = read;
                }
            } else {
                for (value, k) in out.iter_mut().zip(ks) {
                    let k = usize::try_from(*k).ok();
                    *value = k.and_then(|k| values.get(k)).copied().unwrap_or_default();
                }
            }
        }
        _ => {
            for (point, value) in out.iter_mut().enumerate() {
                *value = at(table.offset(index.iter().map(|lane| coordinate(lane, point))));
            }
        }
    }
}
