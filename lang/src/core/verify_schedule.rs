//! The verifier of schedules (the `fused` stage's output), run by the pipeline driver after
//! the pass that makes one, as `verify` runs after every pass over the IR.
//!
//! A schedule of a block computes the block's statements in steps. It is well formed when
//! every variable of the block (a binder of one of its statements) that a step reads was
//! bound by an earlier step (a scatter added in place reads the value it goes into), no
//! variable is bound twice, and every result of the block that the block computes is
//! bound. Outputs a step does not bind (a row group's local members, a monoid step's
//! operands and unused results) are thereby never read after it. The schedules of loop
//! bodies are checked the same way, each over its own block.
//!
//! Each step must also hold what `core::kernel` claims of it (`verify_step`): its statements
//! are statements of the block of the right form, and every kernel (alone, in a row group,
//! a monoid step's producer or consumer) and every matrix product is well formed
//! (`verify_kernel`, `verify_matmul`): node operands precede their node and have the types
//! its primitive takes; reads have one coordinate per axis of the variable read, and those
//! the engine does not mask or wrap stay in range over the iteration space; the output has
//! the type of the variable it writes.

use std::collections::HashSet;

use crate::core::ir::{ArrTy, Atom, BlockId, Elem, Monoid, Program, Scatter, Stmt, VarId};
use crate::core::kernel::{Affine, Coord, Kernel, MatMul, Node, NodeId, Schedule, Step};
use crate::core::print::{shape_text, ty_text, var_text};
use crate::core::visit::var_of;

/// Checks `schedule` against `program` (see the module documentation); the first problem
/// found, in words, if any.
pub fn verify_schedule(program: &Program, schedule: &Schedule) -> Result<(), String> {
    let block = schedule.block;
    if program.blocks.get(block).is_none() {
        return Err(format!("{block} is not a block of the program"));
    }
    let defined: HashSet<VarId> = program.blocks[block]
        .stmts
        .iter()
        .flat_map(|stmt| stmt.binders.iter().copied())
        .collect();
    let mut bound: HashSet<VarId> = HashSet::new();
    for (number, step) in schedule.steps.iter().enumerate() {
        verify_step(program, block, number, step)?;
        for var in step.reads(program, block) {
            if defined.contains(&var) && !bound.contains(&var) {
                return Err(format!(
                    "step {number} reads {} before any step binds it",
                    var_text(program, var)
                ));
            }
        }
        for var in step.outputs(program, block) {
            if !bound.insert(var) {
                return Err(format!(
                    "step {number} binds {} again",
                    var_text(program, var)
                ));
            }
        }
    }
    for var in program.blocks[block]
        .results
        .iter()
        .filter_map(|atom| var_of(*atom))
    {
        if defined.contains(&var) && !bound.contains(&var) {
            return Err(format!(
                "no step binds the result {}",
                var_text(program, var)
            ));
        }
    }
    for body in &schedule.loop_bodies {
        verify_schedule(program, body)?;
    }
    Ok(())
}

/// The step's own form (see the module documentation); errors name the step as the
/// printer numbers it (`k2`, and `k2.1` for a row group's or a monoid step's kernel).
fn verify_step(
    program: &Program,
    block: BlockId,
    number: usize,
    step: &Step,
) -> Result<(), String> {
    let stmts = &program.blocks[block].stmts;
    let at = |what: String| format!("step {number}: {what}");
    let member = |position: usize, kernel: &Kernel| {
        verify_kernel(program, kernel).map_err(|what| format!("step {number}.{position}: {what}"))
    };
    let stmt = |index: usize| -> Result<&Stmt, String> {
        stmts.get(index).ok_or_else(|| {
            at(format!(
                "statement {index} is not one of the block's {}",
                stmts.len()
            ))
        })
    };
    let scatter = |index: usize| match Scatter::of(&stmt(index)?.expr) {
        Some(_) => Ok(()),
        None => Err(at(format!("statement {index} is not a scatter"))),
    };
    match step {
        Step::Kernel(kernel) => verify_kernel(program, kernel).map_err(at),
        Step::MatMul(matmul) => verify_matmul(program, matmul).map_err(at),
        Step::Rows(rows) => {
            if rows.local.len() != rows.kernels.len() {
                return Err(at(format!(
                    "{} members but {} local flags",
                    rows.kernels.len(),
                    rows.local.len()
                )));
            }
            for (position, kernel) in rows.kernels.iter().enumerate() {
                member(position, kernel)?;
                if kernel.out_shape().first() != Some(&rows.rows) {
                    return Err(format!(
                        "step {number}.{position}: its output's axis 0 is not the group's {} rows",
                        rows.rows
                    ));
                }
            }
            rows.scatter_add.map_or(Ok(()), scatter)
        }
        Step::Monoid(monoid) => {
            let stmt = stmt(monoid.stmt)?;
            let Some(Monoid { arrays, .. }) = Monoid::of(&stmt.expr) else {
                return Err(at(format!("statement {} is not a monoid", monoid.stmt)));
            };
            if monoid.live.len() != stmt.binders.len() {
                return Err(at(format!(
                    "{} live flags for {} binders",
                    monoid.live.len(),
                    stmt.binders.len()
                )));
            }
            let kernels = monoid.producers.iter().chain(&monoid.consumers);
            for (position, kernel) in kernels.enumerate() {
                member(position, kernel)?;
                let (out, _) = kernel.output;
                let what = if kernel.reduce.is_some() {
                    "a reduction, not a map"
                } else if position < monoid.producers.len() && !arrays.contains(&Atom::Var(out)) {
                    "a producer of no array of the statement"
                } else {
                    continue;
                };
                return Err(format!("step {number}.{position}: {what}"));
            }
            Ok(())
        }
        Step::Stmt(index) => stmt(*index).map(drop),
        Step::ScatterAdd { stmt, into } => {
            scatter(*stmt)?;
            var_ty(program, *into).map(drop).map_err(at)
        }
    }
}

/// A kernel's nodes, coordinates, iteration space and output (see the module
/// documentation); errors name the node.
fn verify_kernel(program: &Program, kernel: &Kernel) -> Result<(), String> {
    if kernel.reduce.is_some() && kernel.shape.is_empty() {
        return Err("a reduction over a rank-0 iteration space".to_string());
    }
    for (id, (node, elem)) in kernel.nodes.iter() {
        verify_node(program, kernel, id, node, *elem)
            .map_err(|what| format!("node {id}: {what}"))?;
    }
    let (out, root) = kernel.output;
    let Some(&(_, elem)) = kernel.nodes.get(root) else {
        return Err(format!("the output {root} is not a node of the kernel"));
    };
    let ty = var_ty(program, out)?;
    if kernel.out_shape() != ty.shape || elem != ty.elem {
        return Err(format!(
            "writes {} ({}) as {}{}",
            var_text(program, out),
            ty_text(ty),
            shape_text(kernel.out_shape()),
            elem.name()
        ));
    }
    Ok(())
}

/// Node `id` of `kernel`, of element type `elem`.
fn verify_node(
    program: &Program,
    kernel: &Kernel,
    id: NodeId,
    node: &Node,
    elem: Elem,
) -> Result<(), String> {
    let rank = kernel.shape.len();
    let earlier = |operand: NodeId| -> Result<Elem, String> {
        match kernel.nodes.get(operand) {
            Some(&(_, elem)) if operand < id => Ok(elem),
            _ => Err(format!("its operand {operand} does not come before it")),
        }
    };
    match node {
        Node::Lit(scalar) if scalar.elem() != elem => Err(format!(
            "a {} literal typed {}",
            scalar.elem().name(),
            elem.name()
        )),
        Node::Lit(_) => Ok(()),
        Node::Index(_) if elem != Elem::I64 => Err(format!("an index typed {}", elem.name())),
        Node::Index(affine) => verify_affine(affine, rank),
        Node::Read { var, coords } => {
            let name = var_text(program, *var);
            let ty = var_ty(program, *var)?;
            if ty.elem != elem {
                return Err(format!("reads {name} ({}) as {}", ty_text(ty), elem.name()));
            }
            if coords.len() != ty.shape.len() {
                return Err(format!(
                    "reads {name} at {} coordinates for its {} axes",
                    coords.len(),
                    ty.shape.len()
                ));
            }
            for (axis, (coord, &dim)) in coords.iter().zip(&ty.shape).enumerate() {
                let checked = match coord {
                    Coord::Affine(affine) => verify_in_range(affine, &kernel.shape, dim),
                    Coord::Node(operand) => earlier(*operand).and_then(|elem| {
                        (elem.is_integer())
                            .then_some(())
                            .ok_or_else(|| format!("{operand} is {}, not an integer", elem.name()))
                    }),
                    Coord::Masked(_, masked) if *masked != dim => {
                        Err(format!("masked to 0..{masked} on an axis of {dim}"))
                    }
                    Coord::Masked(affine, _) => verify_affine(affine, rank),
                    Coord::Wrapped(_, period) if *period == 0 || *period > dim => {
                        Err(format!("wraps at {period} on an axis of {dim}"))
                    }
                    Coord::Wrapped(affine, _) => verify_affine(affine, rank).and_then(|()| {
                        match affine.bounds(&kernel.shape) {
                            Some((low, _)) if low < 0 => {
                                Err(format!("wraps `{affine}`, which is negative at {low}"))
                            }
                            _ => Ok(()),
                        }
                    }),
                };
                checked.map_err(|what| format!("coordinate {axis} of {name}: {what}"))?;
            }
            Ok(())
        }
        Node::Prim(prim, operands) => {
            let elems = (operands.iter())
                .map(|&operand| earlier(operand))
                .collect::<Result<Vec<Elem>, String>>()?;
            match prim.result_elem(&elems) {
                Ok(result) if result == elem => Ok(()),
                Ok(result) => Err(format!(
                    "{} gives {}, not {}",
                    prim.name(),
                    result.name(),
                    elem.name()
                )),
                Err(error) => Err(error.to_string()),
            }
        }
    }
}

/// A matrix product's operands, axes and output (see the module documentation).
fn verify_matmul(program: &Program, matmul: &MatMul) -> Result<(), String> {
    let space = &matmul.shape;
    if space.is_empty() {
        return Err("a product over a rank-0 iteration space".to_string());
    }
    for (lhs, rhs) in matmul.terms() {
        for operand in [lhs, rhs] {
            let name = var_text(program, operand.var);
            let ty = var_ty(program, operand.var)?;
            if ty.elem != matmul.elem || operand.coords.len() != ty.shape.len() {
                return Err(format!(
                    "reads {name} ({}) at {} coordinates as {}",
                    ty_text(ty),
                    operand.coords.len(),
                    matmul.elem.name()
                ));
            }
            for (axis, (affine, &dim)) in operand.coords.iter().zip(&ty.shape).enumerate() {
                verify_in_range(affine, space, dim)
                    .map_err(|what| format!("coordinate {axis} of {name}: {what}"))?;
            }
        }
    }
    let out_axes = matmul.out_axes();
    let mut roles: Vec<usize> = (matmul.m_axis.iter().chain(&matmul.n_axis))
        .chain(&matmul.batch_axes)
        .copied()
        .collect();
    roles.sort_unstable();
    let summed_ok = (matmul.summed.iter()).all(|&axis| (1..space.len()).contains(&axis));
    if roles != out_axes || !summed_ok {
        return Err(format!(
            "its m, n and batch axes {roles:?} and summed axes {:?} do not split axes 1.. of {}",
            matmul.summed,
            shape_text(space)
        ));
    }
    let shape: Vec<usize> = out_axes.iter().map(|&axis| space[axis]).collect();
    let ty = var_ty(program, matmul.out)?;
    if ty.shape != shape || ty.elem != matmul.elem {
        return Err(format!(
            "writes {} ({}) as {}{}",
            var_text(program, matmul.out),
            ty_text(ty),
            shape_text(&shape),
            matmul.elem.name()
        ));
    }
    Ok(())
}

/// `affine` is normalised (terms sorted by axis, no zero coefficient) over axes of a space
/// of rank `rank`.
fn verify_affine(affine: &Affine, rank: usize) -> Result<(), String> {
    for (position, &(axis, coeff)) in affine.terms.iter().enumerate() {
        if axis >= rank {
            return Err(format!("`{affine}` uses i{axis} of a rank-{rank} space"));
        }
        if coeff == 0 || position > 0 && affine.terms[position - 1].0 >= axis {
            return Err(format!("`{affine}` is not normalised"));
        }
    }
    Ok(())
}

/// `affine` takes values in `0..dim` over the points of `space` (none: anything goes).
fn verify_in_range(affine: &Affine, space: &[usize], dim: usize) -> Result<(), String> {
    verify_affine(affine, space.len())?;
    if space.contains(&0) {
        return Ok(());
    }
    match affine.bounds(space) {
        Some((low, high)) if low >= 0 && high < dim as i64 => Ok(()),
        Some((low, high)) => Err(format!(
            "`{affine}` takes {low}..={high} over {}, out of 0..{dim}",
            shape_text(space)
        )),
        None => Err(format!("`{affine}` overflows over {}", shape_text(space))),
    }
}

/// The declared type of `var`.
fn var_ty(program: &Program, var: VarId) -> Result<&ArrTy, String> {
    (program.vars.get(var).map(|info| &info.ty))
        .ok_or_else(|| format!("{var} is not a variable of the program"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::parse::parse_program;
    use crate::core::parse_schedule::parse_schedule;

    /// A block whose exponentials have two readers (so a kernel materialises them) and whose
    /// results are the exponentials and their sums by column.
    const PROGRAM: &str = "program(%0: [64, 100]f32) {
           %1: [64, 100]f32 = exp %0
           %2: [100]f32 = sumOuter %1
           %3: [64, 100]f32 = replicate 64 %2
           %4: [64, 100]f32 = div %1 %3
           in %4, %1
         }";

    fn schedule() -> (Program, Schedule) {
        let program = parse_program(PROGRAM).unwrap_or_else(|error| panic!("{error}"));
        let schedule = crate::passes::fuse::run(&program);
        (program, schedule)
    }

    #[test]
    fn the_fused_schedule_is_well_formed() {
        let (program, schedule) = schedule();
        assert!(schedule.steps.len() >= 2, "{}", schedule.display(&program));
        assert_eq!(verify_schedule(&program, &schedule), Ok(()));
    }

    /// Steps out of order, a step twice, a step missing: each is named.
    #[test]
    fn broken_schedules_are_refused_with_the_reason() {
        let (program, good) = schedule();
        let last = good.steps.len() - 1;
        let mut reversed = good.clone();
        reversed.steps.reverse();
        let mut twice = good.clone();
        twice.steps.push(good.steps[0].clone());
        let mut short = good.clone();
        short.steps.truncate(last);
        let mut astray = good.clone();
        astray.steps.push(Step::Stmt(99));
        for (schedule, reason) in [
            (reversed, "before any step binds it"),
            (twice, "again"),
            (short, "no step binds the result"),
            (astray, "statement 99 is not one of the block's"),
        ] {
            let error = verify_schedule(&program, &schedule).expect_err(reason);
            assert!(error.contains(reason), "{error}");
        }
    }

    /// The program the kernel tests schedule: `y = exp x` and its column sums.
    const KERNELS: &str = "program(%0_x: [4, 3]f32, %1_i: [4]i64) {
           %2_y: [4, 3]f32 = exp %0_x
           %3_s: [3]f32 = sumOuter %2_y
           in %2_y, %3_s
         }";

    /// `verify_schedule` of a schedule of `KERNELS` whose first step is `first` (printed),
    /// then the column sums.
    fn verify_first(first: &str) -> Result<(), String> {
        let program = parse_program(KERNELS).unwrap_or_else(|error| panic!("{error}"));
        let text = format!(
            "schedule(%0_x, %1_i) {{
               {first}
               kernel k1 over [4, 3] sum i0: reads {{%2_y}} writes %3_s: [3]f32
                 v0: f32 = read %2_y[i0, i1]
                 sum v0
               in %2_y, %3_s
             }}"
        );
        let schedule = parse_schedule(&program, program.main, &text)
            .unwrap_or_else(|error| panic!("{error}\n{text}"));
        verify_schedule(&program, &schedule)
    }

    /// `y`'s kernel over `shape` reading `reads`, with the nodes and output line `body`.
    fn y_kernel(shape: &str, reads: &str, body: &str) -> String {
        format!("kernel k0 over {shape}: reads {{{reads}}} writes %2_y: [4, 3]f32\n{body}")
    }

    #[test]
    fn well_formed_kernels_pass() {
        let read = "v0: f32 = read %0_x[i0, i1]\nv1: f32 = exp v0\nout v1";
        assert_eq!(verify_first(&y_kernel("[4, 3]", "%0_x", read)), Ok(()));
        // Computed, masked and wrapped coordinates, an index, literals.
        let body = "v0: i64 = index 3*i0 + -1*i1 + 1
                    v1: i64 = read %1_i[(i0 + 1) mod 4]
                    v2: f32 = read %0_x[v1, i1 + -1 in 0..3]
                    v3: f32 = read %0_x[3, 2]
                    v4: bool = true
                    v5: f32 = select v4 v2 v3
                    out v5";
        assert_eq!(
            verify_first(&y_kernel("[4, 3]", "%1_i, %0_x", body)),
            Ok(())
        );
    }

    /// Each invariant of `core::kernel`, broken in `y`'s kernel, is named with its node.
    #[test]
    fn ill_formed_kernels_are_refused_with_the_node() {
        let cases = [
            // An operand after its node.
            (
                "%0_x",
                "v0: f32 = exp v1\nv1: f32 = read %0_x[i0, i1]\nout v0",
                "node v0: its operand v1 does not come before it",
            ),
            // An output that is no node.
            (
                "%0_x",
                "v0: f32 = read %0_x[i0, i1]\nout v5",
                "the output v5 is not a node",
            ),
            // Coordinates for some of the axes.
            (
                "%0_x",
                "v0: f32 = read %0_x[i0]\nout v0",
                "node v0: reads %0_x at 1 coordinates for its 2 axes",
            ),
            // A coordinate computed by a later node, or by a float.
            (
                "%0_x",
                "v0: f32 = read %0_x[v1, i1]\nv1: i64 = index i0\nout v0",
                "node v0: coordinate 0 of %0_x: its operand v1 does not come before it",
            ),
            (
                "%0_x",
                "v0: f32 = 1.0:f32\nv1: f32 = read %0_x[v0, i1]\nout v1",
                "node v1: coordinate 0 of %0_x: v0 is f32, not an integer",
            ),
            // An affine coordinate that leaves its axis, and one of an axis not iterated.
            (
                "%0_x",
                "v0: f32 = read %0_x[i0, i1 + 1]\nout v0",
                "node v0: coordinate 1 of %0_x: `i1 + 1` takes 1..=3 over [4, 3], out of 0..3",
            ),
            (
                "%0_x",
                "v0: f32 = read %0_x[i0, i2]\nout v0",
                "node v0: coordinate 1 of %0_x: `i2` uses i2 of a rank-2 space",
            ),
            // A mask of the wrong length; a wrap longer than the axis, or of negatives.
            (
                "%0_x",
                "v0: f32 = read %0_x[i0, i1 + 1 in 0..4]\nout v0",
                "masked to 0..4 on an axis of 3",
            ),
            (
                "%0_x",
                "v0: f32 = read %0_x[i0, (i1) mod 4]\nout v0",
                "wraps at 4 on an axis of 3",
            ),
            (
                "%0_x",
                "v0: f32 = read %0_x[i0, (i1 + -1) mod 3]\nout v0",
                "wraps `i1 + -1`, which is negative at -1",
            ),
            // An index of an axis not iterated, or not normalised.
            (
                "",
                "v0: i64 = index i2\nv1: f32 = cast_f32 v0\nout v1",
                "node v0: `i2` uses i2",
            ),
            (
                "",
                "v0: i64 = index i1 + i0\nv1: f32 = cast_f32 v0\nout v1",
                "node v0: `i1 + i0` is not normalised",
            ),
            // Element types against the primitive's rule, the literal, the index, the read.
            (
                "%0_x",
                "v0: f32 = read %0_x[i0, i1]\nv1: f64 = exp v0\nout v1",
                "node v1: exp gives f32, not f64",
            ),
            (
                "%0_x",
                "v0: f32 = read %0_x[i0, i1]\nv1: f32 = exp v0 v0\nout v1",
                "node v1: exp: takes 1 operands, got 2",
            ),
            (
                "%0_x",
                "v0: f32 = read %0_x[i0, i1]\nv1: bool = true\nv2: f32 = add v0 v1\nout v2",
                "node v2: add: ",
            ),
            (
                "",
                "v0: f64 = 1.0:f32\nout v0",
                "node v0: a f32 literal typed f64",
            ),
            (
                "",
                "v0: i32 = index i0\nv1: f32 = cast_f32 v0\nout v1",
                "an index typed i32",
            ),
            (
                "%0_x",
                "v0: f64 = read %0_x[i0, i1]\nout v0",
                "node v0: reads %0_x ([4, 3]f32) as f64",
            ),
        ];
        for (reads, body, reason) in cases {
            let error = verify_first(&y_kernel("[4, 3]", reads, body)).expect_err(reason);
            assert!(error.starts_with("step 0: "), "{error}");
            assert!(error.contains(reason), "{error}");
        }
        // A reduction over no axis, and an output of another shape.
        let error = verify_first(&y_kernel("[] sum i0", "", "v0: f32 = 1.0:f32\nsum v0"));
        assert_eq!(
            error,
            Err("step 0: a reduction over a rank-0 iteration space".into())
        );
        let error = verify_first(&y_kernel(
            "[4]",
            "%0_x",
            "v0: f32 = read %0_x[i0, 0]\nout v0",
        ));
        assert_eq!(
            error,
            Err("step 0: writes %2_y ([4, 3]f32) as [4]f32".into())
        );
    }

    /// A product `c = a b` of `[2, 3]` by `[3, 4]`: its operands' coordinates and axes.
    #[test]
    fn matrix_products_are_checked() {
        let program = parse_program(
            "program(%0_a: [2, 3]f32, %1_b: [3, 4]f32) {
               %2_c: [2, 4]f32 = %1_b
               %3_r: [2]f32 = %0_a
               in %2_c, %3_r
             }",
        )
        .unwrap_or_else(|error| panic!("{error}"));
        let check = |product: &str| {
            let text = format!(
                "schedule(%0_a, %1_b) {{
                   matmul k0 over [3, 2, 4] sum i0 {product}: [2, 4]f32
                   matmul k1 over [3, 2, 4] sum i0, i2 m i1: %3_r = %0_a[i1, i0] * %1_b[i0, i2]: [2]f32
                   in %2_c, %3_r
                 }}"
            );
            let schedule = parse_schedule(&program, program.main, &text)
                .unwrap_or_else(|error| panic!("{error}\n{text}"));
            verify_schedule(&program, &schedule)
        };
        assert_eq!(
            check("m i1 n i2: %2_c = %0_a[i1, i0] * %1_b[i0, i2]"),
            Ok(())
        );
        for (product, reason) in [
            (
                "m i1 n i2: %2_c = %0_a[i1] * %1_b[i0, i2]",
                "reads %0_a ([2, 3]f32) at 1",
            ),
            (
                "m i1 n i2: %2_c = %0_a[i1, i0] * %1_b[i0, i2 + 1]",
                "coordinate 1 of %1_b: `i2 + 1` takes 1..=4",
            ),
            (
                "m i1: %2_c = %0_a[i1, i0] * %1_b[i0, i2]",
                "do not split axes 1..",
            ),
            (
                "m i1 n i2 batch i2: %2_c = %0_a[i1, i0] * %1_b[i0, i2]",
                "do not split",
            ),
        ] {
            let error = check(product).expect_err(reason);
            assert!(
                error.starts_with("step 0: ") && error.contains(reason),
                "{error}"
            );
        }
    }

    /// A row group's members must run over its rows, and say whether they are local.
    #[test]
    fn row_groups_are_checked() {
        let program = parse_program(KERNELS).unwrap_or_else(|error| panic!("{error}"));
        let text = "schedule(%0_x, %1_i) {
               rows k0 over [4] {
                 kernel k0.0 over [4, 3]: reads {%0_x} writes %2_y: [4, 3]f32
                   v0: f32 = read %0_x[i0, i1]
                   out v0
               }
               kernel k1 over [4, 3] sum i0: reads {%2_y} writes %3_s: [3]f32
                 v0: f32 = read %2_y[i0, i1]
                 sum v0
               in %2_y, %3_s
             }";
        let good = parse_schedule(&program, program.main, text).unwrap();
        assert_eq!(verify_schedule(&program, &good), Ok(()));
        let Step::Rows(rows) = &good.steps[0] else {
            panic!("a row group")
        };
        let mut other_rows = good.clone();
        let mut unflagged = good.clone();
        if let (Step::Rows(other), Step::Rows(flags)) =
            (&mut other_rows.steps[0], &mut unflagged.steps[0])
        {
            other.rows = rows.rows + 1;
            flags.local.clear();
        }
        assert_eq!(
            verify_schedule(&program, &other_rows),
            Err("step 0.0: its output's axis 0 is not the group's 5 rows".into())
        );
        assert_eq!(
            verify_schedule(&program, &unflagged),
            Err("step 0: 1 members but 0 local flags".into())
        );
    }
}
