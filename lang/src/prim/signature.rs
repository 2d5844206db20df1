//! A primitive as the language names it: its type in terms of Dex's interfaces
//! (`check/builtins.rs` instantiates it), its infix operator, and how it reads at a type of the
//! user's through the methods of its interface (`passes/lower_data.rs`). Each family file
//! states its primitives' signatures (`signature`); this file holds the vocabulary.

/// The type of a primitive named in the language: operands and result in terms of a type
/// variable `a` that `interface` constrains, a second variable `b` (a cast's target, with the
/// same constraint), and fixed types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signature {
    /// The name the language calls it by (`exp`, `select`; `None` for one written only as an
    /// operator, or not a name of the language).
    pub name: Option<&'static str>,
    pub operands: &'static [Slot],
    pub result: Slot,
    /// The interface the variables must have (`None`: any type).
    pub interface: Option<Interface>,
    /// The operator the language writes between the two operands (`+`, `<=`, `&&`).
    pub infix: Option<&'static str>,
    /// How the primitive reads at a user's type with an instance of `interface`.
    pub method: Option<ByMethod>,
}

/// One operand or result type of a [`Signature`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// The type variable `a`.
    A,
    /// The type variable `b`.
    B,
    Bool,
    Word64,
    Float32,
    Int64,
    Nat,
}

/// The interfaces of Dex's prelude a primitive can require (the checker's classes of the same
/// names; `Div` is Dex's `Fractional`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interface {
    Add,
    Sub,
    Mul,
    Div,
    Floating,
    Num,
    Float,
    Eq,
    Ord,
}

/// How a primitive reads at a user's type through the methods of its interface; Dex's
/// prelude derives `/=`, `<=`, `>=`, `min`, `max` and `neg` from the methods the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ByMethod {
    /// The method of this name applied to the operands.
    Call(&'static str),
    /// `not` of the method of this name applied to the operands (`a <= b = not (a > b)`).
    Negated(&'static str),
    /// The method of this name applied to `zero` and the operand (`neg x = zero - x`).
    FromZero(&'static str),
    /// The second operand where the method of this name holds of it and the first, else the
    /// first (`min a b = if b < a then b else a`: ties go to the first operand).
    Choose(&'static str),
}

impl Signature {
    /// `a -> a` or `a -> a -> a` (by `arity`) for an `a` with `interface`.
    pub(crate) const fn same(arity: usize, interface: Interface) -> Signature {
        Signature {
            name: None,
            operands: if arity == 1 {
                &[Slot::A]
            } else {
                &[Slot::A, Slot::A]
            },
            result: Slot::A,
            interface: Some(interface),
            infix: None,
            method: None,
        }
    }

    /// `a -> a -> Bool` for an `a` with `interface`.
    pub(crate) const fn relation(interface: Interface) -> Signature {
        Signature {
            operands: &[Slot::A, Slot::A],
            result: Slot::Bool,
            ..Signature::same(2, interface)
        }
    }

    /// Fixed operand and result types.
    pub(crate) const fn fixed(operands: &'static [Slot], result: Slot) -> Signature {
        Signature {
            name: None,
            operands,
            result,
            interface: None,
            infix: None,
            method: None,
        }
    }

    pub(crate) const fn named(self, name: &'static str) -> Signature {
        Signature {
            name: Some(name),
            ..self
        }
    }

    pub(crate) const fn infix(self, symbol: &'static str) -> Signature {
        Signature {
            infix: Some(symbol),
            ..self
        }
    }

    pub(crate) const fn by(self, method: ByMethod) -> Signature {
        Signature {
            method: Some(method),
            ..self
        }
    }
}
