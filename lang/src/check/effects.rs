//! Effect rows: what a function may do when it is applied (Dex's `{State h, Accum h, Read h,
//! Except, IO|eff}`), part of every function type. See Note [Effect rows].

use std::fmt;

use super::types::Ty;

// Note [Effect rows]
// ~~~~~~~~~~~~~~~~~~
// A function type carries the effects its application may have (`Ty::Fun::effects`): `State h`,
// `Accum h` and `Read h` on the references of the region `h` of one handler, `Except`
// (`throw`), `IO` (`print`). A row may end in a row variable (`{State h|eff}`): the effects of
// a function passed in. A row variable is a type variable bound to a `Ty::Row` (the rest of the
// row), so generalisation and instantiation treat it as any other variable.
//
// Inference (check/infer.rs) keeps the effects of the lambda or `def` body being checked
// (`Infer::performed`): applying a function adds the row of its type, so the built-ins add
// theirs (`r := v` has `{State h}`); a `for`, `if` or block adds its parts' effects to the
// enclosing body, a lambda keeps its body's in its own type. A handler's type removes its own
// effect: `with_state : s -> (Ref h s -> {State h|e} a) -> {|e} a`.
//
// Rows meet in `Infer::unify` with subsumption, not equality: where a function with the row
// `R` is expected, one whose row has fewer effects is accepted (a pure `\r. 1.0` given to
// `with_state`); an effect the expected row lacks goes into its row variable, or is an error
// when it has none. (Dex compares rows for equality after checking a lambda against its
// expected type, which gives the same result for lambdas written in place.) A `def` whose
// signature gives a row is checked against it, effect by effect, at the operation that has the
// effect; a signature without a row gets the row its body has ("inferred where omitted").

/// One effect of a row.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Effect {
    /// `Read h`: `ask` of a reader reference of the region `h`.
    Read(Ty),
    /// `Accum h`: `+=` on an accumulator of the region `h`.
    Accum(Ty),
    /// `State h`: `get` and `:=` on a state reference of the region `h`.
    State(Ty),
    /// `Except`: `throw()`.
    Except,
    /// `IO`: `print`.
    Io,
}

impl Effect {
    /// The order Dex prints a row's effects in.
    fn rank(&self) -> u8 {
        match self {
            Effect::Read(_) => 0,
            Effect::Accum(_) => 1,
            Effect::State(_) => 2,
            Effect::Except => 3,
            Effect::Io => 4,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Effect::Read(_) => "Read",
            Effect::Accum(_) => "Accum",
            Effect::State(_) => "State",
            Effect::Except => "Except",
            Effect::Io => "IO",
        }
    }

    /// The region of a reference effect.
    pub fn region(&self) -> Option<&Ty> {
        match self {
            Effect::Read(region) | Effect::Accum(region) | Effect::State(region) => Some(region),
            Effect::Except | Effect::Io => None,
        }
    }

    /// The same effect on another region.
    pub fn with_region(&self, region: Ty) -> Effect {
        match self {
            Effect::Read(_) => Effect::Read(region),
            Effect::Accum(_) => Effect::Accum(region),
            Effect::State(_) => Effect::State(region),
            Effect::Except | Effect::Io => self.clone(),
        }
    }

    /// Whether the two are the same kind of effect (on any region).
    pub fn same_kind(&self, other: &Effect) -> bool {
        self.rank() == other.rank()
    }

    /// What the effect is, in words, for error messages.
    pub fn what(&self) -> &'static str {
        match self {
            Effect::Read(_) => "reads a reader reference (`ask`)",
            Effect::Accum(_) => "adds to an accumulator (`+=`)",
            Effect::State(_) => "reads or writes a state reference (`get`, `:=`)",
            Effect::Except => "throws (`throw`)",
            Effect::Io => "prints (`print`)",
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.region() {
            Some(region) => write!(f, "{} {region}", self.name()),
            None => write!(f, "{}", self.name()),
        }
    }
}

/// The effects of a function type: `effects` and, when open, the row variable (or rigid
/// variable of a signature's `{|eff}`) standing for the rest.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct EffRow {
    pub effects: Vec<Effect>,
    pub tail: Option<Box<Ty>>,
}

impl EffRow {
    /// No effect: a pure function.
    pub fn pure() -> EffRow {
        EffRow::default()
    }

    /// Only the rest `tail` (`{|e}`).
    pub fn open(tail: Ty) -> EffRow {
        EffRow {
            effects: Vec::new(),
            tail: Some(Box::new(tail)),
        }
    }

    pub fn is_pure(&self) -> bool {
        self.effects.is_empty() && self.tail.is_none()
    }

    /// Adds an effect unless the row has it already.
    pub fn insert(&mut self, effect: Effect) {
        if !self.effects.contains(&effect) {
            self.effects.push(effect);
        }
    }

    /// The row with its effects in Dex's order, each once.
    pub fn sorted(&self) -> EffRow {
        let mut effects: Vec<Effect> = Vec::new();
        for effect in &self.effects {
            if !effects.contains(effect) {
                effects.push(effect.clone());
            }
        }
        effects.sort_by_key(|effect| (effect.rank(), effect.region().map(Ty::to_string)));
        EffRow {
            effects,
            tail: self.tail.clone(),
        }
    }
}

/// `{State h, IO}`, `{State h|eff}`, `{|eff}`; an open row whose rest is still unknown prints
/// its known effects only (the rest is no effect unless something adds one).
impl fmt::Display for EffRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let row = self.sorted();
        write!(f, "{{")?;
        for (index, effect) in row.effects.iter().enumerate() {
            if index > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{effect}")?;
        }
        if let Some(tail @ Ty::Rigid(..)) = row.tail.as_deref() {
            write!(f, "|{tail}")?;
        }
        write!(f, "}}")
    }
}

impl EffRow {
    /// Whether the row prints as nothing (no effect, no named rest).
    pub fn prints_empty(&self) -> bool {
        self.effects.is_empty() && !matches!(self.tail.as_deref(), Some(Ty::Rigid(..)))
    }
}

impl EffRow {
    /// Whether `pred` holds of a type in the row (a region or the rest).
    pub fn any_ty(&self, pred: &mut impl FnMut(&Ty) -> bool) -> bool {
        self.effects
            .iter()
            .filter_map(Effect::region)
            .any(|region| region.any(pred))
            || self.tail.as_ref().is_some_and(|tail| tail.any(pred))
    }

    /// The row with `f` applied to its regions and rest (`Ty::map`).
    pub fn map_tys(&self, f: &mut impl FnMut(&Ty) -> Option<Ty>) -> EffRow {
        EffRow {
            effects: self
                .effects
                .iter()
                .map(|effect| match effect.region() {
                    Some(region) => effect.with_region(region.map(f)),
                    None => effect.clone(),
                })
                .collect(),
            tail: self.tail.as_ref().map(|tail| Box::new(tail.map(f))),
        }
    }
}
