//! The layout pass: turns indentation into explicit block markers, so that the pest grammar
//! (`dx.pest`) stays context-free.
//!
//! Input: the text of one declaration (a code block without its pragma lines). Output: the same
//! text with comments blanked out (replaced by spaces, so byte offsets do not move) and three
//! one-byte markers inserted, as Haskell's layout rule does:
//!
//! - `{` opens a let-block, `;` separates its items, `}` closes it.
//!
//! These characters are never valid dx outside strings and comments, so a literal `{` or `}`
//! in the source is rejected here; a literal `;` is accepted where it means what the marker
//! means, between the items of a let-block (`a = 1; b = 2`). Markers are zero-width in the source: `Laid::to_src` maps
//! a position in the output back to an absolute byte offset into the source.
//!
//! See Note [Layout rule] for the rule. The pass also enforces the resource limits of
//! Note [Parser limits], before pest (a recursive-descent parser) ever sees the text.

use super::lexer::{lex, Lexed, TokKind, Token, ROW_CLOSE, ROW_OPEN};
use super::{ParseError, ParseErrorKind, Span};

// Note [Layout rule]
// ~~~~~~~~~~~~~~~~~~
// The layout pass keeps a stack of contexts: let-blocks (with their column) and open brackets.
// The whole declaration is an implicit block at the column of its first token; it never gets
// markers.
//
// - Openers: a line whose last token is `=` (when the innermost context is a block, i.e. a
//   binding rather than a named argument), the `.` of a lambda or `for` head, `then`, `else`,
//   `of` (a `case`'s alternatives), the `->` of a `case` alternative, a command alone on the
//   first line (`:p`), or the end of the head line of an `interface` or `instance`. If the next line is indented more than the
//   innermost enclosing block, a block opens at that line's column (`{` before its first token).
// - At the first token of any other line, while the innermost context is a block:
//   a smaller column closes the block (`}` right after the previous token) and the test repeats
//   with the enclosing context; the same column starts a new item (`;`); a larger column
//   continues the previous line. Inside a bracket, line breaks are plain white space.
// - A line starting with `then` or `else`, or following a line that ends in an operator
//   (`(xs[j] - m) *` + the other factor at the same column), never starts a new item. A `then` or `else` anywhere
//   closes the blocks opened since its `if` (Haskell's parse-error(t) rule, for this one case):
//   each context counts the `if`s in it still waiting for their `then` and for their `else`,
//   and the branch keyword closes the blocks above the nearest context (within the same
//   bracket) with such an `if`. So `if c then` + indented block + `else b` works whether the
//   `else` is on the block's last line, at its column, or dedented.
// - `)`, `]` and `,` close the blocks opened inside their bracket (`(\p.` + block + `) x`).
// - End of input closes all blocks; an unclosed bracket is an error with `incomplete` set.

// Note [Parser limits]
// ~~~~~~~~~~~~~~~~~~~~
// Pest is recursive descent, and the pratt parser, the AST builder and every later stage recurse
// over the tree. To keep all of them within a small stack we bound the tree's depth here:
//
// - Nesting: each open bracket and let-block counts one level, and so does each "head" whose
//   right-hand side nests: `\`, `for`, `if`, `$`, a prefix `-`, and the type arrows `=>`, `->`
//   (a head counts until the end of its item: the next `,` or block separator). More than
//   `MAX_NESTING` levels is the error `expression nested too deeply`.
// - Length: the tokens of each context since its last separator (`,` or a new block item) are
//   counted; the sum of these counts over the open contexts bounds the depth of operator chains
//   (`1+1+…`, `f x x x…`, `f $ f $ …`). Past `MAX_PATH_TOKENS` (about 2000 operators) it is
//   the error `expression too long`.
//
// Long lists (`[1, 2, …]`) and long blocks are unaffected: separators reset the count.
//
// With these bounds the recursion of pest and of the AST builder is at most `MAX_NESTING`
// levels deep. In a debug build a level can take 20 KB of stack, so a deeply nested block is
// parsed on a helper thread with a large stack (parser.rs, `on_big_stack`); the resulting tree
// is at most `MAX_NESTING` levels deep plus left-nested chains of at most `MAX_PATH_TOKENS`.

/// The deepest allowed nesting of brackets, blocks and lambda/`for`/`if` heads.
pub(crate) const MAX_NESTING: u32 = 128;
/// The most tokens allowed along one nesting path (see Note [Parser limits]).
pub(crate) const MAX_PATH_TOKENS: u32 = 4000;

/// Output of the layout pass.
pub(crate) struct Laid {
    /// The declaration text with comments blanked and block markers inserted.
    pub text: String,
    /// Absolute source offset of the start of `text`.
    pub base: usize,
    /// Positions of the inserted markers in `text`, ascending.
    pub markers: Vec<usize>,
    /// Position in `text` right after the last real token (before closing markers).
    pub real_end: usize,
    /// The tokens of the declaration (absolute offsets).
    pub tokens: Vec<Token>,
    /// The deepest nesting and the longest path of tokens (Note [Parser limits]); the parser
    /// uses them to decide whether it needs a larger stack.
    pub max_nesting: u32,
    pub max_path_tokens: u32,
}

impl Laid {
    /// Maps a position in `text` to an absolute source offset. A marker maps to the source
    /// position where it was inserted.
    pub fn to_src(&self, text_pos: usize) -> usize {
        let markers_before = self.markers.partition_point(|&marker| marker < text_pos);
        self.base + text_pos - markers_before
    }

    pub fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.to_src(start), self.to_src(end).max(self.to_src(start)))
    }

    /// The source position right after the last real token (or `base` when there is none).
    pub fn src_end(&self) -> usize {
        self.tokens.last().map_or(self.base, |token| token.end)
    }
}

#[derive(Clone, Copy, Debug)]
enum CtxKind {
    Block { col: u32 },
    Bracket { open: u8, start: usize },
}

#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    /// Heads (Note [Parser limits]) since the last separator.
    heads: u32,
    /// Tokens since the last separator.
    tokens: u32,
    /// `if`s since the last separator still waiting for their `then`.
    awaiting_then: u32,
    /// `if`s since the last separator still waiting for their `else`.
    awaiting_else: u32,
}

#[derive(Clone, Copy, Debug)]
struct Ctx {
    kind: CtxKind,
    counts: Counts,
}

struct Layout<'a> {
    src: &'a str,
    tokens: &'a [Token],
    stack: Vec<Ctx>,
    /// Sum of `heads` plus the number of contexts above the top block.
    nesting: u32,
    /// Sum of `tokens` over the stack.
    path_tokens: u32,
    /// The largest `nesting` seen.
    max_nesting: u32,
    /// The largest `path_tokens` seen.
    max_path_tokens: u32,
    inserts: Vec<(usize, char)>,
    /// A `case` has been seen: a `->` that ends a line opens the body of an alternative.
    in_case: bool,
}

impl Layout<'_> {
    fn innermost_block_col(&self) -> u32 {
        self.stack
            .iter()
            .rev()
            .find_map(|ctx| match ctx.kind {
                CtxKind::Block { col, .. } => Some(col),
                CtxKind::Bracket { .. } => None,
            })
            .unwrap_or(0)
    }

    /// Whether the innermost context is a let-block (not the declaration or a bracket).
    fn in_let_block(&self) -> bool {
        self.stack.len() > 1
            && matches!(
                self.stack.last().map(|ctx| ctx.kind),
                Some(CtxKind::Block { .. })
            )
    }

    fn push(&mut self, kind: CtxKind, at: &Token) -> Result<(), ParseError> {
        self.stack.push(Ctx {
            kind,
            counts: Counts::default(),
        });
        self.nesting += 1;
        self.check_nesting(at)
    }

    fn pop(&mut self) {
        if let Some(ctx) = self.stack.pop() {
            self.nesting -= 1 + ctx.counts.heads;
            self.path_tokens -= ctx.counts.tokens;
        }
    }

    /// Resets the counters of the innermost context at a separator.
    fn separate(&mut self) {
        if let Some(ctx) = self.stack.last_mut() {
            self.nesting -= ctx.counts.heads;
            self.path_tokens -= ctx.counts.tokens;
            ctx.counts = Counts::default();
        }
    }

    fn check_nesting(&mut self, at: &Token) -> Result<(), ParseError> {
        self.max_nesting = self.max_nesting.max(self.nesting);
        if self.nesting > MAX_NESTING {
            return Err(error("expression nested too deeply", at.span()));
        }
        Ok(())
    }

    /// Closes the blocks above the innermost bracket (or above the top block).
    fn close_blocks_in_bracket(&mut self, close_at: usize) {
        while self.stack.len() > 1 {
            match self.stack.last().map(|ctx| ctx.kind) {
                Some(CtxKind::Block { .. }) => {
                    self.pop();
                    self.inserts.push((close_at, '}'));
                }
                _ => break,
            }
        }
    }

    /// The layout rule at the first token of a line that does not open a block.
    fn line_start(&mut self, token: &Token, prev: &Token) {
        let text = token.text(self.src);
        let is_branch = text == "then" || text == "else";
        loop {
            let is_top = self.stack.len() == 1;
            let Some(ctx) = self.stack.last() else { return };
            let CtxKind::Block { col } = ctx.kind else {
                return;
            };
            if token.col < col && !is_top {
                self.pop();
                self.inserts.push((prev.end, '}'));
                continue;
            }
            // A line ending in an operator is not a whole item: the next one continues it.
            if token.col > col || is_branch || matches!(prev.kind, TokKind::Op) {
                return;
            }
            self.inserts.push((token.start, ';'));
            self.separate();
            return;
        }
    }

    /// Does the token at `index`, last on its line, open a block on the next line?
    fn is_opener(&self, index: usize) -> bool {
        let token = &self.tokens[index];
        // The head line of an `interface` or `instance` (its methods follow, indented).
        let on_first_line = self.tokens[1..=index]
            .iter()
            .all(|token| !token.first_on_line);
        let head: Vec<&str> = self
            .tokens
            .iter()
            .take(3)
            .map(|t| t.text(self.src))
            .collect();
        let named_instance = head == ["named", "-", "instance"];
        if on_first_line && (matches!(head[0], "interface" | "instance") || named_instance) {
            return true;
        }
        match token.kind {
            // A binding's `=`, not a named argument's.
            TokKind::Equals => matches!(
                self.stack.last().map(|ctx| ctx.kind),
                Some(CtxKind::Block { .. })
            ),
            TokKind::Dot => true,
            TokKind::Ident => {
                let text = token.text(self.src);
                let is_command = index == 1
                    && self.tokens[0].text(self.src) == ":"
                    && self.tokens[0].end == token.start;
                text == "then" || text == "else" || text == "of" || is_command
            }
            // The arrow of a `case` alternative whose body follows on the next lines.
            TokKind::Op => {
                token.text(self.src) == "->"
                    && self.in_case
                    && matches!(
                        self.stack.last().map(|ctx| ctx.kind),
                        Some(CtxKind::Block { .. })
                    )
            }
            _ => false,
        }
    }

    /// A `then` or `else`: closes the blocks opened since its `if` (Note [Layout rule]).
    fn branch(&mut self, is_else: bool, close_at: usize) {
        let mut owner = None;
        for (idx, ctx) in self.stack.iter().enumerate().rev() {
            let waiting = if is_else {
                ctx.counts.awaiting_else
            } else {
                ctx.counts.awaiting_then
            };
            if waiting > 0 {
                owner = Some(idx);
                break;
            }
            if matches!(ctx.kind, CtxKind::Bracket { .. }) {
                break;
            }
        }
        let Some(owner) = owner else { return };
        while self.stack.len() > owner + 1 {
            self.pop();
            self.inserts.push((close_at, '}'));
        }
        let counts = &mut self.stack[owner].counts;
        if is_else {
            counts.awaiting_else -= 1;
        } else {
            counts.awaiting_then -= 1;
            counts.awaiting_else += 1;
        }
    }
}

fn error(message: &str, span: Span) -> ParseError {
    ParseError {
        message: message.to_string(),
        span,
        kind: ParseErrorKind::Syntax,
    }
}

/// Runs the layout pass over `src[start..end]` (which starts at the beginning of a line).
pub(crate) fn layout(src: &str, start: usize, end: usize) -> Result<Laid, ParseError> {
    let Lexed {
        tokens,
        comments,
        rows,
    } = lex(src, start, end)?;
    let top_col = tokens.first().map_or(0, |token| token.col);
    let mut layout = Layout {
        src,
        tokens: &tokens,
        stack: vec![Ctx {
            kind: CtxKind::Block { col: top_col },
            counts: Counts::default(),
        }],
        nesting: 0,
        path_tokens: 0,
        max_nesting: 0,
        max_path_tokens: 0,
        inserts: Vec::new(),
        in_case: false,
    };
    // The previous line ended with a block opener.
    let mut pending = false;
    for (index, token) in tokens.iter().enumerate() {
        let closes = matches!(token.kind, TokKind::Close(_) | TokKind::Comma);
        if index > 0 && token.first_on_line && !closes {
            let prev = &tokens[index - 1];
            if pending && token.col > layout.innermost_block_col() {
                layout.push(CtxKind::Block { col: token.col }, token)?;
                layout.inserts.push((token.start, '{'));
            } else {
                layout.line_start(token, prev);
            }
        }
        pending = false;
        let prev_end = if index > 0 {
            tokens[index - 1].end
        } else {
            token.start
        };
        match token.kind {
            // `a = 1; b = 2` on one line of a let-block: the `;` is the separator itself.
            TokKind::Reserved if token.text(src) == ";" && layout.in_let_block() => {
                layout.separate();
                continue;
            }
            TokKind::Reserved => {
                let message = match token.text(src) {
                    ";" => {
                        "unexpected ';' (it separates the lines of an indented block)".to_string()
                    }
                    text => format!("unexpected '{text}'"),
                };
                return Err(error(&message, token.span()));
            }
            TokKind::Open(open) => {
                count_token(&mut layout, token)?;
                layout.push(
                    CtxKind::Bracket {
                        open,
                        start: token.start,
                    },
                    token,
                )?;
                continue;
            }
            TokKind::Close(close) => {
                layout.close_blocks_in_bracket(prev_end);
                let expected_open = if close == b')' { b'(' } else { b'[' };
                match layout.stack.last().map(|ctx| ctx.kind) {
                    Some(CtxKind::Bracket { open, .. }) if open == expected_open => layout.pop(),
                    _ => {
                        let message = format!("unexpected '{}'", close as char);
                        return Err(error(&message, token.span()));
                    }
                }
            }
            TokKind::Comma => {
                let in_bracket = layout
                    .stack
                    .iter()
                    .any(|ctx| matches!(ctx.kind, CtxKind::Bracket { .. }));
                if in_bracket {
                    layout.close_blocks_in_bracket(prev_end);
                    layout.separate();
                    continue;
                }
            }
            TokKind::Ident => match token.text(src) {
                "for" => add_head(&mut layout, token)?,
                "case" => {
                    layout.in_case = true;
                    add_head(&mut layout, token)?;
                }
                "if" => {
                    add_head(&mut layout, token)?;
                    if let Some(ctx) = layout.stack.last_mut() {
                        ctx.counts.awaiting_then += 1;
                    }
                }
                "then" => layout.branch(false, prev_end),
                "else" => layout.branch(true, prev_end),
                _ => {}
            },
            TokKind::Op => {
                let nests = match token.text(src) {
                    "\\" | "$" | "=>" | "->" => true,
                    "-" => index == 0 || !ends_operand(src, &tokens[index - 1]),
                    _ => false,
                };
                if nests {
                    add_head(&mut layout, token)?;
                }
            }
            _ => {}
        }
        count_token(&mut layout, token)?;
        let last_on_line = tokens.get(index + 1).is_none_or(|next| next.first_on_line);
        if last_on_line {
            pending = layout.is_opener(index);
        }
    }
    if let Some(ctx) = layout
        .stack
        .iter()
        .rev()
        .find(|ctx| matches!(ctx.kind, CtxKind::Bracket { .. }))
    {
        if let CtxKind::Bracket { open, start } = ctx.kind {
            return Err(ParseError {
                message: format!("unclosed '{}'", open as char),
                span: Span::new(start, start + 1),
                kind: ParseErrorKind::Incomplete,
            });
        }
    }
    let last_end = tokens.last().map_or(start, |token| token.end);
    while layout.stack.len() > 1 {
        layout.pop();
        layout.inserts.push((last_end, '}'));
    }
    let (max_nesting, max_path_tokens) = (layout.max_nesting, layout.max_path_tokens);
    let mut inserts = layout.inserts;
    inserts.sort_by_key(|&(pos, _)| pos);
    let mut laid = build(src, start, end, &comments, &rows, &inserts, tokens);
    laid.max_nesting = max_nesting;
    laid.max_path_tokens = max_path_tokens;
    Ok(laid)
}

/// Can this token end an operand (so that a `-` after it is binary)?
fn ends_operand(src: &str, token: &Token) -> bool {
    match token.kind {
        TokKind::Number | TokKind::Str | TokKind::Close(_) => true,
        TokKind::Ident => !matches!(
            token.text(src),
            "def" | "for" | "if" | "then" | "else" | "given" | "import" | "case" | "of"
        ),
        _ => false,
    }
}

fn add_head(layout: &mut Layout, token: &Token) -> Result<(), ParseError> {
    if let Some(ctx) = layout.stack.last_mut() {
        ctx.counts.heads += 1;
        layout.nesting += 1;
    }
    layout.check_nesting(token)
}

fn count_token(layout: &mut Layout, token: &Token) -> Result<(), ParseError> {
    if let Some(ctx) = layout.stack.last_mut() {
        ctx.counts.tokens += 1;
        layout.path_tokens += 1;
    }
    layout.max_path_tokens = layout.max_path_tokens.max(layout.path_tokens);
    if layout.path_tokens > MAX_PATH_TOKENS {
        return Err(error("expression too long", token.span()));
    }
    Ok(())
}

/// Builds the output text: the source with comments blanked and markers inserted.
fn build(
    src: &str,
    start: usize,
    end: usize,
    comments: &[(usize, usize)],
    rows: &[(usize, usize)],
    inserts: &[(usize, char)],
    tokens: Vec<Token>,
) -> Laid {
    let mut blanked = src.as_bytes()[start..end].to_vec();
    for &(comment_start, comment_end) in comments {
        for byte in &mut blanked[comment_start - start..comment_end - start] {
            *byte = b' ';
        }
    }
    for &(row_start, row_end) in rows {
        blanked[row_start - start] = ROW_OPEN;
        blanked[row_end - 1 - start] = ROW_CLOSE;
    }
    // Comments start at an ASCII byte and end at a line end, so blanking them keeps UTF-8 valid.
    let blanked = String::from_utf8(blanked).unwrap_or_else(|_| " ".repeat(end - start));
    let mut text = String::with_capacity(blanked.len() + inserts.len());
    let mut markers = Vec::with_capacity(inserts.len());
    let mut cursor = 0;
    let last_end = tokens.last().map_or(start, |token| token.end) - start;
    let mut real_end = None;
    for &(pos, marker) in inserts {
        let pos = pos - start;
        if pos >= last_end && real_end.is_none() {
            text.push_str(&blanked[cursor..last_end]);
            cursor = last_end;
            real_end = Some(text.len());
        }
        text.push_str(&blanked[cursor..pos]);
        cursor = pos;
        markers.push(text.len());
        text.push(marker);
    }
    if real_end.is_none() {
        text.push_str(&blanked[cursor..last_end.max(cursor)]);
        cursor = cursor.max(last_end);
        real_end = Some(text.len());
    }
    text.push_str(&blanked[cursor..]);
    Laid {
        text,
        base: start,
        markers,
        real_end: real_end.unwrap_or(0),
        tokens,
        max_nesting: 0,
        max_path_tokens: 0,
    }
}
