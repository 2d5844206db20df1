//! "Did you mean": the names in scope closest to a misspelt one, by edit distance
//! (Damerau–Levenshtein with adjacent transpositions, as rustc's suggestions).

/// The closest candidate to `name`, if one is close enough to be a likely typo: within a
/// third of the name's length in edits (at least one, as rustc's suggestions), and fewer
/// edits than the name has characters (`y` is not a typo of `i`). Ties go to the
/// alphabetically first candidate (so the answer does not depend on the candidates' order);
/// the name itself is never suggested.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let n_chars = name.chars().count();
    let limit = (n_chars.max(3) / 3).min(n_chars.saturating_sub(1));
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        if candidate == name {
            continue;
        }
        let distance = edit_distance(name, candidate);
        let better = best.is_none_or(|(best_distance, best_name)| {
            (distance, candidate) < (best_distance, best_name)
        });
        if distance <= limit && better {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// The optimal string alignment distance: insertions, deletions, substitutions and swaps of
/// adjacent characters each cost 1.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // rows[i][j]: the distance between a[..i] and b[..j]; three rows are live at a time.
    let mut before = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let substitution = previous[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            let mut best = substitution.min(previous[j] + 1).min(current[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            current[j] = best;
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("summ", "sum"), 1);
        assert_eq!(edit_distance("xss", "xs"), 1);
        assert_eq!(edit_distance("lgo", "log"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("é", "e"), 1);
    }

    #[test]
    fn suggestions_are_close_names_only() {
        let names = ["sum", "softmax", "xs", "weights"];
        assert_eq!(closest("summ", names), Some("sum"));
        assert_eq!(closest("sofmtax", names), Some("softmax"));
        assert_eq!(closest("wieghts", names), Some("weights"));
        assert_eq!(closest("banana", names), None);
        assert_eq!(closest("sum", names), None, "not the name itself");
        assert_eq!(
            closest("y", ["i", "x"]),
            None,
            "one letter is no typo of another"
        );
    }
}
