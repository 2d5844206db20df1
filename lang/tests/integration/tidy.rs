//! Tidy checks of the compiler's own source (as rust-analyzer's tidy tests check theirs): the
//! invariants docs/architecture.md states about where rules live, read from `lang/src`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The non-test source files of `lang/src` under `dir`, with their text up to a trailing
/// `#[cfg(test)]` module.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                pending.push(path);
            } else if name.ends_with(".rs") && name != "tests.rs" && name != "testgen.rs" {
                let text = std::fs::read_to_string(&path).unwrap();
                let code = match text.find("\n#[cfg(test)]\nmod tests {") {
                    Some(end) => text[..end].to_string(),
                    None => text,
                };
                files.push((path, code));
            }
        }
    }
    files.sort();
    files
}

fn lang_src() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// A line without its `//` comment.
fn code(line: &str) -> &str {
    line.find("//").map_or(line, |at| &line[..at])
}

/// The match arms (and `matches!` patterns) of `text` whose pattern names a primitive
/// (`Prim::…`), each counted once however many primitives it names, as (line, pattern).
fn primitive_arms(text: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = text.lines().map(code).collect();
    let mut arms = Vec::new();
    for (at, line) in lines.iter().enumerate() {
        if let Some(arrow) = line.find("=>") {
            // The pattern: this line's text before `=>`, and the lines of a pattern written
            // over several lines (`Prim::A` then `| Prim::B` lines).
            let mut pattern = line[..arrow].to_string();
            let mut first = at;
            while first > 0 {
                let above = lines[first - 1].trim();
                let continued = lines[first].trim_start().starts_with('|') || above.ends_with('|');
                if !continued || above.contains("=>") || above.ends_with('{') {
                    break;
                }
                first -= 1;
                pattern = format!("{above} {pattern}");
            }
            let binding = pattern.contains("let ");
            if pattern.contains("Prim::") && !binding {
                arms.push((at + 1, pattern.trim().to_string()));
            }
        }
        let counted = arms.last().is_some_and(|&(line, _)| line == at + 1);
        if let Some(start) = line.find("matches!(").filter(|_| !counted) {
            // The macro's arguments: up to the parenthesis that closes `matches!(`.
            let rest = lines[at..].join(" ");
            let rest = &rest[start + "matches!".len()..];
            let mut depth = 0;
            let end = rest
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '(' => 1,
                        ')' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(rest.len(), |(end, c)| end + c.len_utf8());
            if rest[..end].contains("Prim::") {
                arms.push((at + 1, format!("matches!{}", &rest[..end])));
            }
        }
    }
    arms
}

/// Outside `prim/` the compiler reads the primitives' rules; it names a primitive only to emit
/// it or in a rewrite rule about that one primitive. Adding a primitive must not mean visiting
/// match arms across the tree (docs/adding-a-primitive.md): at most 50 remain.
#[test]
fn primitives_are_matched_outside_prim_in_at_most_fifty_arms() {
    let prim_dir = lang_src().join("prim");
    let mut per_file = BTreeMap::new();
    for (path, text) in sources(&lang_src()) {
        if path.starts_with(&prim_dir) {
            continue;
        }
        let arms = primitive_arms(&text);
        if !arms.is_empty() {
            per_file.insert(path.strip_prefix(lang_src()).unwrap().to_owned(), arms);
        }
    }
    let total: usize = per_file.values().map(Vec::len).sum();
    assert!(
        total <= 50,
        "{total} match arms on primitives outside prim/:\n{per_file:#?}"
    );
    // The measure sees what it claims to: the engine's special cases are arms.
    assert!(per_file.keys().any(|path| path.ends_with("lanes.rs")));
}

/// The arms a measure counts: single-line, multi-line and `matches!` patterns; not bindings.
#[test]
fn the_arm_measure_counts_patterns_once() {
    let text = "match prim {\n    Prim::Add => 1,\n    Prim::Sub\n    | Prim::Neg => 2,\n    \
                _ => 3,\n}\nlet Prim::Cast(e) = prim else { return };\n\
                if matches!(prim, Prim::Eq | Prim::Ne) {}\nlet x = cx.prim(Prim::Mul, args);\n";
    let lines: Vec<usize> = primitive_arms(text).iter().map(|(line, _)| *line).collect();
    assert_eq!(lines, [2, 4, 8]);
}

/// A dispatch on a primitive's family names every family: a new family, or a primitive moved
/// to another, cannot fall silently into a default.
#[test]
fn dispatch_on_a_family_has_no_fallback_arm() {
    let mut fallbacks = Vec::new();
    for (path, text) in sources(&lang_src()) {
        // Brace depth of each open `match ….family() {`.
        let mut open: Vec<i64> = Vec::new();
        let mut depth = 0i64;
        for (at, line) in text.lines().map(code).enumerate() {
            let trimmed = line.trim();
            if open.last() == Some(&depth)
                && (trimmed.starts_with("_ =>") || trimmed.starts_with("_ if"))
            {
                fallbacks.push(format!("{}:{}", path.display(), at + 1));
            }
            if line.contains("match ") && line.contains(".family()") && trimmed.ends_with('{') {
                open.push(depth + 1);
            }
            depth += line.matches('{').count() as i64 - line.matches('}').count() as i64;
            while open.last().is_some_and(|&inside| depth < inside) {
                open.pop();
            }
        }
    }
    assert!(fallbacks.is_empty(), "fallback arms: {fallbacks:#?}");
}

/// The top-level modules of `lang/src` (directories and files beside `lib.rs`).
fn top_level_modules() -> Vec<String> {
    let mut modules: Vec<String> = std::fs::read_dir(lang_src())
        .unwrap()
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let module = name.strip_suffix(".rs").unwrap_or(&name).to_string();
            (module != "lib" && module != "main").then_some(module)
        })
        .collect();
    modules.sort();
    modules.dedup();
    modules
}

/// Which top-level modules each one's non-test code names (`crate::x`, `use crate::{x::…}`),
/// with a place that does.
fn module_edges() -> BTreeMap<(String, String), String> {
    let modules = top_level_modules();
    let root = lang_src();
    let mut edges = BTreeMap::new();
    for (path, text) in sources(&root) {
        let relative = path.strip_prefix(&root).unwrap();
        let first = relative.components().next().unwrap();
        let first = first.as_os_str().to_string_lossy();
        let from = first.strip_suffix(".rs").unwrap_or(&first).to_string();
        if !modules.contains(&from) {
            continue;
        }
        for (at, line) in text.lines().map(code).enumerate() {
            let mut named: Vec<&str> = Vec::new();
            for (start, _) in line.match_indices("crate::") {
                let rest = &line[start + "crate::".len()..];
                if let Some(group) = rest.strip_prefix('{') {
                    named.extend(
                        group
                            .split(',')
                            .filter_map(|item| item.trim().split("::").next()),
                    );
                } else {
                    named.push(
                        rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                            .next()
                            .unwrap(),
                    );
                }
            }
            for to in named {
                if to != from && modules.iter().any(|module| module == to) {
                    edges
                        .entry((from.clone(), to.to_string()))
                        .or_insert_with(|| format!("{}:{}", relative.display(), at + 1));
                }
            }
        }
    }
    edges
}

/// The top-level modules, lowest first (docs/architecture.md): each may name only the ones
/// before it.
const LAYERS: &[&str] = &[
    "code", "syntax", "complete", "prim", "core", "data", "ops", "check", "passes", "export",
    "display", "exec", "session",
];

/// No module names a later one, so there is no cycle among them: each can be read, and
/// changed, knowing only the ones before it. The IR knows no rule, the rule homes (with their
/// dispatchers and contexts) no pass, the passes neither the engine nor the session.
#[test]
fn layers_name_only_lower_layers() {
    let unplaced: Vec<String> = top_level_modules()
        .into_iter()
        .filter(|module| !LAYERS.contains(&module.as_str()))
        .collect();
    assert!(unplaced.is_empty(), "modules not in LAYERS: {unplaced:?}");
    let edges = module_edges();
    let layer = |module: &str| LAYERS.iter().position(|name| *name == module);
    let upward: Vec<String> = edges
        .iter()
        .filter(|((from, to), _)| layer(to) > layer(from))
        .map(|((from, to), at)| format!("{from} -> {to} ({at})"))
        .collect();
    assert!(
        upward.is_empty(),
        "dependencies against the layering:\n{upward:#?}"
    );
}

/// Each form of `Expr` with its rule home (a file or a directory; `ops::Operation` is
/// implemented there).
const FORMS: &[(&str, &str)] = &[
    ("Atom", "ops/build.rs"),
    ("Prim", "ops/elementwise.rs"),
    ("Build1", "ops/build.rs"),
    ("Index", "ops/build.rs"),
    ("Iota", "ops/build.rs"),
    ("Table", "ops/build.rs"),
    ("SumOuter", "ops/sum_outer.rs"),
    ("Gather", "ops/gather_scatter"),
    ("Scatter", "ops/gather_scatter"),
    ("Replicate", "ops/layout.rs"),
    ("Transpose", "ops/layout.rs"),
    ("Reshape", "ops/layout.rs"),
    ("Cond", "ops/cond.rs"),
    ("Fold", "ops/loops.rs"),
    ("Scan", "ops/loops.rs"),
    ("While", "ops/while_loop.rs"),
    ("WhileReverse", "ops/while_loop.rs"),
    ("Monoid", "ops/monoid"),
    ("Derivative", "ops/derivative.rs"),
    ("CustomVjp", "ops/custom.rs"),
    ("CustomJvp", "ops/custom.rs"),
    ("CustomLinear", "ops/custom.rs"),
];

/// The most files outside its home that may name a form (`Expr::Form`, outside comments and
/// test modules): the IR, its walks, its printer and its parser, and `ops::operation`. Any
/// other reader asks the home (a rule of `ops::Operation`) or takes a statement apart
/// through the IR's view (`Scatter::of`), so that a new file restating a rule of a form
/// fails here. A statement is built without naming its form (`Expr::from(Fold { … })`), so
/// what is counted are the matches on it.
const MOST_FILES_NAMING_A_FORM: usize = 5;

/// Whether `text` names `Expr::<form>` (not a longer name, not another enum's `…Expr::`).
fn names_form(text: &str, form: &str) -> bool {
    let needle = format!("Expr::{form}");
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.lines().map(code).any(|line| {
        line.match_indices(&needle).any(|(at, _)| {
            let before = line[..at].chars().next_back().is_some_and(ident);
            let after = line[at + needle.len()..].chars().next().is_some_and(ident);
            !before && !after
        })
    })
}

/// Whether `path` (under `lang/src`) is the file `home` or in the directory `home`.
fn in_home(path: &Path, home: &str) -> bool {
    let relative = path.strip_prefix(lang_src()).unwrap_or(path);
    relative.starts_with(home)
}

#[test]
fn forms_are_named_in_few_files_outside_their_homes() {
    let root = lang_src();
    let files = sources(&root);
    let ir = std::fs::read_to_string(root.join("core/ir.rs")).unwrap();
    let mut over = Vec::new();
    let most = MOST_FILES_NAMING_A_FORM;
    for &(form, home) in FORMS {
        assert!(names_form(&ir, form), "{form} is not a form of Expr");
        let naming: Vec<String> = (files.iter())
            .filter(|(path, text)| !in_home(path, home) && names_form(text, form))
            .map(|(path, _)| path.strip_prefix(&root).unwrap().display().to_string())
            .collect();
        if naming.len() > most {
            over.push(format!("{form} ({most} allowed): {}", naming.join(", ")));
        }
    }
    assert!(
        over.is_empty(),
        "forms named in more files than allowed:\n{}",
        over.join("\n")
    );
}

#[test]
fn the_form_measure_skips_longer_names_and_other_enums() {
    assert!(names_form("Expr::While(w) => {}", "While"));
    assert!(!names_form("Expr::WhileReverse(w) => {}", "While"));
    assert!(!names_form("IxExpr::Prim(p)", "Prim"));
    assert!(!names_form("// Expr::Prim in a comment", "Prim"));
}
