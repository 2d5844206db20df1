//! Exhaustiveness of `case` (docs/language.md: a missing alternative is a type error naming it;
//! Dex reports it at run time, dx at compile time).
//!
//! The usefulness algorithm of Maranget, "Warnings for pattern matching" (JFP 2007), §3 and
//! its witnesses (§5): a value vector is *useful* for a matrix of patterns when some value
//! matches it and no row; the alternatives are exhaustive when the wildcard is not useful,
//! and a useful wildcard's witness is a value no alternative matches. Constructors of a user
//! type and `True`/`False` form complete signatures; tuples have one constructor; numbers and
//! characters are never complete (a wildcard or a name must cover them).

use super::data::DataTy;
use super::typed::TPat;
use super::types::{BaseTy, Ty};
use crate::syntax::ast::Lit;

/// A pattern as the algorithm sees it.
#[derive(Clone, Debug, PartialEq)]
enum Pat {
    Wild,
    Ctor(Ctor, Vec<Pat>),
}

#[derive(Clone, Debug, PartialEq)]
enum Ctor {
    /// Constructor `k` of a user type.
    Con(usize),
    Bool(bool),
    Tuple,
    /// Another literal, by its text.
    Lit(String),
}

/// The patterns of values no alternative matches (at most `limit` of them), printed as dx
/// patterns (`Nothing`, `Just(_)`, `(True, _)`); empty when the alternatives are exhaustive.
pub fn missing(ty: &Ty, alts: &[&TPat], limit: usize) -> Vec<String> {
    let mut rows: Vec<Vec<Pat>> = alts.iter().map(|pat| vec![lower(pat, ty)]).collect();
    let mut out = Vec::new();
    while out.len() < limit {
        let Some(witness) = useful(&rows, std::slice::from_ref(ty), vec![Pat::Wild]) else {
            break;
        };
        out.push(show(&witness[0], ty));
        rows.push(witness);
    }
    out
}

fn lower(pat: &TPat, ty: &Ty) -> Pat {
    match (pat, ty) {
        (TPat::Var(..) | TPat::Wild | TPat::Table(_), _) => Pat::Wild,
        (TPat::Tuple(items), Ty::Tuple(tys)) => Pat::Ctor(
            Ctor::Tuple,
            items.iter().zip(tys).map(|(p, t)| lower(p, t)).collect(),
        ),
        (TPat::Con { con, args, .. }, Ty::Data(data)) => Pat::Ctor(
            Ctor::Con(*con),
            args.iter()
                .zip(data.fields(*con))
                .map(|(p, t)| lower(p, &t))
                .collect(),
        ),
        (
            TPat::Lit {
                lit: Lit::Bool(b), ..
            },
            _,
        ) => Pat::Ctor(Ctor::Bool(*b), Vec::new()),
        (TPat::Lit { lit, negated }, _) => {
            let sign = if *negated { "-" } else { "" };
            Pat::Ctor(Ctor::Lit(format!("{sign}{lit:?}")), Vec::new())
        }
        // A pattern of another shape than its type is a type error reported elsewhere.
        _ => Pat::Wild,
    }
}

/// The complete signature of a type, if it has one: each constructor with its field types.
fn signature(ty: &Ty) -> Option<Vec<(Ctor, Vec<Ty>)>> {
    match ty {
        Ty::Data(data) => Some(
            (0..data.def.cons.len())
                .map(|con| (Ctor::Con(con), data.fields(con)))
                .collect(),
        ),
        Ty::Base(BaseTy::Bool) => Some(vec![
            (Ctor::Bool(false), Vec::new()),
            (Ctor::Bool(true), Vec::new()),
        ]),
        Ty::Tuple(items) => Some(vec![(Ctor::Tuple, items.clone())]),
        _ => None,
    }
}

/// The field types of constructor `ctor` of `ty`.
fn fields(ctor: &Ctor, ty: &Ty) -> Vec<Ty> {
    match (ctor, ty) {
        (Ctor::Con(con), Ty::Data(data)) => data.fields(*con),
        (Ctor::Tuple, Ty::Tuple(items)) => items.clone(),
        _ => Vec::new(),
    }
}

/// The rows that match constructor `ctor` (of `arity` fields), with its fields in place of the
/// first column (Maranget's specialisation S(c, P)).
fn specialise(rows: &[Vec<Pat>], ctor: &Ctor, arity: usize) -> Vec<Vec<Pat>> {
    rows.iter()
        .filter_map(|row| {
            let mut out = match &row[0] {
                Pat::Wild => vec![Pat::Wild; arity],
                Pat::Ctor(head, args) if head == ctor => args.clone(),
                Pat::Ctor(..) => return None,
            };
            out.extend(row[1..].iter().cloned());
            Some(out)
        })
        .collect()
}

/// Whether some value matches `query` and no row; `Some(witness)`, a vector of patterns it
/// matches, when one does.
fn useful(rows: &[Vec<Pat>], tys: &[Ty], query: Vec<Pat>) -> Option<Vec<Pat>> {
    let Some((ty, rest_tys)) = tys.split_first() else {
        return rows.is_empty().then(Vec::new);
    };
    let mut query = query;
    let first = query.remove(0);
    let with_ctor = |ctor: Ctor, args: Vec<Pat>, query_rest: Vec<Pat>| {
        let field_tys = fields(&ctor, ty);
        let arity = field_tys.len();
        let specialised = specialise(rows, &ctor, arity);
        let mut sub_tys = field_tys;
        sub_tys.extend(rest_tys.iter().cloned());
        let mut sub_query = args;
        sub_query.extend(query_rest);
        useful(&specialised, &sub_tys, sub_query).map(|mut witness| {
            let rest = witness.split_off(arity);
            let mut out = vec![Pat::Ctor(ctor, witness)];
            out.extend(rest);
            out
        })
    };
    if let Pat::Ctor(ctor, args) = first {
        return with_ctor(ctor, args, query);
    }
    let heads: Vec<Ctor> = rows
        .iter()
        .filter_map(|row| match &row[0] {
            Pat::Ctor(ctor, _) => Some(ctor.clone()),
            Pat::Wild => None,
        })
        .collect();
    match signature(ty) {
        Some(sig) if sig.iter().all(|(ctor, _)| heads.contains(ctor)) => {
            sig.into_iter().find_map(|(ctor, field_tys)| {
                with_ctor(ctor, vec![Pat::Wild; field_tys.len()], query.clone())
            })
        }
        sig => {
            // The default matrix: the rows whose first pattern is a wildcard.
            let default: Vec<Vec<Pat>> = rows
                .iter()
                .filter(|row| row[0] == Pat::Wild)
                .map(|row| row[1..].to_vec())
                .collect();
            let witness = useful(&default, rest_tys, query)?;
            let missing_ctor = sig.and_then(|sig| {
                sig.into_iter()
                    .find(|(ctor, _)| !heads.contains(ctor))
                    .map(|(ctor, field_tys)| Pat::Ctor(ctor, vec![Pat::Wild; field_tys.len()]))
            });
            let mut out = vec![missing_ctor.unwrap_or(Pat::Wild)];
            out.extend(witness);
            Some(out)
        }
    }
}

/// A witness as a dx pattern.
fn show(pat: &Pat, ty: &Ty) -> String {
    match pat {
        Pat::Wild => "_".to_string(),
        Pat::Ctor(Ctor::Bool(b), _) => if *b { "True" } else { "False" }.to_string(),
        Pat::Ctor(Ctor::Lit(text), _) => text.clone(),
        Pat::Ctor(Ctor::Tuple, args) => {
            let tys = fields(&Ctor::Tuple, ty);
            format!("({})", show_args(args, &tys))
        }
        Pat::Ctor(Ctor::Con(con), args) => {
            let Ty::Data(data) = ty else {
                return "_".to_string();
            };
            con_text(data, *con, args)
        }
    }
}

fn con_text(data: &DataTy, con: usize, args: &[Pat]) -> String {
    let name = &data.def.cons[con].name;
    if args.is_empty() {
        return name.clone();
    }
    format!("{name}({})", show_args(args, &data.fields(con)))
}

fn show_args(args: &[Pat], tys: &[Ty]) -> String {
    let items: Vec<String> = args.iter().zip(tys).map(|(p, t)| show(p, t)).collect();
    items.join(", ")
}
