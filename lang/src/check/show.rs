//! `show`: the text of a value, laid out by its type.
//!
//! The checker gives `show x` the type `List Char` of the layout's width; the lowering
//! (`passes::lower_show`) builds the text by the same layout. One function, [`layout`], says
//! where every part of a value's text goes, so the two cannot disagree.

// Note [Texts of run-time values]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A list's length is part of its type (Note [Size fields]), but the text of a number depends
// on its value: `show 3` is one character, `show 1234` four. dx's shapes are static, so
// `show x` has the length of the *longest* text of its type (11 for an `Int32`, 15 for a
// `Float32`) and the unused places hold the character `'\x00'`, which printing skips: `:p
// show 3` is `"3"`, `"n = " <> show n` prints as `"n = 3"`, and `list_length (show 3)` is 11.
// Each part of a composite value has a fixed place (a table's element `i` starts at
// `1 + i·(w + 2)` for elements of width `w`), so the text is one elementwise operation over
// its positions: the lowering computes, for each position, which scalar it belongs to and
// asks the primitive `show_<format>(x, k)` (`prim::text`) for that scalar's `k`-th
// character. A `show` under a `for` is thus vectorised and fused as any other elementwise
// code, with no per-element string on the heap.
//
// The formats are Dex's `show` (`tests/show-tests.dx` of Dex): floats as C's `%.9g` /
// `%.17g` (`show 1.0` is `"1"`, where `:p 1.0` prints `1.`), words in hexadecimal, `True`;
// composite values as `:p` prints them: `(1, 2.5)`, `[1, 2]`, `(Just 3)`, `Point(1, 2)`, and a
// string inside one as its characters (`(abc, 1)`, as Dex's).

use super::builtins::Class;
use super::classes::match_head;
use super::env::GlobalEnv;
use super::infer::substitute_rigids;
use super::types::{BaseTy, Size, Ty};
use crate::core::ir::Elem;
use crate::prim::TextOp;

/// Where the parts of a value's text go. A layout reads the leaves of the value (the arrays
/// that represent it, in order) as its parts do.
#[derive(Clone, Debug, PartialEq)]
pub enum Layout {
    /// One scalar leaf in a format.
    Scalar { op: TextOp, elem: Elem },
    /// Fixed text; reads no leaf.
    Lit(String),
    /// The parts one after the other.
    Seq(Vec<Layout>),
    /// `[e0, e1, …]`: `[`, then each element followed by `, ` (the last one's blank), then
    /// `]`. The element's layout reads the element's leaves, which have the table's axis
    /// in front.
    Table { len: Size, elem: Box<Layout> },
    /// A value with a tag (Note [Data representation]): reads the tag leaf, then the leaves of
    /// every constructor in order; the text is that of the constructor the tag names.
    Tagged(Vec<Layout>),
    /// A string's characters (`List Char`): reads its length leaf and its table.
    Chars { len: Size },
    /// A value of a type with an instance of `Show` declared in dx: the text its `show`
    /// method gives, of that method's length. Reads the value's leaves.
    Instance { ty: Ty, width: Size },
}

impl Layout {
    /// The number of characters the text takes (its capacity).
    pub fn width(&self) -> Size {
        let add = |a: Size, b: Size| Size::Add(Box::new(a), Box::new(b)).normalise();
        match self {
            Layout::Scalar { op, elem } => Size::Const(op.width(*elem) as u64),
            Layout::Lit(text) => Size::Const(text.len() as u64),
            Layout::Seq(parts) => parts
                .iter()
                .fold(Size::Const(0), |total, part| add(total, part.width())),
            Layout::Table { len, elem } => {
                let cell = add(elem.width(), Size::Const(2));
                add(
                    Size::Mul(Box::new(len.clone()), Box::new(cell)).normalise(),
                    Size::Const(2),
                )
            }
            Layout::Tagged(cons) => Size::Const(
                cons.iter()
                    .filter_map(|con| match con.width() {
                        Size::Const(width) => Some(width),
                        _ => None,
                    })
                    .max()
                    .unwrap_or(0),
            ),
            Layout::Chars { len } => len.clone(),
            Layout::Instance { width, .. } => width.clone(),
        }
    }
}

/// Why a type's text cannot be laid out yet or at all.
#[derive(Clone, Debug, PartialEq)]
pub enum NoLayout {
    /// The type is not known yet (a unification variable inside).
    Unknown,
    /// It never will be: the message says why.
    Never(String),
}

/// The length of the text an instance of `Show` declared in dx gives a value of type `ty`
/// (its `show`'s result is a `List Char` of a length in terms of the instance's variables).
pub fn instance_width(env: &GlobalEnv, ty: &Ty) -> Option<Size> {
    env.instances_of(Class::Show).find_map(|instance| {
        let bindings = match_head(&instance.head, &instance.vars, ty).bindings()?;
        let method = instance.methods.first()?;
        let Ty::Fun { result, .. } = &method.def.ty else {
            return None;
        };
        let Ty::Data(text) = &**result else {
            return None;
        };
        match substitute_rigids(text.args.get(1)?, &bindings) {
            Ty::Fin(size) => Some(size.normalise()),
            _ => None,
        }
    })
}

/// The layout of the text of a value of type `ty`, with the instances of `Show` of `env`.
pub fn layout(env: &GlobalEnv, ty: &Ty) -> Result<Layout, NoLayout> {
    let layout = |ty: &Ty| layout(env, ty);
    if matches!(ty, Ty::Data(_)) {
        if let Some(width) = instance_width(env, ty) {
            return Ok(Layout::Instance {
                ty: ty.clone(),
                width,
            });
        }
    }
    Ok(match ty {
        Ty::Var(_) | Ty::Row(_) | Ty::Value(_) => return Err(NoLayout::Unknown),
        Ty::Base(base) => Layout::Scalar {
            op: match base {
                BaseTy::Word32 | BaseTy::Word64 => TextOp::Hex,
                BaseTy::Bool => TextOp::Bool,
                BaseTy::Word8 => TextOp::Char,
                _ => TextOp::Number,
            },
            elem: base.elem(),
        },
        // An index shows as its ordinal, as `:p` prints it.
        Ty::Fin(_) => Layout::Scalar {
            op: TextOp::Number,
            elem: Elem::I64,
        },
        Ty::Tuple(items) => {
            let mut parts = vec![Layout::Lit("(".into())];
            for (position, item) in items.iter().enumerate() {
                if position > 0 {
                    parts.push(Layout::Lit(", ".into()));
                }
                parts.push(layout(item)?);
            }
            parts.push(Layout::Lit(")".into()));
            Layout::Seq(parts)
        }
        Ty::Table(ix, elem) => match &**ix {
            Ty::Var(_) => return Err(NoLayout::Unknown),
            Ty::Range { .. } => {
                return Err(NoLayout::Never(format!(
                    "`show` of a table over a range ({ix}) is not supported: show its rows"
                )))
            }
            Ty::Fin(len) => Layout::Table {
                len: len.clone(),
                elem: Box::new(layout(elem)?),
            },
            _ => Layout::Table {
                len: Size::Of(ix.clone()),
                elem: Box::new(layout(elem)?),
            },
        },
        Ty::Data(data) => {
            if data.def.name == "List" && data.args.first() == Some(&Ty::Base(BaseTy::Word8)) {
                return match data.args.get(1) {
                    Some(Ty::Var(_)) => Err(NoLayout::Unknown),
                    Some(Ty::Fin(len)) => Ok(Layout::Chars { len: len.clone() }),
                    Some(other) => Ok(Layout::Chars {
                        len: Size::Of(Box::new(other.clone())),
                    }),
                    None => Err(NoLayout::Never("a `List` without its length".into())),
                };
            }
            let mut cons = Vec::new();
            for (index, con) in data.def.cons.iter().enumerate() {
                let fields = data.fields(index);
                if fields.is_empty() {
                    cons.push(Layout::Lit(con.name.clone()));
                    continue;
                }
                // As `:p` prints them: `Point(1., 2.)` for a struct, Dex's `(Just 3)` for a
                // constructor of a `data`/`enum` type.
                let is_struct = data.def.kind == super::data::DataKind::Struct;
                let (open, separator) = match is_struct {
                    true => (format!("{}(", con.name), ", "),
                    false => (format!("({} ", con.name), " "),
                };
                let mut parts = vec![Layout::Lit(open)];
                for (position, field) in fields.iter().enumerate() {
                    if position > 0 {
                        parts.push(Layout::Lit(separator.into()));
                    }
                    parts.push(layout(field)?);
                }
                parts.push(Layout::Lit(")".into()));
                cons.push(Layout::Seq(parts));
            }
            if !data.def.is_tagged() {
                return Ok(cons.remove(0));
            }
            if cons
                .iter()
                .any(|con| !matches!(con.width(), Size::Const(_)))
            {
                return Err(NoLayout::Never(format!(
                    "`show` of {ty} needs the sizes of its constructors' fields: give them"
                )));
            }
            Layout::Tagged(cons)
        }
        Ty::Rigid(_, name) => {
            return Err(NoLayout::Never(format!(
                "`show` of a value of the type parameter `{name}`: its text's length is not \
                 known when the function is checked (show it where its type is known)"
            )))
        }
        Ty::Range { .. } => Layout::Scalar {
            op: TextOp::Number,
            elem: Elem::I64,
        },
        Ty::Fun { .. } | Ty::TypeArg(_) | Ty::Con(..) => {
            return Err(NoLayout::Never(format!(
                "a value of type {ty} has no text: `show` takes numbers, characters, \
                 strings, tables, tuples and user types"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_follow_the_layout() {
        let env = GlobalEnv::default();
        let layout = |ty: &Ty| layout(&env, ty);
        let float = Ty::Base(BaseTy::Float32);
        assert_eq!(layout(&float).unwrap().width(), Size::Const(15));
        // `(`, 15, `, `, 11, `)`
        let pair = Ty::Tuple(vec![float.clone(), Ty::Base(BaseTy::Int32)]);
        assert_eq!(layout(&pair).unwrap().width(), Size::Const(30));
        // `[`, 3 × (15 + 2), `]`
        let table = Ty::table(Ty::Fin(Size::Const(3)), float);
        assert_eq!(layout(&table).unwrap().width(), Size::Const(53));
        assert_eq!(
            layout(&Ty::Var(super::super::types::TyVar(0))),
            Err(NoLayout::Unknown)
        );
    }
}
