//! The core IR parser: reads the text form of `core::print` back into a `Program`.
//!
//! Assumes: text in the printer's syntax (see `print.rs`); whitespace between tokens is free
//! and `;` starts a comment to the end of the line. Hand-written recursive descent.
//!
//! Guarantees: print → parse → print is the identity. Variables keep their printed numbers
//! (`%N` is `VarId(N)`), so the arena has `max N + 1` variables; numbers that appear nowhere
//! get a placeholder `[]f32` entry with no hint. Blocks are numbered in the order their `(`
//! appears, `main` first.
//!
//! The parser checks only what it needs to build the arena: every variable must be bound
//! somewhere (its binder gives its type), two binders of one variable must agree on its type,
//! a hint written at a use must be the binder's, and a primitive gets exactly its arity of
//! operands. Everything else (scope, single definition, typing) is the verifier's job, so
//! ill-formed programs can be written for verifier tests.

use super::ir::{ArrTy, Atom, Block, BlockId, Elem, Expr, Program, Scalar, Stmt, VarId, VarInfo};
use crate::prim::Prim;

/// The largest variable number accepted (the arena is allocated densely).
const MAX_VAR: u32 = 1 << 24;

/// Parses a program in the printer's syntax; errors are `line:column: message`.
pub fn parse_program(text: &str) -> Result<Program, String> {
    let mut parser = Parser {
        text,
        pos: 0,
        program: Program::new(),
        declared: Vec::new(),
        uses: Vec::new(),
    };
    parser.program()?;
    parser.finish()
}

struct Parser<'a> {
    text: &'a str,
    /// Byte offset of the next unread character.
    pos: usize,
    program: Program,
    /// Whether each variable number has a binder.
    declared: Vec<bool>,
    /// Every use: the variable, the hint written there, and where.
    uses: Vec<(VarId, Option<String>, usize)>,
}

type Res<T> = Result<T, String>;

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Characters of a literal's value (`-1.5e-3`, `NaN`, `inf`).
fn is_literal_char(c: char) -> bool {
    is_ident_char(c) || matches!(c, '.' | '+' | '-')
}

impl Parser<'_> {
    fn error_at<T>(&self, pos: usize, message: impl Into<String>) -> Res<T> {
        let before = &self.text[..pos.min(self.text.len())];
        let line = before.matches('\n').count() + 1;
        let column = before.chars().rev().take_while(|&c| c != '\n').count() + 1;
        Err(format!("{line}:{column}: {}", message.into()))
    }

    fn error<T>(&self, message: impl Into<String>) -> Res<T> {
        self.error_at(self.pos, message)
    }

    fn rest(&self) -> &str {
        &self.text[self.pos..]
    }

    fn skip_ws(&mut self) {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.pos += rest.len() - trimmed.len();
            if trimmed.starts_with(';') {
                self.pos += trimmed.find('\n').unwrap_or(trimmed.len());
            } else {
                return;
            }
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.rest().chars().next()
    }

    /// Consumes `token` if it comes next.
    fn eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, token: &str) -> Res<()> {
        if self.eat(token) {
            Ok(())
        } else {
            self.error(format!("expected `{token}`, found {}", self.found()))
        }
    }

    /// A description of what comes next, for error messages.
    fn found(&mut self) -> String {
        self.skip_ws();
        match self.rest().split_whitespace().next() {
            Some(token) => format!("`{}`", token.chars().take(20).collect::<String>()),
            None => "the end of the text".to_string(),
        }
    }

    /// Reads a run of characters satisfying `accept` (possibly empty), without skipping
    /// whitespace first.
    fn take_while(&mut self, accept: fn(char) -> bool) -> &str {
        let start = self.pos;
        let len = self.rest().find(|c: char| !accept(c)).unwrap_or(self.rest().len());
        self.pos += len;
        &self.text[start..start + len]
    }

    /// The identifier that comes next, without consuming it.
    fn peek_word(&mut self) -> &str {
        self.skip_ws();
        let rest = self.rest();
        let len = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
        &rest[..len]
    }

    fn word(&mut self) -> Res<String> {
        self.skip_ws();
        let word = self.take_while(is_ident_char).to_string();
        if word.is_empty() {
            return self.error(format!("expected a word, found {}", self.found()));
        }
        Ok(word)
    }

    fn usize(&mut self) -> Res<usize> {
        self.skip_ws();
        let start = self.pos;
        let digits = self.take_while(|c| c.is_ascii_digit());
        match digits.parse() {
            Ok(value) => Ok(value),
            Err(_) => self.error_at(start, "expected a size"),
        }
    }

    /// `[k, …]`
    fn usize_list(&mut self) -> Res<Vec<usize>> {
        self.expect("[")?;
        let mut list = Vec::new();
        if self.eat("]") {
            return Ok(list);
        }
        loop {
            list.push(self.usize()?);
            if self.eat("]") {
                return Ok(list);
            }
            self.expect(",")?;
        }
    }

    fn elem(&mut self) -> Res<Elem> {
        let start = self.pos;
        let name = self.take_while(is_ident_char);
        match Elem::from_name(name) {
            Some(elem) => Ok(elem),
            None => self.error_at(start, format!("unknown element type `{name}`")),
        }
    }

    /// `[shape]elem`
    fn ty(&mut self) -> Res<ArrTy> {
        let shape = self.usize_list()?;
        let elem = self.elem()?;
        Ok(ArrTy::new(shape, elem))
    }

    /// `%N` or `%N_hint`.
    fn var(&mut self) -> Res<(VarId, Option<String>)> {
        self.expect("%")?;
        let start = self.pos;
        let number = match self.take_while(|c| c.is_ascii_digit()).parse::<u32>() {
            Ok(number) if number <= MAX_VAR => number,
            _ => return self.error_at(start, "expected a variable number"),
        };
        let hint = if self.rest().starts_with('_') {
            self.pos += 1;
            Some(self.take_while(is_ident_char).to_string())
        } else {
            None
        };
        let var = VarId(number);
        self.grow_arena(var);
        Ok((var, hint))
    }

    fn grow_arena(&mut self, var: VarId) {
        while self.program.vars.len() <= var.0 as usize {
            self.program.new_var(ArrTy::scalar(Elem::F32), "");
            self.declared.push(false);
        }
    }

    /// `%N_hint: [shape]elem`, declaring the variable.
    fn binder(&mut self) -> Res<VarId> {
        self.skip_ws();
        let start = self.pos;
        let (var, hint) = self.var()?;
        self.expect(":")?;
        let ty = self.ty()?;
        let index = var.0 as usize;
        if self.declared[index] {
            if self.program.vars[var].ty != ty {
                return self.error_at(start, format!("{var} is bound again with another type"));
            }
        } else {
            self.declared[index] = true;
            self.program.vars[var] = VarInfo { ty, hint: hint.unwrap_or_default() };
        }
        Ok(var)
    }

    /// `binder, …` up to (not including) `end`; `()` or nothing for none.
    fn binder_list(&mut self, end: &str) -> Res<Vec<VarId>> {
        let mut binders = Vec::new();
        if self.eat("()") {
            return Ok(binders);
        }
        self.skip_ws();
        if self.rest().starts_with(end) {
            return Ok(binders);
        }
        loop {
            binders.push(self.binder()?);
            if !self.eat(",") {
                return Ok(binders);
            }
        }
    }

    fn atom(&mut self) -> Res<Atom> {
        self.skip_ws();
        let start = self.pos;
        if self.rest().starts_with('%') {
            let (var, hint) = self.var()?;
            self.uses.push((var, hint, start));
            return Ok(Atom::Var(var));
        }
        let value = self.take_while(is_literal_char).to_string();
        if !self.rest().starts_with(':') {
            return match value.as_str() {
                "true" => Ok(Atom::Lit(Scalar::Bool(true))),
                "false" => Ok(Atom::Lit(Scalar::Bool(false))),
                _ => self.error_at(start, format!("expected an atom, found {}", self.found())),
            };
        }
        self.pos += 1;
        let elem = self.elem()?;
        let scalar = match elem {
            Elem::F32 => value.parse().map(Scalar::F32).ok(),
            Elem::F64 => value.parse().map(Scalar::F64).ok(),
            Elem::I32 => value.parse().map(Scalar::I32).ok(),
            Elem::I64 => value.parse().map(Scalar::I64).ok(),
            Elem::U32 => value.parse().map(Scalar::U32).ok(),
            Elem::U64 => value.parse().map(Scalar::U64).ok(),
            Elem::Bool => value.parse().map(Scalar::Bool).ok(),
        };
        match scalar {
            Some(scalar) => Ok(Atom::Lit(scalar)),
            None => self.error_at(start, format!("`{value}` is not a {} literal", elem.name())),
        }
    }

    /// `open atom, … close`
    fn atom_list(&mut self, open: &str, close: &str) -> Res<Vec<Atom>> {
        self.expect(open)?;
        let mut atoms = Vec::new();
        if self.eat(close) {
            return Ok(atoms);
        }
        loop {
            atoms.push(self.atom()?);
            if self.eat(close) {
                return Ok(atoms);
            }
            self.expect(",")?;
        }
    }

    fn program(&mut self) -> Res<()> {
        if self.word()? != "program" {
            return self.error("expected `program`");
        }
        self.expect("(")?;
        let inputs = self.binder_list(")")?;
        self.program.inputs = inputs;
        self.expect(")")?;
        self.expect("{")?;
        let main = self.program.main;
        let block = self.body(Vec::new())?;
        self.program.blocks[main] = block;
        self.expect("}")?;
        self.skip_ws();
        if !self.rest().is_empty() {
            return self.error(format!("unexpected {} after the program", self.found()));
        }
        Ok(())
    }

    /// Statements, then `in results`.
    fn body(&mut self, params: Vec<VarId>) -> Res<Block> {
        let mut stmts = Vec::new();
        while self.peek_word() != "in" {
            if self.peek().is_none() {
                return self.error("expected `in` before the end of the text");
            }
            stmts.push(self.stmt()?);
        }
        self.word()?;
        let results = if self.eat("()") {
            Vec::new()
        } else {
            let mut results = vec![self.atom()?];
            while self.eat(",") {
                results.push(self.atom()?);
            }
            results
        };
        Ok(Block { params, stmts, results })
    }

    /// `(\params -> body)`
    fn block(&mut self) -> Res<BlockId> {
        self.expect("(")?;
        let block_id = self.program.new_block();
        self.expect("\\")?;
        let params = self.binder_list("->")?;
        self.expect("->")?;
        let block = self.body(params)?;
        self.expect(")")?;
        self.program.blocks[block_id] = block;
        Ok(block_id)
    }

    fn stmt(&mut self) -> Res<Stmt> {
        let binders = self.binder_list("=")?;
        self.expect("=")?;
        let expr = self.expr()?;
        Ok(Stmt { binders, expr })
    }

    fn expr(&mut self) -> Res<Expr> {
        self.skip_ws();
        let start = self.pos;
        if self.rest().starts_with('%') {
            return Ok(Expr::Atom(self.atom()?));
        }
        // A literal is a word followed by `:` (or `true`/`false`); anything else is a keyword.
        let word = self.take_while(is_literal_char).to_string();
        if self.rest().starts_with(':') || word == "true" || word == "false" {
            self.pos = start;
            return Ok(Expr::Atom(self.atom()?));
        }
        let expr = match word.as_str() {
            "build1" => Expr::Build1 { size: self.usize()?, body: self.block()? },
            "index" => Expr::Index { array: self.atom()?, index: self.atom_list("[", "]")? },
            "sumOuter" => Expr::SumOuter(self.atom()?),
            "gather" => Expr::Gather {
                shape: self.usize_list()?,
                array: self.atom()?,
                body: self.block()?,
            },
            "scatter" => Expr::Scatter {
                shape: self.usize_list()?,
                array: self.atom()?,
                body: self.block()?,
            },
            "table" => Expr::Table(self.atom_list("[", "]")?),
            "replicate" => Expr::Replicate { count: self.usize()?, array: self.atom()? },
            "tr" => Expr::Transpose { perm: self.usize_list()?, array: self.atom()? },
            "reshape" => Expr::Reshape { shape: self.usize_list()?, array: self.atom()? },
            "cond" => Expr::Cond {
                cond: self.atom()?,
                then_block: self.block()?,
                else_block: self.block()?,
            },
            "iota" => Expr::Iota(self.usize()?),
            "fold" => Expr::Fold {
                size: self.usize()?,
                init: self.atom_list("(", ")")?,
                body: self.block()?,
            },
            "scan" => Expr::Scan {
                size: self.usize()?,
                init: self.atom_list("(", ")")?,
                body: self.block()?,
            },
            name => match Prim::from_name(name) {
                Some(prim) => {
                    let operands =
                        (0..prim.arity()).map(|_| self.atom()).collect::<Res<Vec<_>>>()?;
                    Expr::Prim(prim, operands)
                }
                None => return self.error_at(start, format!("unknown expression `{name}`")),
            },
        };
        Ok(expr)
    }

    /// Checks the uses against the binders.
    fn finish(self) -> Res<Program> {
        for (var, hint, pos) in &self.uses {
            if !self.declared[var.0 as usize] {
                return self.error_at(*pos, format!("{var} is never bound"));
            }
            let bound_hint = &self.program.vars[*var].hint;
            if let Some(hint) = hint {
                if hint != bound_hint {
                    return self.error_at(
                        *pos,
                        format!("{var} is bound as `{var}_{bound_hint}`, not `{var}_{hint}`"),
                    );
                }
            }
        }
        Ok(self.program)
    }
}
