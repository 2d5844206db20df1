//! The dx language server (`dx lsp`): the Language Server Protocol over stdin/stdout, with
//! rust-analyzer's `lsp-server` and `lsp-types`.
//!
//! - diagnostics as you type: every change re-checks the document (parsed and type-checked
//!   in a fresh session with the prelude; nothing is run, so nothing is slow or written) and
//!   publishes all its errors;
//! - hover: the type of the name under the cursor, with its shapes, and its documentation;
//! - completion: names in scope, names the document binds before the cursor, keywords and
//!   `:` commands (the REPL's and the kernel's completion);
//! - go to definition and document symbols: the document's top-level definitions.
//!
//! - `position`: LSP positions (lines, UTF-16 units) and byte offsets.
//! - `analysis`: one checked document and the answers drawn from it.

mod analysis;
mod position;

use std::collections::HashMap;

use analysis::Analysis;
use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Notification as _,
    PublishDiagnostics,
};
use lsp_types::request::{
    Completion, DocumentSymbolRequest, GotoDefinition, HoverRequest, Request as _,
};
use lsp_types::{
    CompletionOptions, DocumentSymbolResponse, GotoDefinitionResponse, Location, OneOf,
    PublishDiagnosticsParams, ServerCapabilities, TextDocumentSyncCapability, TextDocumentSyncKind,
    Uri,
};

/// Serves the protocol on stdin and stdout until the client asks to exit.
pub fn run() -> anyhow::Result<()> {
    let (connection, io_threads) = Connection::stdio();
    let capabilities = ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        hover_provider: Some(lsp_types::HoverProviderCapability::Simple(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec![":".into()]),
            ..Default::default()
        }),
        definition_provider: Some(OneOf::Left(true)),
        document_symbol_provider: Some(OneOf::Left(true)),
        ..Default::default()
    };
    connection.initialize(serde_json::to_value(capabilities)?)?;
    Server::default().serve(&connection)?;
    drop(connection);
    io_threads.join()?;
    Ok(())
}

#[derive(Default)]
struct Server {
    documents: HashMap<Uri, Analysis>,
}

impl Server {
    fn serve(&mut self, connection: &Connection) -> anyhow::Result<()> {
        for message in &connection.receiver {
            match message {
                Message::Request(request) => {
                    if connection.handle_shutdown(&request)? {
                        return Ok(());
                    }
                    let response = self.answer(request);
                    connection.sender.send(Message::Response(response))?;
                }
                Message::Notification(notification) => {
                    if let Some(uri) = self.update(notification) {
                        let diagnostics = self
                            .documents
                            .get(&uri)
                            .map(|analysis| analysis.diagnostics(&uri))
                            .unwrap_or_default();
                        let params = PublishDiagnosticsParams {
                            uri,
                            diagnostics,
                            version: None,
                        };
                        connection
                            .sender
                            .send(Message::Notification(Notification::new(
                                PublishDiagnostics::METHOD.into(),
                                params,
                            )))?;
                    }
                }
                Message::Response(_) => {}
            }
        }
        Ok(())
    }

    /// Applies a document notification; returns the document whose diagnostics changed.
    fn update(&mut self, notification: Notification) -> Option<Uri> {
        match notification.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let params: lsp_types::DidOpenTextDocumentParams =
                    serde_json::from_value(notification.params).ok()?;
                let uri = params.text_document.uri;
                self.documents
                    .insert(uri.clone(), Analysis::new(params.text_document.text));
                Some(uri)
            }
            DidChangeTextDocument::METHOD => {
                let params: lsp_types::DidChangeTextDocumentParams =
                    serde_json::from_value(notification.params).ok()?;
                // Full synchronisation: the last change is the whole text.
                let text = params.content_changes.into_iter().last()?.text;
                let uri = params.text_document.uri;
                self.documents.insert(uri.clone(), Analysis::new(text));
                Some(uri)
            }
            DidCloseTextDocument::METHOD => {
                let params: lsp_types::DidCloseTextDocumentParams =
                    serde_json::from_value(notification.params).ok()?;
                self.documents.remove(&params.text_document.uri);
                Some(params.text_document.uri)
            }
            _ => None,
        }
    }

    fn answer(&mut self, request: Request) -> Response {
        let id = request.id.clone();
        match self.result(request) {
            Ok(value) => Response::new_ok(id, value),
            Err(err) => Response::new_err(
                id,
                lsp_server::ErrorCode::InvalidParams as i32,
                err.to_string(),
            ),
        }
    }

    fn result(&mut self, request: Request) -> anyhow::Result<serde_json::Value> {
        let Request { method, params, id } = request;
        let value = match method.as_str() {
            HoverRequest::METHOD => {
                let params: lsp_types::HoverParams = serde_json::from_value(params)?;
                let at = params.text_document_position_params;
                let hover = self
                    .document(&at.text_document.uri, &id)?
                    .hover(at.position);
                serde_json::to_value(hover)?
            }
            Completion::METHOD => {
                let params: lsp_types::CompletionParams = serde_json::from_value(params)?;
                let at = params.text_document_position;
                let items = self
                    .document(&at.text_document.uri, &id)?
                    .completion(at.position);
                serde_json::to_value(lsp_types::CompletionResponse::Array(items))?
            }
            GotoDefinition::METHOD => {
                let params: lsp_types::GotoDefinitionParams = serde_json::from_value(params)?;
                let at = params.text_document_position_params;
                let uri = at.text_document.uri.clone();
                let target = self.document(&uri, &id)?.definition(at.position);
                serde_json::to_value(
                    target.map(|range| GotoDefinitionResponse::Scalar(Location { uri, range })),
                )?
            }
            DocumentSymbolRequest::METHOD => {
                let params: lsp_types::DocumentSymbolParams = serde_json::from_value(params)?;
                let symbols = self.document(&params.text_document.uri, &id)?.symbols();
                serde_json::to_value(DocumentSymbolResponse::Nested(symbols))?
            }
            other => anyhow::bail!("dx lsp does not answer `{other}`"),
        };
        Ok(value)
    }

    fn document(&mut self, uri: &Uri, id: &RequestId) -> anyhow::Result<&mut Analysis> {
        self.documents.get_mut(uri).ok_or_else(|| {
            anyhow::anyhow!("request {id}: the document {} is not open", uri.as_str())
        })
    }
}
