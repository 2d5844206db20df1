//! Files read when a block is compiled: the built-ins `file_length` and `file_byte` that the
//! prelude's `read_file` is made of.

// Note [Files read when compiled]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Dex's `read_file` reads a file when the program runs. dx's shapes are static, and a file's
// length is the size of the list `read_file` gives, so dx reads the file when the block that
// reads it is compiled: for a script, the same moment. The file's name must then be known: a
// string literal, passed down through functions (every function is inlined). Its bytes
// become a table literal at the start of the main block (once per file and block, visible in
// every loop body), its length a constant; `file_byte(path, k)` reads the table. Sizes
// computed from the bytes (an image's width in its header) are then sizes known from values
// (Note [Sizes known from values] in `lower.rs`). A relative name starts from the script's
// folder, as `load_npy`'s does.

use std::path::PathBuf;
use std::rc::Rc;

use super::lower::{error, LowerError, LowerErrorKind, Lowerer, Result, SVal};
use crate::core::ir::{ArrTy, Atom, Elem, Expr, Index, Scalar, Stmt, Table};
use crate::syntax::Span;

impl Lowerer<'_> {
    /// `file_length path`.
    pub(super) fn file_length(&mut self, path: &SVal, span: Span) -> Result<SVal> {
        let (_, len) = self.file_table(path, span)?;
        Ok(SVal::Arr(Atom::Lit(Scalar::U32(len as u32))))
    }

    /// `file_byte(path, k)`: the `k`-th byte (out of range reads zero, as an index does).
    pub(super) fn file_byte(&mut self, path: &SVal, k: &SVal, span: Span) -> Result<SVal> {
        let (table, _) = self.file_table(path, span)?;
        let SVal::Arr(k) = k else {
            return error(span, "`file_byte` takes a `Nat` position");
        };
        let index = self.cast(*k, Elem::I64, span)?;
        let byte = self.emit1(
            Expr::from(Index {
                array: table,
                index: vec![index],
            }),
            ArrTy::new(Vec::new(), Elem::U32),
            "byte",
            span,
        );
        Ok(SVal::Arr(byte))
    }

    /// A string literal's text by the variable of its table of bytes (`Lowerer::string`).
    pub(super) fn remember_text(&mut self, table: Atom, text: &str) {
        if let Atom::Var(var) = table {
            self.texts.insert(var, Rc::from(text));
        }
    }

    /// The table of the bytes of the file `path` names, bound at the start of the main block,
    /// and its length.
    fn file_table(&mut self, path: &SVal, span: Span) -> Result<(Atom, usize)> {
        let Some(name) = self.known_text(path) else {
            return error(
                span,
                "a file is read when the block is compiled, so its name must be known then: \
                 a string literal (passed down through functions)",
            );
        };
        let path = match &self.env.data_dir {
            Some(dir) if std::path::Path::new(&*name).is_relative() => dir.join(&*name),
            _ => PathBuf::from(&*name),
        };
        if let Some(&known) = self.files.get(&path) {
            return Ok(known);
        }
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) => {
                return Err(LowerError {
                    kind: LowerErrorKind::File,
                    message: format!("read_file \"{name}\": {err}"),
                    span,
                })
            }
        };
        let table = self
            .program
            .new_var(ArrTy::new(vec![bytes.len()], Elem::U32), "file");
        let literal = bytes
            .iter()
            .map(|&byte| Atom::Lit(Scalar::U32(u32::from(byte))))
            .collect();
        let main = self.program.main;
        self.program.source_map.insert(table, span);
        self.program.blocks[main].stmts.insert(
            0,
            Stmt {
                binders: vec![table],
                expr: Expr::from(Table(literal)),
            },
        );
        self.bound_in.insert(table, main);
        let known = (Atom::Var(table), bytes.len());
        self.files.insert(path, known);
        Ok(known)
    }

    /// The text of a string whose bytes are a literal: a `List Char` value made by
    /// `Lowerer::string`.
    fn known_text(&self, value: &SVal) -> Option<Rc<str>> {
        let SVal::Tuple(fields) = value else {
            return None;
        };
        match fields.get(1)? {
            SVal::Arr(Atom::Var(var)) => self.texts.get(var).cloned(),
            _ => None,
        }
    }
}
