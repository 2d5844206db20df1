//! Parse errors that name their fix, for mistakes the grammar cannot describe by itself.
//!
//! - A lambda's or `for`'s binder annotated with a table or function type not in parentheses
//!   (`\v:(Fin 3)=>Float. …`): a binder's type is one atom, so the parser stops at `=>`.

use super::ParseError;

/// `err` with a hint added when it is one of the mistakes above.
pub fn with_hint(src: &str, mut err: ParseError) -> ParseError {
    if let Some(hint) = binder_type_hint(src, &err) {
        err.message = format!("{}: {hint}", err.message);
    }
    err
}

/// `\v:(Fin 3)=>Float. …`: says to write `\v:((Fin 3)=>Float). …`.
fn binder_type_hint(src: &str, err: &ParseError) -> Option<String> {
    let mut start = err.span.range().start;
    // The parser may stop at the arrow or just after its first character.
    if src.get(start..)?.starts_with('>') && matches!(src[..start].chars().last(), Some('=' | '-'))
    {
        start -= 1;
    }
    let range = start..start;
    let at = src.get(range.start..)?;
    if !at.starts_with("=>") && !at.starts_with("->") {
        return None;
    }
    let line_start = src[..range.start].rfind('\n').map_or(0, |idx| idx + 1);
    let before = &src[line_start..range.start];
    // The binder: after the last `\` or `for `, a name, `:` and an atom type, with no `.`.
    let binder_start = [
        before.rfind('\\').map(|idx| idx + 1),
        before.rfind("for ").map(|idx| idx + 4),
    ]
    .into_iter()
    .flatten()
    .max()?;
    let binder = &before[binder_start..];
    if binder.contains('.') {
        return None;
    }
    let (name, atom) = binder.rsplit_once(':')?;
    let name = name.split_whitespace().last()?;
    let atom = atom.trim();
    if name.is_empty() || atom.is_empty() {
        return None;
    }
    // The rest of the type runs to the binder's `.`.
    let rest_end = at.find(". ").or_else(|| at.find('.'))?;
    let rest = at[..rest_end].trim_end();
    Some(format!(
        "a binder's type is one atom, so a table or function type needs parentheses: \
         `{name}:({atom}{rest})`"
    ))
}

#[cfg(test)]
mod tests {
    use crate::syntax::parse_expr;

    fn message(src: &str) -> String {
        parse_expr(src).expect_err("a parse error").message
    }

    #[test]
    fn a_table_type_on_a_binder_names_the_parentheses() {
        let text = message("\\v:(Fin 3)=>Float. sum v");
        assert!(
            text.ends_with("needs parentheses: `v:((Fin 3)=>Float)`"),
            "{text}"
        );
        let text = message("for i:(Fin 2)=>Int. i");
        assert!(text.ends_with("`i:((Fin 2)=>Int)`"), "{text}");
        let text = message("\\f:Float->Float. f 1.0");
        assert!(text.ends_with("`f:(Float->Float)`"), "{text}");
    }

    #[test]
    fn other_errors_are_left_alone() {
        assert_eq!(message("1 +* )"), "unexpected ')'");
        assert!(!message("x => y").contains("parentheses"));
        assert!(!message("\\x. x => y").contains("parentheses"));
    }
}
