//! What the server knows about one document: the result of checking it in a fresh session
//! (the prelude loaded; nothing run), and the answers drawn from it.

use dx_lang::complete::{complete_at, names_before, word_at};
use dx_lang::display::render_diagnostic;
use dx_lang::session::{Checked, Session, SessionConfig, SymbolKind};
use lsp_types::{
    CompletionItem, CompletionItemKind, Diagnostic, DiagnosticRelatedInformation,
    DiagnosticSeverity, DocumentSymbol, Hover, HoverContents, Location, MarkupContent, MarkupKind,
    Position, Range, Uri,
};

use crate::position::{offset, range};

pub struct Analysis {
    text: String,
    session: Session,
    checked: Checked,
}

impl Analysis {
    pub fn new(text: String) -> Analysis {
        let mut session = Session::new(SessionConfig::default());
        let checked = session.check_source(&text);
        Analysis {
            text,
            session,
            checked,
        }
    }

    /// The errors of the document at `uri`, each with its first line as the message, its code,
    /// and its labels (a duplicate's first declaration) as related information.
    pub fn diagnostics(&self, uri: &Uri) -> Vec<Diagnostic> {
        self.checked
            .diagnostics
            .iter()
            .map(|diag| {
                let span = diag.span.map_or(0..0, |span| span.range());
                let related: Vec<DiagnosticRelatedInformation> = diag
                    .labels
                    .iter()
                    .map(|label| DiagnosticRelatedInformation {
                        location: Location {
                            uri: uri.clone(),
                            range: range(&self.text, label.span.range()),
                        },
                        message: label.message.clone(),
                    })
                    .collect();
                Diagnostic {
                    range: range(&self.text, span),
                    severity: Some(DiagnosticSeverity::ERROR),
                    code: Some(lsp_types::NumberOrString::String(diag.code.as_str().into())),
                    source: Some("dx".into()),
                    message: render_diagnostic(diag, &self.text)
                        .lines()
                        .next()
                        .unwrap_or(&diag.message)
                        .to_string(),
                    related_information: (!related.is_empty()).then_some(related),
                    ..Default::default()
                }
            })
            .collect()
    }

    /// The name under a position.
    fn name_at(&self, position: Position) -> Option<(String, std::ops::Range<usize>)> {
        let at = offset(&self.text, position);
        let word = word_at(&self.text, at);
        let name = self.text[word.clone()].to_string();
        name.starts_with(|ch: char| ch.is_alphabetic() || ch == '_')
            .then_some((name, word))
    }

    /// The type of the name under the cursor (its shapes are in it: `((Fin 3) => Float32)`)
    /// and its documentation.
    pub fn hover(&mut self, position: Position) -> Option<Hover> {
        let (name, word) = self.name_at(position)?;
        let ty = self.session.type_of_name(&name)?;
        let mut value = format!("```dx\n{name} : {ty}\n```");
        if let Some(doc) = self.session.doc_of_name(&name) {
            value.push_str(&format!("\n\n{doc}"));
        }
        Some(Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value,
            }),
            range: Some(range(&self.text, word)),
        })
    }

    /// Names, keywords and commands that complete the word before the cursor.
    pub fn completion(&self, position: Position) -> Vec<CompletionItem> {
        let at = offset(&self.text, position);
        let mut names = self.session.completion_names();
        names.extend(names_before(&self.text, at));
        let (_, matches) = complete_at(&self.text, at, &names);
        matches
            .into_iter()
            .map(|label| {
                let symbol = self
                    .checked
                    .symbols
                    .iter()
                    .find(|symbol| symbol.name == label);
                CompletionItem {
                    kind: Some(match symbol.map(|symbol| symbol.kind) {
                        Some(SymbolKind::Function) => CompletionItemKind::FUNCTION,
                        Some(SymbolKind::Type) => CompletionItemKind::CLASS,
                        Some(SymbolKind::Value) => CompletionItemKind::VARIABLE,
                        None if label.starts_with(':') => CompletionItemKind::KEYWORD,
                        None => CompletionItemKind::TEXT,
                    }),
                    detail: symbol.map(|symbol| symbol.ty.clone()),
                    label,
                    ..Default::default()
                }
            })
            .collect()
    }

    /// Where the name under the cursor is defined in this document (its last definition
    /// before the cursor, or the first one).
    pub fn definition(&self, position: Position) -> Option<Range> {
        let (name, word) = self.name_at(position)?;
        let mut found = self
            .checked
            .symbols
            .iter()
            .filter(|symbol| symbol.name == name);
        let first = found.clone().next()?;
        let before = found
            .by_ref()
            .filter(|symbol| symbol.name_span.range().start <= word.start)
            .last();
        let symbol = before.unwrap_or(first);
        Some(range(&self.text, symbol.name_span.range()))
    }

    /// The document's top-level definitions.
    #[allow(deprecated)] // `DocumentSymbol::deprecated` must still be given.
    pub fn symbols(&self) -> Vec<DocumentSymbol> {
        self.checked
            .symbols
            .iter()
            .map(|symbol| DocumentSymbol {
                name: symbol.name.clone(),
                detail: Some(symbol.ty.clone()),
                kind: match symbol.kind {
                    SymbolKind::Function => lsp_types::SymbolKind::FUNCTION,
                    SymbolKind::Value => lsp_types::SymbolKind::VARIABLE,
                    SymbolKind::Type => lsp_types::SymbolKind::TYPE_PARAMETER,
                },
                tags: None,
                deprecated: None,
                range: range(&self.text, symbol.block_span.range()),
                selection_range: range(&self.text, symbol.name_span.range()),
                children: None,
            })
            .collect()
    }
}
