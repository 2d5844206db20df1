//! Properties of differentiation, checked through the session on dx source text:
//!
//! - random differentiable programs: `grad` and `jvp` against central finite differences in
//!   Float64, and `vjp` against `jvp` by the dot-product identity ⟨ct, J t⟩ = ⟨Jᵀ ct, t⟩;
//! - no Delta explosion: the gradient of a dot product has the same program for every size;
//! - the cheap-gradient bound of [HuotShaikhha] Theorem 5.4, with the cost model of `ops::cost`;
//! - reverse mode through a loop costs linear in the loop's length (the same cost model), and
//!   loops reading outer tables (at the loop index, its neighbours, an index computed from
//!   the carry, through gathers) agree with central finite differences;
//! - shared intermediates: a pullback does not recompute the primal.
//!
//! The random programs come from a small deterministic generator of dx source (fixed seeds,
//! its own PRNG). Every generated program must type-check and run: a generator failure is a
//! test failure, so the generator stays honest. The bodies combine elementwise maths (`sin`,
//! `cos`, `exp`, `tanh`, `sq`, `log (1.5 + sq e)`, `+ - *`, `/ (2.0 + sq e)`), arithmetic on
//! tables (`+ - *`, `.*`), `for` (one and two binders) with `sum`, indexing with computed
//! indices, tuples (destructuring lambdas, tables of tuples with `fst`/`snd`), a struct
//! (fields read in a body), a table of a data type read by `case` in a `for`, `if`, `fold`
//! over `Fin 2` with a scalar, pair or table carry, `scan`, and the prelude's `maximum`,
//! `logsumexp`, `softmax`, `mean`, `sum` and `cumsum`.
//!
//! Non-smooth constructs (`if`, `maximum`) carry guards: expressions of the function's input
//! that the test evaluates at every point it uses, skipping cases within
//! `tol::GUARD_MARGIN` of a kink. A guard cannot be written for a value that depends on a
//! loop carry, so `if` and `maximum` are not generated inside `fold`/`scan` bodies. Values
//! are kept bounded (larger ones are scaled by a power of ten) so that finite differences in
//! Float64 stay accurate.

use crate::common::{count_stmts, rel_err, Rng};
use dx_lang::core::ir::{Expr, Fold, PrimApp, Program, Scan};
use dx_lang::core::value::{ArrayData, Value};
use dx_lang::ops::cost::{cost, nesting_depth};
use dx_lang::prim::Prim;
use dx_lang::session::{Session, SessionConfig};

/// Tolerances and steps, in one place (docs/architecture.md).
mod tol {
    /// The step of central finite differences.
    pub const FD_STEP: f64 = 1e-5;
    /// Relative error allowed between a derivative and its finite difference.
    pub const FD_REL: f64 = 1e-6;
    /// Relative error allowed in the dot-product identity ⟨ct, J t⟩ = ⟨Jᵀ ct, t⟩.
    pub const DOT_REL: f64 = 1e-9;
    /// How far a guarded value (an `if` condition minus its threshold, the gap between the
    /// two largest elements under `maximum`) must stay from zero.
    pub const GUARD_MARGIN: f64 = 1e-3;
}

// ---------------------------------------------------------------------------------------------
// Values and literals.

/// A Float64 literal that reads back exactly (Rust's shortest round-trip form).
fn lit(value: f64) -> String {
    format!("{value:?}")
}

/// A `(Fin n)=>Float64` table literal.
fn table_lit(values: &[f64]) -> String {
    let items: Vec<String> = values.iter().map(|value| lit(*value)).collect();
    format!(
        "([{}] :: (Fin {})=>Float64)",
        items.join(", "),
        values.len()
    )
}

/// Every number of a value, flattened in order (tuples left to right, arrays row-major).
fn numbers(value: &Value) -> Result<Vec<f64>, String> {
    match value {
        Value::Tuple(items) => {
            let mut out = Vec::new();
            for item in items {
                out.extend(numbers(item)?);
            }
            Ok(out)
        }
        Value::Array(array) => match &*array.data {
            ArrayData::F64(values) => Ok(values.clone()),
            ArrayData::F32(values) => Ok(values.iter().map(|value| f64::from(*value)).collect()),
            other => Err(format!("expected floats, found {:?}", other.elem())),
        },
    }
}

/// Evaluates an expression to its numbers.
fn eval_numbers(session: &mut Session, expr: &str) -> Result<Vec<f64>, String> {
    let (_, value) = session
        .evaluate(expr)
        .map_err(|diag| format!("{:?} error: {}", diag.kind(), diag.message))?;
    numbers(&value)
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

// ---------------------------------------------------------------------------------------------
// The generator of random differentiable programs.

/// The size of the input table `x` (and of every table the generator builds).
const N: usize = 3;
/// Every scalar a generated expression produces is bounded by this (for inputs in
/// [-1.5, 1.5]), so that finite differences in Float64 stay accurate: larger values are
/// scaled down by a power of ten.
const VALUE_LIMIT: f64 = 20.0;

/// The argument of the generated function.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Input {
    /// `x : (Fin 3)=>Float64`.
    Vector,
    /// `(x, b) : ((Fin 3)=>Float64, Float64)`.
    VectorAndScalar,
}

impl Input {
    /// The lambda parameter.
    fn param(self) -> &'static str {
        match self {
            Input::Vector => "x",
            Input::VectorAndScalar => "(x, b)",
        }
    }

    /// The number of Float64 components of a point.
    fn dim(self) -> usize {
        match self {
            Input::Vector => N,
            Input::VectorAndScalar => N + 1,
        }
    }

    /// A point (or a tangent, or a cotangent) as a dx literal.
    fn literal(self, point: &[f64]) -> String {
        match self {
            Input::Vector => table_lit(point),
            Input::VectorAndScalar => {
                format!(
                    "({}, ({} :: Float64))",
                    table_lit(&point[..N]),
                    lit(point[N])
                )
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum GuardKind {
    /// The value (an `if` condition minus its threshold) must stay away from zero.
    Threshold,
    /// The value is a table whose last axis has `N` elements (the argument of `maximum`):
    /// the two largest elements of each row must stay apart.
    MaxGap,
}

/// An expression of the function's input whose value tells whether a non-smooth construct
/// is near its kink.
#[derive(Clone, Debug)]
struct Guard {
    kind: GuardKind,
    expr: String,
}

/// The syntactic context of the expression being generated, innermost last. A guard is the
/// guarded expression wrapped in the same contexts, so that it means the same thing at the
/// top level of the function.
enum Ctx {
    /// `for <binders>. []`
    For(String),
    /// `(\<param>. []) <arg>`
    Apply { param: String, arg: String },
}

/// A generated function: `\<param>. <body>`.
#[derive(Clone, Debug)]
struct Case {
    input: Input,
    body: String,
    /// The body is a `(Fin 3)=>Float64` table (otherwise a Float64).
    vector_valued: bool,
    guards: Vec<Guard>,
}

impl Case {
    fn func(&self) -> String {
        format!("\\{}. {}", self.input.param(), self.body)
    }
}

struct Gen<'r> {
    rng: &'r mut Rng,
    /// `(Fin 3)=>Float64` variables in scope, with a bound on their elements.
    vectors: Vec<(String, f64)>,
    /// Float64 variables in scope, with a bound.
    scalars: Vec<(String, f64)>,
    /// Index variables in scope, with the size of their index set.
    indices: Vec<(String, usize)>,
    ctx: Vec<Ctx>,
    guards: Vec<Guard>,
    /// The scalar carries of the enclosing `fold`/`scan` bodies (also in `scalars`),
    /// innermost last: loop bodies mostly use them.
    carries: Vec<(String, f64)>,
    /// How many `fold`/`scan` bodies enclose the expression. A guard cannot be expressed in
    /// a loop body (it would depend on the carry), so no non-smooth construct is generated
    /// there.
    in_loop: usize,
    fresh: usize,
}

impl<'r> Gen<'r> {
    fn new(rng: &'r mut Rng, input: Input) -> Gen<'r> {
        let scalars = match input {
            Input::Vector => Vec::new(),
            Input::VectorAndScalar => vec![("b".to_string(), 1.5)],
        };
        Gen {
            rng,
            vectors: vec![("x".to_string(), 1.5)],
            scalars,
            indices: Vec::new(),
            ctx: Vec::new(),
            guards: Vec::new(),
            carries: Vec::new(),
            in_loop: 0,
            fresh: 0,
        }
    }

    fn name(&mut self, prefix: &str) -> String {
        self.fresh += 1;
        format!("{prefix}{}", self.fresh)
    }

    fn wrap_in_ctx(&self, inner: String) -> String {
        let mut text = inner;
        for ctx in self.ctx.iter().rev() {
            text = match ctx {
                Ctx::For(binders) => format!("(for {binders}. {text})"),
                Ctx::Apply { param, arg } => format!("((\\{param}. {text}) {arg})"),
            };
        }
        text
    }

    fn guard(&mut self, kind: GuardKind, inner: String) {
        let expr = self.wrap_in_ctx(inner);
        self.guards.push(Guard { kind, expr });
    }

    /// Scales a scalar expression down by a power of ten until its bound is at most `limit`.
    fn limit(text: String, bound: f64, limit: f64) -> (String, f64) {
        Gen::scale_down(text, bound, limit, "*")
    }

    /// Scales a table expression down like [`Gen::limit`], with `.*`.
    fn limit_vector(text: String, bound: f64, limit: f64) -> (String, f64) {
        Gen::scale_down(text, bound, limit, ".*")
    }

    fn scale_down(text: String, bound: f64, limit: f64, times: &str) -> (String, f64) {
        let mut factor = 1.0;
        while bound * factor > limit {
            factor *= 0.1;
        }
        if factor == 1.0 {
            (text, bound)
        } else {
            (format!("({factor:.0e} {times} {text})"), bound * factor)
        }
    }

    /// An index into a `(Fin 3)` table: an index variable in scope (possibly shifted), or a
    /// literal.
    fn index(&mut self) -> String {
        if !self.indices.is_empty() && self.rng.chance(0.8) {
            let (name, size) = self.indices[self.rng.below(self.indices.len())].clone();
            if size == N {
                match self.rng.below(3) {
                    0 => format!("(((ordinal {name} + 1) `mod` {N}) @ Fin {N})"),
                    1 => format!("(((ordinal {name} + 2) `mod` {N}) @ Fin {N})"),
                    _ => name,
                }
            } else {
                format!("((ordinal {name}) @ Fin {N})")
            }
        } else {
            format!("{}", self.rng.below(N))
        }
    }

    /// A variable or an element of a table variable.
    fn leaf(&mut self) -> (String, f64) {
        if let Some(carry) = self.carries.last() {
            // Fold bodies mostly use their carry.
            if self.rng.chance(0.5) {
                return carry.clone();
            }
        }
        let n_choices = self.scalars.len() + self.vectors.len();
        let pick = self.rng.below(n_choices + self.vectors.len());
        if pick < self.scalars.len() {
            self.scalars[pick].clone()
        } else {
            let (vector, bound) =
                self.vectors[(pick - self.scalars.len()) % self.vectors.len()].clone();
            let index = self.index();
            (format!("{vector}[{index}]"), bound)
        }
    }

    fn constant(&mut self) -> (String, f64) {
        let value = [0.7, 1.3, 0.4, 2.0, 0.25][self.rng.below(5)];
        (format!("{value:?}"), value)
    }

    /// A Float64 expression of the variables in scope (it always uses one, so its type is
    /// never defaulted to Float32).
    fn scalar(&mut self, depth: usize) -> (String, f64) {
        if depth == 0 || self.rng.chance(0.1) {
            self.leaf()
        } else {
            self.compound(depth)
        }
    }

    /// A scalar expression that is not a leaf (`depth` ≥ 1).
    fn compound(&mut self, depth: usize) -> (String, f64) {
        let guards_ok = if self.in_loop == 0 { 1.0 } else { 0.0 };
        let weights = [
            4.0,             // 0: unary maths
            4.0,             // 1: binary arithmetic
            1.0,             // 2: division by 2 + sq
            2.0,             // 3: sum for
            0.7,             // 4: for i j (a matrix)
            1.5 * guards_ok, // 5: if
            1.5,             // 6: fold, scan
            2.0,             // 7: prelude reductions
            1.0,             // 8: tuples
            1.5,             // 9: effects
        ];
        let (text, bound) = match self.rng.weighted(&weights) {
            0 => {
                let (arg, arg_bound) = self.scalar(depth - 1);
                match self.rng.below(6) {
                    0 => (format!("(sin {arg})"), 1.0),
                    1 => (format!("(cos {arg})"), 1.0),
                    2 => (format!("(tanh {arg})"), 1.0),
                    3 => {
                        let (arg, arg_bound) = Gen::limit(arg, arg_bound, 3.0);
                        (format!("(exp {arg})"), arg_bound.exp())
                    }
                    4 => {
                        let (arg, arg_bound) = Gen::limit(arg, arg_bound, 4.0);
                        (format!("(sq {arg})"), arg_bound * arg_bound)
                    }
                    _ => (
                        format!("(log (1.5 + sq {arg}))"),
                        (1.5 + arg_bound * arg_bound).ln(),
                    ),
                }
            }
            1 => {
                let (left, left_bound) = self.scalar(depth - 1);
                let (right, right_bound) = if self.rng.chance(0.3) {
                    self.constant()
                } else {
                    self.scalar(depth - 1)
                };
                let (left, left_bound, right, right_bound) = if self.rng.chance(0.5) {
                    (left, left_bound, right, right_bound)
                } else {
                    (right, right_bound, left, left_bound)
                };
                match self.rng.below(3) {
                    0 => (format!("({left} * {right})"), left_bound * right_bound),
                    1 => (format!("({left} + {right})"), left_bound + right_bound),
                    _ => (format!("({left} - {right})"), left_bound + right_bound),
                }
            }
            2 => {
                let (num, num_bound) = self.scalar(depth - 1);
                let (den, den_bound) = self.scalar(depth - 1);
                let (den, _) = Gen::limit(den, den_bound, 4.0);
                (format!("({num} / (2.0 + sq {den}))"), num_bound / 2.0)
            }
            3 => {
                let i = self.name("i");
                self.indices.push((i.clone(), N));
                self.ctx.push(Ctx::For(format!("{i}:(Fin {N})")));
                let res = if self.rng.chance(0.3) {
                    let j = self.name("j");
                    self.indices.push((j.clone(), N));
                    self.ctx.push(Ctx::For(format!("{j}:(Fin {N})")));
                    let (body, bound) = self.scalar(depth - 1);
                    self.ctx.pop();
                    self.indices.pop();
                    (
                        format!("(sum for {i}:(Fin {N}). sum (for {j}:(Fin {N}). {body}))"),
                        9.0 * bound,
                    )
                } else {
                    let (body, bound) = self.scalar(depth - 1);
                    (format!("(sum for {i}:(Fin {N}). {body})"), 3.0 * bound)
                };
                self.ctx.pop();
                self.indices.pop();
                res
            }
            4 => {
                let (i, j, m) = (self.name("i"), self.name("j"), self.name("m"));
                self.indices.push((i.clone(), N));
                self.indices.push((j.clone(), N));
                let binders = format!("{i}:(Fin {N}) {j}:(Fin {N})");
                self.ctx.push(Ctx::For(binders.clone()));
                let (body, bound) = self.scalar(depth - 1);
                self.ctx.pop();
                self.indices.truncate(self.indices.len() - 2);
                let k = self.name("i");
                let text = format!(
                    "((\\{m}. sum for {k}:(Fin {N}). sum {m}[{k}]) (for {binders}. {body}))"
                );
                (text, 9.0 * bound)
            }
            5 => {
                let (cond, _) = self.scalar(depth - 1);
                self.guard(GuardKind::Threshold, format!("({cond} - 0.2)"));
                let (then_branch, then_bound) = self.scalar(depth - 1);
                let (else_branch, else_bound) = if self.rng.chance(0.3) {
                    self.constant()
                } else {
                    self.scalar(depth - 1)
                };
                (
                    format!("(if {cond} > 0.2 then {then_branch} else {else_branch})"),
                    then_bound.max(else_bound),
                )
            }
            6 => self.scalar_loop(depth),
            9 => self.effect(depth),
            7 => {
                let (vector, vector_bound) = self.vector(depth - 1);
                match self.rng.below(5) {
                    0 => (format!("(mean {vector})"), vector_bound),
                    1 => (format!("(logsumexp {vector})"), vector_bound + 1.1),
                    2 => (format!("(sum {vector})"), 3.0 * vector_bound),
                    3 if self.in_loop == 0 => {
                        self.guard(GuardKind::MaxGap, vector.clone());
                        (format!("(maximum {vector})"), vector_bound)
                    }
                    _ => {
                        let (w, i) = (self.name("w"), self.name("i"));
                        let arg = format!("(softmax {vector})");
                        self.ctx.push(Ctx::Apply {
                            param: w.clone(),
                            arg: arg.clone(),
                        });
                        self.vectors.push((w.clone(), 1.0));
                        self.indices.push((i.clone(), N));
                        self.ctx.push(Ctx::For(format!("{i}:(Fin {N})")));
                        let (body, bound) = self.scalar(depth - 1);
                        self.ctx.pop();
                        self.indices.pop();
                        self.vectors.pop();
                        self.ctx.pop();
                        let text =
                            format!("((\\{w}. sum for {i}:(Fin {N}). {w}[{i}] * {body}) {arg})");
                        (text, 3.0 * bound)
                    }
                }
            }
            _ => match self.rng.below(4) {
                0 => {
                    // A tuple, destructured by a lambda.
                    let (first, first_bound) = self.scalar(depth - 1);
                    let (second, second_bound) = self.scalar(depth - 1);
                    let (u, v) = (self.name("u"), self.name("v"));
                    let param = format!("({u}, {v})");
                    let arg = format!("({first}, {second})");
                    self.ctx.push(Ctx::Apply {
                        param: param.clone(),
                        arg: arg.clone(),
                    });
                    self.scalars.push((u, first_bound));
                    self.scalars.push((v, second_bound));
                    let (body, bound) = self.scalar(depth - 1);
                    self.scalars.truncate(self.scalars.len() - 2);
                    self.ctx.pop();
                    (format!("((\\{param}. {body}) {arg})"), bound)
                }
                1 => {
                    // A table of tuples.
                    let (i, k, t) = (self.name("i"), self.name("i"), self.name("t"));
                    let [(first, first_bound), (second, second_bound)] =
                        self.two_scalars_for_each(&i, depth);
                    let text = format!(
                        "((\\{t}. sum for {k}:(Fin {N}). fst {t}[{k}] * snd {t}[{k}]) \
                         (for {i}:(Fin {N}). ({first}, {second})))"
                    );
                    (text, 3.0 * first_bound * second_bound)
                }
                2 => {
                    // A struct (`Pt`, see `USER_TYPES`), its fields read in a body.
                    let (scalar, scalar_bound) = self.scalar(depth - 1);
                    let (vector, vector_bound) = self.vector(depth - 1);
                    let p = self.name("p");
                    let arg = format!("(Pt {scalar} {vector})");
                    self.ctx.push(Ctx::Apply {
                        param: p.clone(),
                        arg: arg.clone(),
                    });
                    self.scalars.push((format!("{p}.a"), scalar_bound));
                    self.vectors.push((format!("{p}.v"), vector_bound));
                    let (body, bound) = self.scalar(depth - 1);
                    self.vectors.pop();
                    self.scalars.pop();
                    self.ctx.pop();
                    (format!("((\\{p}:Pt. {body}) {arg})"), bound)
                }
                _ => {
                    // A table of a data type (`Sh`), made by constructor by position and read
                    // by `case` (`sh_value`) in a `for`: every alternative computed, the tag
                    // selects.
                    let (i, k, t) = (self.name("i"), self.name("i"), self.name("t"));
                    let [(first, first_bound), (second, second_bound)] =
                        self.two_scalars_for_each(&i, depth);
                    let text = format!(
                        "((\\{t}. sum for {k}:(Fin {N}). sh_value {t}[{k}]) \
                         (for {i}:(Fin {N}). if ordinal {i} == 1 then Ci {first} else Re {first} {second}))"
                    );
                    (text, 3.0 * (first_bound * second_bound).max(1.0))
                }
            },
        };
        Gen::limit(text, bound, VALUE_LIMIT)
    }

    /// Effects (docs/language.md, Effects): accumulation in a `for` (a reduction, or a scatter-add at an
    /// index computed from the loop's), state threaded through a `for_`, and a `while` whose
    /// state holds a counter.
    fn effect(&mut self, depth: usize) -> (String, f64) {
        let (i, acc, s) = (self.name("i"), self.name("acc"), self.name("s"));
        match self.rng.below(4) {
            kind @ (0 | 1) => {
                self.indices.push((i.clone(), N));
                self.ctx.push(Ctx::For(format!("{i}:(Fin {N})")));
                let index = self.index();
                let (body, bound) = self.scalar(depth - 1);
                self.ctx.pop();
                self.indices.pop();
                if kind == 0 {
                    let text = format!(
                        "(yield_accum (AddMonoid Float64) \\{acc}. for {i}:(Fin {N}). {acc} += {body})"
                    );
                    return (text, 3.0 * bound);
                }
                // An element reference needs an index, not a number.
                let index = if index.parse::<usize>().is_ok() {
                    format!("({index} @ Fin {N})")
                } else {
                    index
                };
                let (h, k) = (self.name("h"), self.name("k"));
                let text = format!(
                    "((\\{h}. sum for {k}:(Fin {N}). {h}[{k}] * {h}[{k}]) \
                     (yield_accum (AddMonoid Float64) \\{acc}. for {i}:(Fin {N}). {acc}!{index} += {body}))"
                );
                (text, 3.0 * (3.0 * bound) * (3.0 * bound))
            }
            2 => {
                let (init, init_bound) = self.scalar(depth - 1);
                let carry_bound = init_bound.max(1.0);
                let carry = format!("(get {s})");
                let body = self.loop_carry_body(Some((i.clone(), N)), &carry, carry_bound, depth);
                let text = format!("(yield_state {init} \\{s}. for_ {i}:(Fin {N}). {s} := {body})");
                (text, carry_bound)
            }
            _ => {
                let (init, init_bound) = self.scalar(depth - 1);
                let carry_bound = init_bound.max(1.0);
                let (c, n) = (self.name("c"), self.name("n"));
                let body = self.loop_carry_body(None, &c, carry_bound, depth);
                let text = format!(
                    "(fst (yield_state ({init}, 0) \\{s}. while \\. \
                     ((\\({c}, {n}). snd ({s} := ({body}, {n} + 1), {n} + 1 < 3)) (get {s}))))"
                );
                (text, carry_bound)
            }
        }
    }

    /// `carry_body` inside a loop over `index` (if any) whose carry is the scalar `carry`: the
    /// index, the carry and the loop are in scope while the body is drawn.
    fn loop_carry_body(
        &mut self,
        index: Option<(String, usize)>,
        carry: &str,
        carry_bound: f64,
        depth: usize,
    ) -> String {
        let indexed = index.is_some();
        self.indices.extend(index);
        self.scalars.push((carry.to_string(), carry_bound));
        self.carries.push((carry.to_string(), carry_bound));
        self.in_loop += 1;
        let body = self.carry_body(depth - 1, carry_bound);
        self.in_loop -= 1;
        self.carries.pop();
        self.scalars.pop();
        if indexed {
            self.indices.pop();
        }
        body
    }

    /// A loop body returning a scalar carry, kept within the carry's bound so that every
    /// iteration stays bounded.
    fn carry_body(&mut self, depth: usize, carry_bound: f64) -> String {
        let (body, bound) = self.scalar(depth);
        if bound > carry_bound {
            format!("(tanh {body})")
        } else {
            body
        }
    }

    /// `fold` over `Fin 2` with a scalar or a pair carry, or `scan` over `Fin 3`.
    fn scalar_loop(&mut self, depth: usize) -> (String, f64) {
        let (k, c) = (self.name("k"), self.name("c"));
        match self.rng.below(4) {
            0 | 1 => {
                let (init, init_bound) = self.scalar(depth - 1);
                let carry_bound = init_bound.max(1.0);
                let body = self.loop_carry_body(Some((k.clone(), 2)), &c, carry_bound, depth);
                let text = format!("(fold({init}, \\{k}:(Fin 2) {c}. {body}))");
                (text, carry_bound)
            }
            2 => {
                let (first_init, first_bound) = self.scalar(depth - 1);
                let (second_init, second_bound) = self.scalar(depth - 1);
                let carry_bound = first_bound.max(second_bound).max(1.0);
                let parts = [format!("(fst {c})"), format!("(snd {c})")];
                self.indices.push((k.clone(), 2));
                for part in &parts {
                    self.scalars.push((part.clone(), carry_bound));
                    self.carries.push((part.clone(), carry_bound));
                }
                self.in_loop += 1;
                let first = self.carry_body(depth - 1, carry_bound);
                let second = self.carry_body(depth - 1, carry_bound);
                self.in_loop -= 1;
                self.carries.truncate(self.carries.len() - 2);
                self.scalars.truncate(self.scalars.len() - 2);
                self.indices.pop();
                let pick = ["fst", "snd"][self.rng.below(2)];
                let text = format!(
                    "({pick} (fold(({first_init}, {second_init}), \\{k}:(Fin 2) {c}. ({first}, {second}))))"
                );
                (text, carry_bound)
            }
            _ => {
                let (init, init_bound) = self.scalar(depth - 1);
                let carry_bound = init_bound.max(1.0);
                self.indices.push((k.clone(), N));
                self.scalars.push((c.clone(), carry_bound));
                self.carries.push((c.clone(), carry_bound));
                self.in_loop += 1;
                let carry = self.carry_body(depth - 1, carry_bound);
                let (output, output_bound) = self.scalar(depth - 1);
                self.in_loop -= 1;
                self.carries.pop();
                self.scalars.pop();
                self.indices.pop();
                let scan = format!("(scan({init}, \\{k}:(Fin {N}) {c}. ({carry}, {output})))");
                if self.rng.chance(0.5) {
                    (format!("(fst {scan})"), carry_bound)
                } else {
                    (format!("(sum (snd {scan}))"), 3.0 * output_bound)
                }
            }
        }
    }

    /// Two scalars of depth `depth - 1` in the body of a `for` over index `i` of `Fin N`.
    fn two_scalars_for_each(&mut self, i: &str, depth: usize) -> [(String, f64); 2] {
        self.indices.push((i.to_string(), N));
        self.ctx.push(Ctx::For(format!("{i}:(Fin {N})")));
        let scalars = [self.scalar(depth - 1), self.scalar(depth - 1)];
        self.ctx.pop();
        self.indices.pop();
        scalars
    }

    /// A `(Fin 3)=>Float64` expression.
    fn vector(&mut self, depth: usize) -> (String, f64) {
        if depth == 0 {
            return self.vectors[self.rng.below(self.vectors.len())].clone();
        }
        let (text, bound) = match self.rng.weighted(&[4.0, 1.0, 1.0, 0.5, 1.0, 0.7, 0.5, 0.7]) {
            0 => self.for_vector(depth),
            1 => {
                let (vector, _) = self.vector(depth - 1);
                (format!("(softmax {vector})"), 1.0)
            }
            2 => {
                let (arg, arg_bound) = self.vector(depth - 1);
                let w = self.name("w");
                self.ctx.push(Ctx::Apply {
                    param: w.clone(),
                    arg: arg.clone(),
                });
                self.vectors.push((w.clone(), arg_bound));
                let (body, bound) = self.for_vector(depth - 1);
                self.vectors.pop();
                self.ctx.pop();
                (format!("((\\{w}. {body}) {arg})"), bound)
            }
            3 => self.vectors[self.rng.below(self.vectors.len())].clone(),
            4 => {
                // Arithmetic on tables is elementwise.
                let (left, left_bound) = self.vector(depth - 1);
                let (right, right_bound) = self.vector(depth - 1);
                match self.rng.below(3) {
                    0 => (format!("({left} + {right})"), left_bound + right_bound),
                    1 => (format!("({left} - {right})"), left_bound + right_bound),
                    _ => (format!("({left} * {right})"), left_bound * right_bound),
                }
            }
            5 => {
                let (factor, factor_bound) = self.scalar(depth - 1);
                let (vector, vector_bound) = self.vector(depth - 1);
                (
                    format!("({factor} .* {vector})"),
                    factor_bound * vector_bound,
                )
            }
            6 => {
                let (vector, bound) = self.vector(depth - 1);
                (format!("(cumsum {vector})"), 3.0 * bound)
            }
            _ => {
                // A fold with a table carry.
                let (init, init_bound) = self.vector(depth - 1);
                let carry_bound = init_bound.max(1.0);
                let (k, c, i) = (self.name("k"), self.name("c"), self.name("i"));
                self.indices.push((k.clone(), 2));
                self.vectors.push((c.clone(), carry_bound));
                self.in_loop += 1;
                self.indices.push((i.clone(), N));
                let body = self.carry_body(depth - 1, carry_bound);
                self.indices.pop();
                self.in_loop -= 1;
                self.vectors.pop();
                self.indices.pop();
                let text = format!("(fold({init}, \\{k}:(Fin 2) {c}. for {i}:(Fin {N}). {body}))");
                (text, carry_bound)
            }
        };
        Gen::limit_vector(text, bound, VALUE_LIMIT)
    }

    /// `for i. <scalar>`.
    fn for_vector(&mut self, depth: usize) -> (String, f64) {
        let i = self.name("i");
        self.indices.push((i.clone(), N));
        self.ctx.push(Ctx::For(format!("{i}:(Fin {N})")));
        let (body, bound) = self.scalar(depth);
        self.ctx.pop();
        self.indices.pop();
        (format!("(for {i}:(Fin {N}). {body})"), bound)
    }
}

/// A random function of `input`: scalar-valued, or (when `vector_valued`) table-valued.
fn generate(rng: &mut Rng, input: Input, vector_valued: bool) -> Case {
    let depth = 2 + rng.below(3);
    let mut generator = Gen::new(rng, input);
    let (body, _) = if vector_valued {
        if generator.rng.chance(0.8) {
            generator.for_vector(depth)
        } else {
            let (vector, bound) = generator.vector(depth);
            (format!("(softmax {vector})"), bound)
        }
    } else {
        generator.compound(depth)
    };
    let guards = std::mem::take(&mut generator.guards);
    Case {
        input,
        body,
        vector_valued,
        guards,
    }
}

// ---------------------------------------------------------------------------------------------
// Checking one case.

#[derive(Default)]
struct Stats {
    cases: usize,
    run: usize,
    skipped: usize,
    comparisons: usize,
    /// Generated programs that do not type-check or do not run: the generator's fault.
    generator_failures: Vec<String>,
    /// Derivatives that disagree (or fail while the primal runs): dx's fault.
    ad_failures: Vec<String>,
}

impl Stats {
    fn summary(&self, name: &str) -> String {
        format!(
            "{name}: {} cases, {} run, {} skipped near a kink, {} comparisons, {} generator failures, {} derivative failures",
            self.cases,
            self.run,
            self.skipped,
            self.comparisons,
            self.generator_failures.len(),
            self.ad_failures.len()
        )
    }

    fn assert_ok(&self, name: &str) {
        let show = |failures: &[String]| -> String {
            failures
                .iter()
                .take(8)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n\n")
        };
        assert!(
            self.generator_failures.is_empty(),
            "{}\ngenerated programs that do not run:\n{}",
            self.summary(name),
            show(&self.generator_failures)
        );
        assert!(
            self.ad_failures.is_empty(),
            "{}\nderivatives that disagree:\n{}",
            self.summary(name),
            show(&self.ad_failures)
        );
    }
}

/// `point + scale * direction`.
fn shifted(point: &[f64], direction: &[f64], scale: f64) -> Vec<f64> {
    point
        .iter()
        .zip(direction)
        .map(|(p, d)| p + scale * d)
        .collect()
}

fn unit(dim: usize, axis: usize) -> Vec<f64> {
    (0..dim)
        .map(|k| if k == axis { 1.0 } else { 0.0 })
        .collect()
}

/// Whether every guard stays away from its kink at every point.
fn guards_clear(session: &mut Session, case: &Case, points: &[Vec<f64>]) -> Result<bool, String> {
    for guard in &case.guards {
        let func = format!("\\{}. {}", case.input.param(), guard.expr);
        for point in points {
            let expr = format!("({func}) {}", case.input.literal(point));
            let values =
                eval_numbers(session, &expr).map_err(|err| format!("guard `{expr}`: {err}"))?;
            let clear = match guard.kind {
                GuardKind::Threshold => values.iter().all(|value| value.abs() >= tol::GUARD_MARGIN),
                GuardKind::MaxGap => values.chunks(N).all(|row| {
                    let mut row = row.to_vec();
                    row.sort_by(|a, b| b.total_cmp(a));
                    row[0] - row[1] >= tol::GUARD_MARGIN
                }),
            };
            if !clear {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// Runs every check of one case and records the outcome in `stats`.
fn check_case(session: &mut Session, rng: &mut Rng, case: &Case, stats: &mut Stats) {
    stats.cases += 1;
    let input = case.input;
    let dim = input.dim();
    let func = case.func();
    let point: Vec<f64> = (0..dim).map(|_| rng.uniform(-1.5, 1.5)).collect();
    let tangent: Vec<f64> = (0..dim).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let cotangent: Vec<f64> = (0..N).map(|_| rng.uniform(-1.0, 1.0)).collect();
    let h = tol::FD_STEP;
    let describe = |what: &str| format!("program: {func}\nat: {}\n{what}", input.literal(&point));

    // The primal must run: otherwise the generator produced a bad program.
    let primal = match eval_numbers(session, &format!("({func}) {}", input.literal(&point))) {
        Ok(values) if values.iter().all(|value| value.is_finite()) => values,
        Ok(values) => {
            stats
                .generator_failures
                .push(describe(&format!("non-finite primal value {values:?}")));
            return;
        }
        Err(err) => {
            stats.generator_failures.push(describe(&err));
            return;
        }
    };
    let expected_len = if case.vector_valued { N } else { 1 };
    if primal.len() != expected_len {
        stats
            .generator_failures
            .push(describe(&format!("primal has {} elements", primal.len())));
        return;
    }

    let mut points = vec![
        point.clone(),
        shifted(&point, &tangent, h),
        shifted(&point, &tangent, -h),
    ];
    for axis in 0..dim {
        points.push(shifted(&point, &unit(dim, axis), h));
        points.push(shifted(&point, &unit(dim, axis), -h));
    }
    match guards_clear(session, case, &points) {
        Ok(true) => {}
        Ok(false) => {
            stats.skipped += 1;
            return;
        }
        Err(err) => {
            stats.generator_failures.push(describe(&err));
            return;
        }
    }
    stats.run += 1;

    let f_at = |session: &mut Session, at: &[f64]| -> Result<Vec<f64>, String> {
        eval_numbers(session, &format!("({func}) {}", input.literal(at)))
    };
    let mut failures = Vec::new();
    let mut compare =
        |failures: &mut Vec<String>, what: String, ad: f64, reference: f64, tolerance: f64| {
            stats.comparisons += 1;
            // A NaN on either side is a failure too.
            let err = rel_err(ad, reference);
            if err.is_nan() || err >= tolerance {
                failures.push(format!(
                    "{what}: derivative {ad:e}, reference {reference:e}"
                ));
            }
        };

    // jvp against central differences along the tangent.
    let jvp_expr = format!(
        "jvp ({func}) {} {}",
        input.literal(&point),
        input.literal(&tangent)
    );
    let jvp = eval_numbers(session, &jvp_expr);
    let plus = f_at(session, &points[1]);
    let minus = f_at(session, &points[2]);
    match (&jvp, plus, minus) {
        (Ok(jvp), Ok(plus), Ok(minus)) if jvp.len() == primal.len() => {
            for (k, value) in jvp.iter().enumerate() {
                let fd = (plus[k] - minus[k]) / (2.0 * h);
                compare(
                    &mut failures,
                    format!("jvp along {tangent:?}, element {k}"),
                    *value,
                    fd,
                    tol::FD_REL,
                );
            }
        }
        (Ok(jvp), Ok(_), Ok(_)) => {
            failures.push(format!("`{jvp_expr}` has {} elements", jvp.len()))
        }
        (Err(err), _, _) => failures.push(format!("`{jvp_expr}`: {err}")),
        (_, Err(err), _) | (_, _, Err(err)) => failures.push(format!("shifted primal: {err}")),
    }

    if case.vector_valued {
        // vjp against jvp: ⟨ct, J t⟩ = ⟨Jᵀ ct, t⟩.
        let vjp_expr = format!(
            "(\\z.\n  (y, pullback) = vjp ({func}) z\n  pullback {}) {}",
            table_lit(&cotangent),
            input.literal(&point)
        );
        match (eval_numbers(session, &vjp_expr), &jvp) {
            (Ok(pulled), Ok(jvp)) if pulled.len() == dim => {
                let lhs = dot(&cotangent, jvp);
                let rhs = dot(&pulled, &tangent);
                compare(
                    &mut failures,
                    format!("<ct, J t> = <J^T ct, t> with ct = {cotangent:?}"),
                    lhs,
                    rhs,
                    tol::DOT_REL,
                );
            }
            (Ok(pulled), Ok(_)) => {
                failures.push(format!("the pullback has {} elements", pulled.len()))
            }
            (Err(err), _) => failures.push(format!("`{vjp_expr}`: {err}")),
            (_, Err(_)) => {}
        }
    } else {
        // grad against central differences along each axis.
        let grad_expr = format!("grad ({func}) {}", input.literal(&point));
        match eval_numbers(session, &grad_expr) {
            Ok(grad) if grad.len() == dim => {
                for (axis, value) in grad.iter().enumerate() {
                    let plus = f_at(session, &points[3 + 2 * axis]);
                    let minus = f_at(session, &points[4 + 2 * axis]);
                    match (plus, minus) {
                        (Ok(plus), Ok(minus)) => {
                            let fd = (plus[0] - minus[0]) / (2.0 * h);
                            compare(
                                &mut failures,
                                format!("grad, component {axis}"),
                                *value,
                                fd,
                                tol::FD_REL,
                            );
                        }
                        (Err(err), _) | (_, Err(err)) => {
                            failures.push(format!("shifted primal: {err}"))
                        }
                    }
                }
            }
            Ok(grad) => failures.push(format!("`{grad_expr}` has {} elements", grad.len())),
            Err(err) => failures.push(format!("`{grad_expr}`: {err}")),
        }
    }
    if !failures.is_empty() {
        stats.ad_failures.push(describe(&failures.join("\n")));
    }
}

/// The user types the generated programs use: a struct and a data type of Float64s.
const USER_TYPES: &str = "\
struct Pt =
  a : Float64
  v : (Fin 3)=>Float64
data Sh =
  Ci(Float64)
  Re(Float64, Float64)
def sh_value(s: Sh) -> Float64 =
  case s of
    Ci(r) -> sin r
    Re(w, h) -> w * h
";

fn run_random_cases(input: Input, seed: u64, n_cases: usize, vector_valued_share: f64, name: &str) {
    let mut session = Session::new(SessionConfig::default());
    define(&mut session, USER_TYPES);
    let mut rng = Rng::new(seed);
    let mut stats = Stats::default();
    for _ in 0..n_cases {
        let vector_valued = rng.chance(vector_valued_share);
        let case = generate(&mut rng, input, vector_valued);
        check_case(&mut session, &mut rng, &case, &mut stats);
    }
    eprintln!("{}", stats.summary(name));
    stats.assert_ok(name);
}

/// The random programs above use every kind of effect the generator knows, so the checks
/// cover them.
#[test]
fn random_programs_draw_every_effect() {
    let mut rng = Rng::new(0x00AD_0001);
    let texts: Vec<String> = (0..200)
        .map(|_| {
            let vector_valued = rng.chance(0.3);
            generate(&mut rng, Input::Vector, vector_valued).body
        })
        .collect();
    for construct in ["+= ", "!", "for_ ", "while "] {
        let count = texts.iter().filter(|text| text.contains(construct)).count();
        assert!(count >= 3, "only {count} programs use `{construct}`");
    }
}

#[test]
fn random_programs_of_a_vector_against_finite_differences() {
    run_random_cases(Input::Vector, 0x00AD_0001, 200, 0.3, "vector input");
}

#[test]
fn random_programs_of_a_tuple_against_finite_differences() {
    run_random_cases(Input::VectorAndScalar, 0x00AD_0002, 100, 0.3, "tuple input");
}

// ---------------------------------------------------------------------------------------------
// Structure and cost of gradient programs.

/// Defines top-level values (or functions); every block must succeed.
fn define(session: &mut Session, src: &str) {
    for chunk in session.eval_source(src) {
        for output in chunk.outputs {
            if let dx_lang::session::Output::Error(diag) = output {
                panic!("defining `{src}` failed: {diag:?}");
            }
        }
    }
}

fn random_table(rng: &mut Rng, n: usize) -> String {
    let values: Vec<String> = (0..n).map(|_| lit(rng.uniform(-1.0, 1.0))).collect();
    format!("[{}]", values.join(", "))
}

#[test]
fn gradient_of_a_dot_product_does_not_grow_with_the_size() {
    let mut counts = Vec::new();
    for n in [10, 100, 1000] {
        let mut session = Session::new(SessionConfig::default());
        define(
            &mut session,
            &format!(
                "x : (Fin {n})=>Float64 = linspace (Fin {n}) 0.0 1.0\n\
                 y : (Fin {n})=>Float64 = for i. 1.0 - x[i]\n"
            ),
        );
        let (_, bulk) = session
            .compile_expr("grad (\\x. sum for i. x[i] * y[i]) x")
            .expect("the gradient compiles");
        assert_eq!(
            count_stmts(&bulk, |expr| matches!(expr, Expr::Build1(_))),
            0,
            "a build1 is left:\n{bulk}"
        );
        counts.push((n, count_stmts(&bulk, |_| true)));
    }
    eprintln!("gradient of a dot product: (size, statements) {counts:?}");
    assert!(
        counts.iter().all(|(_, count)| *count == counts[0].1),
        "statement counts differ with the size: {counts:?}"
    );
}

/// The cost of an expression's bulk program and its nesting depth.
fn measure(session: &mut Session, expr: &str) -> (u64, usize) {
    let (_, bulk) = session
        .compile_expr(expr)
        .unwrap_or_else(|diag| panic!("`{expr}` does not compile: {diag:?}"));
    (cost(&bulk), nesting_depth(&bulk))
}

/// The costs of `grad <func> <arg>` and of the primal `<func> <arg>`, and the nesting depth
/// of the primal.
struct GradientCost {
    primal: u64,
    grad: u64,
    depth: usize,
}

impl GradientCost {
    fn measure(session: &mut Session, func: &str, arg: &str) -> GradientCost {
        let (primal, depth) = measure(session, &format!("({func}) {arg}"));
        let (grad, _) = measure(session, &format!("grad ({func}) {arg}"));
        GradientCost {
            primal,
            grad,
            depth,
        }
    }

    fn ratio(&self) -> f64 {
        self.grad as f64 / self.primal as f64
    }

    /// [HuotShaikhha] Theorem 5.4: cost(grad) ≤ 4·3^p × cost(primal).
    fn check_bound(&self, func: &str) -> Result<(), String> {
        let bound = 4 * 3u64.pow(self.depth as u32) * self.primal;
        if self.grad <= bound {
            Ok(())
        } else {
            Err(format!(
                "{func}: the gradient costs {}, more than 4·3^{} × {} = {bound}",
                self.grad, self.depth, self.primal
            ))
        }
    }

    fn describe(&self) -> String {
        format!(
            "{:.2} ({} / {}, p = {})",
            self.ratio(),
            self.grad,
            self.primal,
            self.depth
        )
    }
}

const MLP: &str = "\\params.
    (w1, w2) = params
    hidden = for j. tanh (sum for k. w1[j, k] * mlp_input[k])
    out = for o. sum for j. w2[o, j] * hidden[j]
    sum for o. sq (out[o] - mlp_target[o])";

#[test]
fn gradients_are_cheap() {
    let mut session = Session::new(SessionConfig::default());
    define(&mut session, USER_TYPES);
    let mut rng = Rng::new(0x00AD_0003);
    let w1_rows: Vec<String> = (0..8).map(|_| random_table(&mut rng, 4)).collect();
    let w2_rows: Vec<String> = (0..1).map(|_| random_table(&mut rng, 8)).collect();
    let x_src = random_table(&mut rng, N);
    define(
        &mut session,
        &format!(
            "dot_x : (Fin 100)=>Float64 = linspace (Fin 100) 0.0 1.0\n\
             dot_y : (Fin 100)=>Float64 = for i. 1.0 - dot_x[i]\n\
             W1 : (Fin 8)=>(Fin 4)=>Float64 = [{}]\n\
             W2 : (Fin 1)=>(Fin 8)=>Float64 = [{}]\n\
             mlp_input : (Fin 4)=>Float64 = {}\n\
             mlp_target : (Fin 1)=>Float64 = [0.25]\n\
             x : (Fin {N})=>Float64 = {x_src}\n",
            w1_rows.join(", "),
            w2_rows.join(", "),
            random_table(&mut rng, 4),
        ),
    );
    let mut failures = Vec::new();

    let dot_func = "\\x. sum for i. x[i] * dot_y[i]";
    let dot = GradientCost::measure(&mut session, dot_func, "dot_x");
    let mlp = GradientCost::measure(&mut session, MLP, "(W1, W2)");
    eprintln!(
        "cheap gradient (grad / primal): dot product {}, two-layer MLP {}",
        dot.describe(),
        mlp.describe()
    );
    failures.extend(dot.check_bound(dot_func).err());
    failures.extend(mlp.check_bound(MLP).err());
    assert!(
        dot.ratio() < 6.0,
        "the gradient of a dot product costs {} times the primal",
        dot.ratio()
    );

    let mut ratios = Vec::new();
    let mut n_failed_generations = 0;
    while ratios.len() < 50 {
        let case = generate(&mut rng, Input::Vector, false);
        let func = case.func();
        if let Err(diag) = session.compile_expr(&format!("({func}) x")) {
            failures.push(format!(
                "generated program does not compile: {func}\n{diag:?}"
            ));
            n_failed_generations += 1;
            assert!(
                n_failed_generations < 10,
                "the generator fails:\n{}",
                failures.join("\n\n")
            );
            continue;
        }
        let costs = GradientCost::measure(&mut session, &func, "x");
        failures.extend(costs.check_bound(&func).err());
        ratios.push(format!("{:.2}/p{}", costs.ratio(), costs.depth));
    }
    eprintln!(
        "cheap gradient (grad / primal, nesting depth), random programs: {}",
        ratios.join(" ")
    );
    assert!(
        failures.is_empty(),
        "the cheap-gradient bound fails:\n{}",
        failures.join("\n\n")
    );
}

/// The number of loop statements (`fold`, `scan`) in every block reachable from `main` that
/// carry a table (a value of rank > 0).
fn loops_carrying_tables(program: &Program) -> usize {
    count_stmts(program, |expr| match expr {
        Expr::Fold(Fold { init, .. }) | Expr::Scan(Scan { init, .. }) => init
            .iter()
            .any(|atom| !program.atom_ty(atom).shape.is_empty()),
        _ => false,
    })
}

/// Reverse mode through a loop of n steps costs O(n): doubling the input of a loop-based
/// prelude function doubles the cost of its gradient (see Note [Reads of outer tables in a
/// reversed loop] in `ops::ad`). Accumulating the cotangent of `xs[i]` in a carry of the
/// backward loop makes it quadruple instead.
#[test]
fn gradients_through_loops_cost_linear_in_the_length() {
    const FUNCS: [&str; 5] = [
        "logsumexp",
        "maximum",
        "prod",
        "\\x. sum (cumsum x)",
        "\\x. sum (softmax x * x)",
    ];
    let mut failures = Vec::new();
    for func in FUNCS {
        let mut costs = Vec::new();
        for n in [1000, 2000, 4000] {
            let mut session = Session::new(SessionConfig::default());
            define(
                &mut session,
                &format!("x : (Fin {n})=>Float64 = linspace (Fin {n}) 0.0 1.0\n"),
            );
            let expr = format!("grad ({func}) x");
            let (_, bulk) = session
                .compile_expr(&expr)
                .unwrap_or_else(|diag| panic!("`{expr}` does not compile: {diag:?}"));
            if loops_carrying_tables(&bulk) != 0 {
                failures.push(format!("{func}: a loop carries a table:\n{bulk}"));
            }
            costs.push(cost(&bulk));
        }
        let ratios: Vec<f64> = costs
            .windows(2)
            .map(|pair| pair[1] as f64 / pair[0] as f64)
            .collect();
        eprintln!("gradient of {func}: costs {costs:?} at 1000, 2000, 4000 (ratios {ratios:.3?})");
        if ratios.iter().any(|ratio| !(1.8..=2.2).contains(ratio)) {
            failures.push(format!(
                "{func}: doubling the length multiplies the gradient's cost by {ratios:.3?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// `grad <func> <point>` against central finite differences along every axis, in Float64.
fn check_grad_against_fd(session: &mut Session, func: &str, point: &[f64]) -> Result<(), String> {
    let h = tol::FD_STEP;
    let f_at = |session: &mut Session, at: &[f64]| -> Result<f64, String> {
        let values = eval_numbers(session, &format!("({func}) {}", table_lit(at)))?;
        Ok(values[0])
    };
    let grad = eval_numbers(session, &format!("grad ({func}) {}", table_lit(point)))?;
    if grad.len() != point.len() {
        return Err(format!("the gradient has {} elements", grad.len()));
    }
    let mut failures = Vec::new();
    for (axis, value) in grad.iter().enumerate() {
        let plus = f_at(session, &shifted(point, &unit(point.len(), axis), h))?;
        let minus = f_at(session, &shifted(point, &unit(point.len(), axis), -h))?;
        let fd = (plus - minus) / (2.0 * h);
        let err = rel_err(*value, fd);
        if err.is_nan() || err >= tol::FD_REL {
            failures.push(format!(
                "component {axis}: derivative {value:e}, reference {fd:e}"
            ));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// Every function of `funcs` (of a table of six Float) has the gradient finite differences
/// give, at one point; the failures of all of them are reported together.
fn assert_grads_match_fd_at_six_points(funcs: &[&str]) {
    let point = [0.7, -0.4, 1.1, 0.3, -0.9, 0.5];
    let mut session = Session::new(SessionConfig::default());
    let failures: Vec<String> = funcs
        .iter()
        .filter_map(|func| {
            check_grad_against_fd(&mut session, func, &point)
                .err()
                .map(|err| format!("{func}:\n{err}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Stencils, whose gradients `simp` turns from scatters to the sums of the indices into
/// gathers summed over the filter (ScatterAsGather): a 1-D filter, one read backwards
/// (`i + 2 − a`), and a 2-D convolution of a matrix built from x, each against finite
/// differences.
#[test]
fn stencils_against_finite_differences() {
    const FUNCS: [&str; 3] = [
        "\\x. sum for i:(Fin 4). sq (sum for a:(Fin 3). x[(ordinal i + ordinal a) @ Fin 6] * (1.0 + n_to_f (ordinal a)))",
        "\\x. sum for i:(Fin 4). sin (sum for a:(Fin 3). x[(unsafe_nat_diff (ordinal i + 2) (ordinal a)) @ Fin 6] * (0.5 - n_to_f (ordinal a)))",
        "\\x.\n  m = for i:(Fin 2) j:(Fin 3). x[(3 * ordinal i + ordinal j) @ Fin 6]\n  sum for i:(Fin 1). sum for j:(Fin 2). tanh (sum for a:(Fin 2). sum for b:(Fin 2). m[(ordinal i + ordinal a) @ _, (ordinal j + ordinal b) @ _] * (0.3 + n_to_f (ordinal a) - 0.2 * n_to_f (ordinal b)))",
    ];
    assert_grads_match_fd_at_six_points(&FUNCS);
}

/// Loops that read outer tables, each on one of the three ways of finding the index after
/// the backward loop (Note [Reads of outer tables in a reversed loop]): the loop index
/// itself, a function of it (neighbours, wrapping around or reading out of range), and an
/// index computed from the carry; with a scan, a table read a row at a time, and a table
/// also used whole inside the loop (which keeps a carry).
#[test]
fn loops_reading_outer_tables_against_finite_differences() {
    const FUNCS: [&str; 7] = [
        // The loop index, and its neighbours (wrapping around).
        "\\x. fold(0.25, \\i c. sin (c * x[i] + x[((ordinal i + 5) `mod` 6) @ Fin 6] * x[((ordinal i + 1) `mod` 6) @ Fin 6]))",
        // The left neighbour reads out of range (zero) at i = 0.
        "\\x. fold(0.5, \\i c. c * 0.75 + x[i] * x[(n_to_i (ordinal i) - 1) @ Fin 6])",
        // An index computed from the carry.
        "\\x. fold(0.3, \\i c. sin (c + x[i] * x[(i_to_n (f_to_i (floor (abs c * 4.0))) `mod` 6) @ Fin 6]))",
        // A loop shorter than the table, reading it backwards.
        "\\x. fold(1.0, \\i:(Fin 4) c. c * cos x[unsafe_nat_diff 5 (ordinal i) @ Fin 6])",
        // A scan whose outputs read the table too.
        "\\x. sum (snd (scan(0.5, \\i c. (c * x[i], sin (c + x[i])))))",
        // Rows of a matrix built from x: after the BOT, gathers of x inside the loop.
        "\\x.\n  m = for i:(Fin 3) j:(Fin 2). x[((2 * ordinal i + ordinal j) `mod` 6) @ Fin 6]\n  fold(0.1, \\i c. tanh (c + sum (for j. m[i, j] * m[i, j] * c)))",
        // A table also used whole inside the loop: its cotangent keeps a carry.
        "\\x. fold(0.2, \\i c. c * x[i] + 0.1 * sum (for j. x[j] * c))",
    ];
    assert_grads_match_fd_at_six_points(&FUNCS);
}

#[test]
fn pullback_reuses_the_primal_intermediates() {
    let mut session = Session::new(SessionConfig::default());
    define(
        &mut session,
        "x : (Fin 3)=>Float64 = [0.3, -1.2, 0.7]\nct : (Fin 3)=>Float64 = [1.0, 2.0, 3.0]\n",
    );
    let expr = "(\\z.\n  (y, pullback) = vjp (\\x. for i. exp (sin x[i])) z\n  (y, pullback ct)) x";
    let (_, bulk) = session.compile_expr(expr).expect("the vjp compiles");
    let count = |prim: Prim| {
        count_stmts(
            &bulk,
            |expr| matches!(expr, Expr::Prim(PrimApp(p, _)) if *p == prim),
        )
    };
    assert_eq!(
        (count(Prim::Sin), count(Prim::Exp)),
        (1, 1),
        "the primal work is repeated:\n{bulk}"
    );
}
