//! Lowering of `show`: the text of a value as a table of characters, one elementwise
//! computation over the positions of the text (Note [Texts of run-time values] in
//! `check::show`, whose [`layout`] says where each part goes).

use super::lower::{bug, error, leaf_types, Lowerer, Result, SVal};
use crate::check::builtins::Class;
use crate::check::show::{layout, Layout, NoLayout};
use crate::check::types::{BaseTy, Size, Ty};
use crate::core::ir::{Atom, Scalar};
use crate::prim::Prim;
use crate::syntax::Span;

const NUL: u32 = 0;

impl Lowerer<'_> {
    /// `show value` for a value of type `ty`; `text_ty` is the `List Char` it has.
    pub(super) fn show(&mut self, value: &SVal, ty: &Ty, text_ty: &Ty, span: Span) -> Result<SVal> {
        let ty = self.concrete(ty, span)?;
        let layout = match layout(self.env, &ty) {
            Ok(layout) => layout,
            Err(NoLayout::Never(message)) => return error(span, message),
            Err(NoLayout::Unknown) => return bug(span, "`show` of a type not known"),
        };
        let width = self.ix_size(&Ty::Fin(layout.width()), span)?;
        let leaves = self.leaves(value, span)?;
        let Ty::Data(list) = self.concrete(text_ty, span)? else {
            return bug(span, "`show` gives a non-list");
        };
        let text_ty = Ty::table(Ty::Fin(Size::Const(width as u64)), Ty::Base(BaseTy::Word8));
        let text = self.build_table(&text_ty, "text", span, |cx, position| {
            Ok(vec![cx.text_at(&layout, &leaves, position, span)?])
        })?;
        let len = SVal::Arr(Atom::Lit(Scalar::U32(width as u32)));
        self.constructor(list, 0, vec![len, text], span)
    }

    /// The character at `position` (an `i64`, possibly outside the text) of the text laid
    /// out by `layout` from `leaves`; `0` outside it.
    fn text_at(
        &mut self,
        layout: &Layout,
        leaves: &[Atom],
        position: Atom,
        span: Span,
    ) -> Result<Atom> {
        match layout {
            Layout::Scalar { op, .. } => {
                self.prim(Prim::Show(*op), vec![leaves[0], position], span)
            }
            Layout::Lit(text) => {
                let mut out = char_lit(NUL);
                for (at, byte) in text.bytes().enumerate() {
                    let here = self.prim(Prim::Eq, vec![position, index_lit(at)], span)?;
                    out = self.prim(Prim::Select, vec![here, char_lit(byte.into()), out], span)?;
                }
                Ok(out)
            }
            Layout::Seq(parts) => {
                let (mut out, mut offset, mut rest) = (char_lit(NUL), 0, leaves);
                for part in parts {
                    let width = self.const_width(part, span)?;
                    let count = leaf_count(part);
                    let local = self.prim(Prim::Sub, vec![position, index_lit(offset)], span)?;
                    let here = self.within(local, width, span)?;
                    let ch = self.text_at(part, &rest[..count], local, span)?;
                    out = self.prim(Prim::Select, vec![here, ch, out], span)?;
                    (offset, rest) = (offset + width, &rest[count..]);
                }
                Ok(out)
            }
            Layout::Table { elem, .. } => {
                let len = self.atom_ty(&leaves[0]).shape[0];
                let total = self.const_width(layout, span)?;
                let width = self.const_width(elem, span)?;
                let open = self.prim(Prim::Eq, vec![position, index_lit(0)], span)?;
                let close = self.prim(Prim::Eq, vec![position, index_lit(total - 1)], span)?;
                let mut out = char_lit(NUL);
                if len > 0 {
                    // Element `i` starts at `1 + i·(width + 2)`; then `, ` (blank after the last).
                    let cell = width + 2;
                    let inner = self.prim(Prim::Sub, vec![position, index_lit(1)], span)?;
                    let row = self.prim(Prim::IDiv, vec![inner, index_lit(cell)], span)?;
                    let row = self.prim(Prim::Max, vec![row, index_lit(0)], span)?;
                    let row = self.prim(Prim::Min, vec![row, index_lit(len - 1)], span)?;
                    let start = self.prim(Prim::Mul, vec![row, index_lit(cell)], span)?;
                    let local = self.prim(Prim::Sub, vec![inner, start], span)?;
                    let mut element = Vec::new();
                    for leaf in leaves {
                        match self.index_value(&SVal::Arr(*leaf), row, span)? {
                            SVal::Arr(atom) => element.push(atom),
                            _ => return bug(span, "a leaf indexed to a non-array"),
                        }
                    }
                    let ch = self.text_at(elem, &element, local, span)?;
                    let comma = self.prim(Prim::Eq, vec![local, index_lit(width)], span)?;
                    let space = self.prim(Prim::Eq, vec![local, index_lit(width + 1)], span)?;
                    let last = self.prim(Prim::Eq, vec![row, index_lit(len - 1)], span)?;
                    let separator = self.prim(
                        Prim::Select,
                        vec![space, char_lit(b' '.into()), char_lit(NUL)],
                        span,
                    )?;
                    let separator = self.prim(
                        Prim::Select,
                        vec![comma, char_lit(b','.into()), separator],
                        span,
                    )?;
                    let separator =
                        self.prim(Prim::Select, vec![last, char_lit(NUL), separator], span)?;
                    let in_element = self.prim(Prim::Lt, vec![local, index_lit(width)], span)?;
                    out = self.prim(Prim::Select, vec![in_element, ch, separator], span)?;
                }
                let out = self.prim(Prim::Select, vec![close, char_lit(b']'.into()), out], span)?;
                self.prim(Prim::Select, vec![open, char_lit(b'['.into()), out], span)
            }
            Layout::Tagged(cons) => {
                let (tag, mut rest) = (leaves[0], &leaves[1..]);
                let mut out = char_lit(NUL);
                for (con, part) in cons.iter().enumerate() {
                    let count = leaf_count(part);
                    let ch = self.text_at(part, &rest[..count], position, span)?;
                    let chosen = self.prim(
                        Prim::Eq,
                        vec![tag, Atom::Lit(Scalar::U32(con as u32))],
                        span,
                    )?;
                    out = self.prim(Prim::Select, vec![chosen, ch, out], span)?;
                    rest = &rest[count..];
                }
                Ok(out)
            }
            Layout::Instance { ty, .. } => {
                let value = self.assemble(ty, leaves.to_vec());
                let Some(text) =
                    self.call_user_method(Class::Show, "show", ty, vec![value], span)?
                else {
                    return bug(span, "a `Show` instance that lowering cannot find");
                };
                let text = self.leaves(&text, span)?;
                self.chars_at(text[1], position, span)
            }
            Layout::Chars { .. } => self.chars_at(leaves[1], position, span),
        }
    }

    /// The character at `position` of a table of characters (`0` outside it).
    fn chars_at(&mut self, chars: Atom, position: Atom, span: Span) -> Result<Atom> {
        let len = self.atom_ty(&chars).shape[0];
        let Some(ch) = self.element(chars, position, len, span)? else {
            return Ok(char_lit(NUL));
        };
        let here = self.within(position, len, span)?;
        self.prim(Prim::Select, vec![here, ch, char_lit(NUL)], span)
    }

    /// Whether `0 <= position < width`.
    fn within(&mut self, position: Atom, width: usize, span: Span) -> Result<Atom> {
        let low = self.prim(Prim::Ge, vec![position, index_lit(0)], span)?;
        let high = self.prim(Prim::Lt, vec![position, index_lit(width)], span)?;
        self.prim(Prim::And, vec![low, high], span)
    }

    fn const_width(&self, layout: &Layout, span: Span) -> Result<usize> {
        self.ix_size(&Ty::Fin(layout.width()), span)
    }
}

/// How many leaves of the value a layout reads (see [`Layout`]).
fn leaf_count(layout: &Layout) -> usize {
    match layout {
        Layout::Scalar { .. } => 1,
        Layout::Lit(_) => 0,
        Layout::Seq(parts) => parts.iter().map(leaf_count).sum(),
        Layout::Table { elem, .. } => leaf_count(elem),
        Layout::Tagged(cons) => 1 + cons.iter().map(leaf_count).sum::<usize>(),
        Layout::Chars { .. } => 2,
        Layout::Instance { ty, .. } => leaf_types(ty).map_or(0, |leaves| leaves.len()),
    }
}

/// An index (an `i64`) as a literal.
pub(super) fn index_lit(value: usize) -> Atom {
    Atom::Lit(Scalar::I64(value as i64))
}

fn char_lit(byte: u32) -> Atom {
    Atom::Lit(Scalar::U32(byte))
}
