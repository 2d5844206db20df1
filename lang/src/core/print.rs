//! The core IR printer: a deterministic, indented text form that `core::parse` reads back
//! (print → parse → print is the identity).
//!
//! Syntax (one statement per line; a nested block opens at the end of its statement's line
//! and closes after its `in` line):
//!
//! ```text
//! program(%0_xs: [4]f32, %1: []i64) {
//!   %2_ys: [4]f32 = build1 4 (\%3_i: []i64 ->
//!     %4: []f32 = index %0_xs [%3_i]
//!     %5: []f32 = mul %4 1.5:f32
//!     in %5)
//!   %6: []f32, %7: [3]i64 = scan 3 (0.0:f32) (\%8: []i64, %9: []f32 ->
//!     %10: []f32 = sumOuter %2_ys
//!     %11: []f32 = add %9 %10
//!     in %11, %8)
//!   %12: []bool = lt %1 3:i64
//!   %13: []f32 = cond %12 (\ ->
//!     in %6) (\ ->
//!     in 0.0:f32)
//!   in %2_ys, %13
//! }
//! ```
//!
//! - Variables print as `%N` (N is the `VarId`), followed by `_hint` when the variable has a
//!   hint (characters outside `[A-Za-z0-9_.]` print as `_`; a `.` names a field: `%3_p.x`). Every binder (inputs, params,
//!   statement binders) carries its type `[shape]elem`, after `lin` for a variable the
//!   program is linear in (`%7_x_dot: lin [4]f32`, the tangents and cotangents of the
//!   `linear` and `transposed` stages; `VarInfo::linear`).
//! - Literals carry their element type: `1.5:f32`, `-3:i64`, `NaN:f64`, `inf:f32`; booleans
//!   are `true` and `false`. Floats print in Rust's shortest round-trip form.
//! - Expressions: an atom; `<prim name> a b …`; `build1 k BLOCK`; `index a [i, j]`;
//!   `sumOuter a`; `gather [sh] a BLOCK`; `scatter [sh] a BLOCK`; `table [a, b]`;
//!   `replicate k a`; `tr [perm] a`; `reshape [sh] a`; `cond c BLOCK BLOCK`; `iota n`;
//!   `fold k (init, …) BLOCK`; `scan k (init, …) BLOCK`.
//! - A block is `(\params -> NEWLINE statements in results)`; no params print as `(\ ->`, no
//!   results (or no binders) as `()`.
//! - `;` starts a comment running to the end of the line (`annotated` puts verifier errors
//!   there).
//!
//! Block ids and the source map are not printed; variables are not renumbered (run `compact`
//! first for dense numbers).

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use super::ir::{
    ArrTy, Atom, BlockId, Build1, Cond, CustomJvp, CustomLinear, CustomVjp, Derivative, Expr, Fold,
    Gather, Index, Iota, Monoid, PrimApp, Program, Replicate, Reshape, Scalar, Scan, Scatter, Stmt,
    SumOuter, Table, Transpose, VarId, While, WhileReverse,
};

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut printer = Printer {
            program: self,
            out: String::new(),
            notes: &Notes::default(),
        };
        printer.program();
        f.write_str(&printer.out)
    }
}

/// Comments to print beside the IR: by variable (on the line that binds it), by block (on
/// its `in` line) and for the whole program (on the header line).
#[derive(Clone, Debug, Default)]
pub struct Notes {
    pub by_var: BTreeMap<VarId, Vec<String>>,
    pub by_block: BTreeMap<BlockId, Vec<String>>,
    pub program: Vec<String>,
}

/// The program printed with comments (`; note`) beside the lines they concern. The result
/// still parses.
pub fn annotated(program: &Program, notes: &Notes) -> String {
    let mut printer = Printer {
        program,
        out: String::new(),
        notes,
    };
    printer.program();
    printer.out
}

/// A type as printed: `[4, 3]f32`, `[]i64`.
pub fn ty_text(ty: &ArrTy) -> String {
    format!("{}{}", shape_text(&ty.shape), ty.elem.name())
}

/// A shape as printed: `[4, 3]`.
pub fn shape_text(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|dim| dim.to_string()).collect();
    format!("[{}]", dims.join(", "))
}

/// A variable as printed: `%5` or `%5_hint`. Variables out of range print without a hint.
pub fn var_text(program: &Program, var: VarId) -> String {
    let hint = program
        .vars
        .get(var)
        .map(|info| info.hint.as_str())
        .unwrap_or("");
    if hint.is_empty() {
        format!("{var}")
    } else {
        let hint: String = hint
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        format!("{var}_{hint}")
    }
}

/// A literal as printed: `1.5:f32`, `-3:i64`, `true`.
pub fn scalar_text(scalar: Scalar) -> String {
    match scalar {
        Scalar::F32(x) => format!("{x:?}:f32"),
        Scalar::F64(x) => format!("{x:?}:f64"),
        Scalar::I32(x) => format!("{x}:i32"),
        Scalar::I64(x) => format!("{x}:i64"),
        Scalar::U32(x) => format!("{x}:u32"),
        Scalar::U64(x) => format!("{x}:u64"),
        Scalar::Bool(b) => format!("{b}"),
    }
}

/// An atom as printed.
pub fn atom_text(program: &Program, atom: &Atom) -> String {
    match atom {
        Atom::Var(var) => var_text(program, *var),
        Atom::Lit(scalar) => scalar_text(*scalar),
    }
}

/// The keyword an expression prints with (a primitive's name for `prim`).
pub fn expr_name(expr: &Expr) -> String {
    let keyword = match expr {
        Expr::Atom(_) => "copy",
        Expr::Prim(PrimApp(prim, _)) => return prim.name(),
        Expr::Build1(_) => "build1",
        Expr::Index(_) => "index",
        Expr::SumOuter(_) => "sumOuter",
        Expr::Gather(_) => "gather",
        Expr::Scatter(_) => "scatter",
        Expr::Table(_) => "table",
        Expr::Replicate(_) => "replicate",
        Expr::Transpose(_) => "tr",
        Expr::Reshape(_) => "reshape",
        Expr::Cond(_) => "cond",
        Expr::Iota(_) => "iota",
        Expr::Fold(_) => "fold",
        Expr::Scan(_) => "scan",
        Expr::While(_) => "while",
        Expr::WhileReverse(_) => "while_reverse",
        Expr::Monoid(Monoid { kind, .. }) => kind.name(),
        Expr::CustomVjp(_) => "custom_vjp",
        Expr::CustomJvp(_) => "custom_jvp",
        Expr::CustomLinear(CustomLinear {
            transposed: false, ..
        }) => "custom_linear",
        Expr::CustomLinear(CustomLinear {
            transposed: true, ..
        }) => "custom_linear_t",
        Expr::Derivative(Derivative { mode, .. }) => match mode {
            super::ir::AdMode::Jvp => "jvp",
            super::ir::AdMode::Vjp => "vjp",
        },
    };
    keyword.to_string()
}

/// One statement as printed at nesting depth `depth` (its binders with their types, then
/// its expression, nested blocks included).
pub fn stmt_text(program: &Program, stmt: &Stmt, depth: usize) -> String {
    let mut printer = Printer {
        program,
        out: String::new(),
        notes: &Notes::default(),
    };
    printer.stmt(stmt, depth);
    printer.out
}

struct Printer<'a> {
    program: &'a Program,
    out: String,
    notes: &'a Notes,
}

impl Printer<'_> {
    fn binder(&self, var: VarId) -> String {
        let ty = match self.program.vars.get(var) {
            Some(info) if info.linear => format!("lin {}", ty_text(&info.ty)),
            Some(info) => ty_text(&info.ty),
            None => "<out of range>".to_string(),
        };
        format!("{}: {ty}", var_text(self.program, var))
    }

    fn binders(&self, vars: &[VarId]) -> String {
        if vars.is_empty() {
            return "()".to_string();
        }
        vars.iter()
            .map(|&var| self.binder(var))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn atoms(&self, atoms: &[Atom], separator: &str) -> String {
        atoms
            .iter()
            .map(|atom| atom_text(self.program, atom))
            .collect::<Vec<_>>()
            .join(separator)
    }

    fn comment(&mut self, notes: &[String]) {
        for note in notes {
            // A note is one line: newlines would end the comment early.
            let _ = write!(self.out, "  ; {}", note.replace(['\n', '\r'], " "));
        }
    }

    fn var_notes(&self, vars: &[VarId]) -> Vec<String> {
        vars.iter()
            .filter_map(|var| self.notes.by_var.get(var))
            .flatten()
            .cloned()
            .collect()
    }

    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
    }

    fn program(&mut self) {
        let program = self.program;
        let _ = write!(
            self.out,
            "program({}) {{",
            self.binders_or_empty(&program.inputs)
        );
        let mut notes = self.notes.program.clone();
        notes.extend(self.var_notes(&program.inputs));
        self.comment(&notes);
        self.out.push('\n');
        self.body(program.main, 1);
        self.out.push('}');
    }

    /// Inputs print as a plain list: `program()` when there are none.
    fn binders_or_empty(&self, vars: &[VarId]) -> String {
        if vars.is_empty() {
            String::new()
        } else {
            self.binders(vars)
        }
    }

    /// The statements and `in` line of a block, each line indented by `depth`; the `in` line
    /// has no newline (the caller closes it).
    fn body(&mut self, block_id: BlockId, depth: usize) {
        let Some(block) = self.program.blocks.get(block_id) else {
            // The note goes on its own line, so that the closing parenthesis stays code.
            self.indent(depth);
            let _ = writeln!(self.out, "; block {block_id} is out of range");
            self.indent(depth);
            self.out.push_str("in ()");
            return;
        };
        for stmt in &block.stmts {
            self.indent(depth);
            self.stmt(stmt, depth);
            self.out.push('\n');
        }
        // Block notes go on their own lines: after the `in` line, a comment would swallow
        // the closing parenthesis.
        let notes = self
            .notes
            .by_block
            .get(&block_id)
            .cloned()
            .unwrap_or_default();
        for note in notes {
            self.indent(depth);
            self.comment(std::slice::from_ref(&note));
            self.out.push('\n');
        }
        self.indent(depth);
        if block.results.is_empty() {
            self.out.push_str("in ()");
        } else {
            let results = self.atoms(&block.results, ", ");
            let _ = write!(self.out, "in {results}");
        }
        if block_id == self.program.main {
            self.out.push('\n');
        }
    }

    fn stmt(&mut self, stmt: &Stmt, depth: usize) {
        let start = self.out.len();
        let _ = write!(self.out, "{} = ", self.binders(&stmt.binders));
        self.expr(&stmt.expr, depth);
        // The statement's notes go at the end of its first line.
        let notes = self.var_notes(&stmt.binders);
        if !notes.is_empty() {
            let line_end = self.out[start..]
                .find('\n')
                .map_or(self.out.len(), |at| start + at);
            let tail = self.out.split_off(line_end);
            self.comment(&notes);
            self.out.push_str(&tail);
        }
    }

    fn expr(&mut self, expr: &Expr, depth: usize) {
        let program = self.program;
        let text = match expr {
            Expr::Atom(atom) => atom_text(program, atom),
            Expr::Prim(PrimApp(prim, atoms)) => {
                format!("{} {}", prim.name(), self.atoms(atoms, " "))
            }
            Expr::Build1(Build1 { size, body }) => {
                let _ = write!(self.out, "build1 {size} ");
                return self.block(*body, depth);
            }
            Expr::Index(Index { array, index }) => {
                format!(
                    "index {} [{}]",
                    atom_text(program, array),
                    self.atoms(index, ", ")
                )
            }
            Expr::SumOuter(SumOuter(array)) => format!("sumOuter {}", atom_text(program, array)),
            Expr::Gather(Gather { shape, array, body })
            | Expr::Scatter(Scatter { shape, array, body }) => {
                let keyword = expr_name(expr);
                let _ = write!(
                    self.out,
                    "{keyword} {} {} ",
                    shape_text(shape),
                    atom_text(program, array)
                );
                return self.block(*body, depth);
            }
            Expr::Table(Table(atoms)) => format!("table [{}]", self.atoms(atoms, ", ")),
            Expr::Replicate(Replicate { count, array }) => {
                format!("replicate {count} {}", atom_text(program, array))
            }
            Expr::Transpose(Transpose { perm, array }) => {
                format!("tr {} {}", shape_text(perm), atom_text(program, array))
            }
            Expr::Reshape(Reshape { shape, array }) => {
                format!(
                    "reshape {} {}",
                    shape_text(shape),
                    atom_text(program, array)
                )
            }
            Expr::Cond(Cond {
                cond,
                then_block,
                else_block,
            }) => {
                let _ = write!(self.out, "cond {} ", atom_text(program, cond));
                self.block(*then_block, depth);
                self.out.push(' ');
                return self.block(*else_block, depth);
            }
            Expr::Iota(Iota(size)) => format!("iota {size}"),
            Expr::Fold(Fold { size, init, body }) | Expr::Scan(Scan { size, init, body }) => {
                let keyword = expr_name(expr);
                let _ = write!(self.out, "{keyword} {size} ({}) ", self.atoms(init, ", "));
                return self.block(*body, depth);
            }
            Expr::While(While { init, body }) => {
                let _ = write!(self.out, "while ({}) ", self.atoms(init, ", "));
                return self.block(*body, depth);
            }
            Expr::WhileReverse(WhileReverse {
                init,
                seeds,
                body,
                back,
            }) => {
                let _ = write!(
                    self.out,
                    "while_reverse ({}) ({}) ",
                    self.atoms(init, ", "),
                    self.atoms(seeds, ", ")
                );
                self.block(*body, depth);
                self.out.push(' ');
                return self.block(*back, depth);
            }
            Expr::CustomVjp(CustomVjp {
                args,
                primal,
                fwd,
                bwd,
            }) => {
                let _ = write!(self.out, "custom_vjp ({}) ", self.atoms(args, ", "));
                self.block(*primal, depth);
                self.out.push(' ');
                self.block(*fwd, depth);
                self.out.push(' ');
                return self.block(*bwd, depth);
            }
            Expr::CustomJvp(CustomJvp { args, primal, lin }) => {
                let _ = write!(self.out, "custom_jvp ({}) ", self.atoms(args, ", "));
                self.block(*primal, depth);
                self.out.push(' ');
                return self.block(*lin, depth);
            }
            Expr::CustomLinear(CustomLinear {
                residuals: primals,
                operands: seeds,
                bwd: func,
                ..
            })
            | Expr::Monoid(Monoid {
                arrays: primals,
                init: seeds,
                op: func,
                ..
            })
            | Expr::Derivative(Derivative {
                primals,
                seeds,
                func,
                ..
            }) => {
                let keyword = expr_name(expr);
                let _ = write!(
                    self.out,
                    "{keyword} ({}) ({}) ",
                    self.atoms(primals, ", "),
                    self.atoms(seeds, ", ")
                );
                return self.block(*func, depth);
            }
        };
        self.out.push_str(&text);
    }

    /// `(\params ->` NEWLINE body `)`, where the body is indented one level deeper than the
    /// statement that owns the block.
    fn block(&mut self, block_id: BlockId, depth: usize) {
        let params = self
            .program
            .blocks
            .get(block_id)
            .map(|block| block.params.clone());
        let params = params.unwrap_or_default();
        let params_text = if params.is_empty() {
            String::new()
        } else {
            self.binders(&params)
        };
        let _ = write!(self.out, "(\\{params_text} ->");
        let notes = self.var_notes(&params);
        self.comment(&notes);
        self.out.push('\n');
        self.body(block_id, depth + 1);
        self.out.push(')');
    }
}
