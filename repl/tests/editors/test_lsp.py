"""`dx lsp` through a real LSP client, pytest-lsp (run by repl/tests/editors.rs): diagnostics as
you type, hover with the type and shapes, completion, go to definition, document symbols."""

import os

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

URI = "file:///work/example.dx"

SOURCE = """\
'# An example

xs = for i:(Fin 3). n_to_f (ordinal i)

def double(v: n=>Float) -> n=>Float given (n|Ix) =
  for i. 2.0 * v[i]

:p double xs
"""


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[os.environ["DX_BIN"], "lsp"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(capabilities=types.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


async def open_document(client, text):
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=URI, language_id="dx", version=1, text=text)
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return client.diagnostics[URI]


def position_of(text, needle, offset=0):
    before = text[: text.index(needle) + offset]
    return types.Position(line=before.count("\n"), character=len(before.rsplit("\n", 1)[-1]))


async def test_diagnostics_follow_the_typing(client: LanguageClient):
    assert list(await open_document(client, SOURCE)) == []
    broken = SOURCE.replace(":p double xs", ":p doubel xs + True")
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=broken)],
        )
    )
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    [diagnostic] = client.diagnostics[URI]
    assert "did you mean `double`" in diagnostic.message
    assert diagnostic.range.start == position_of(broken, "doubel")
    assert diagnostic.range.end == position_of(broken, "doubel", len("doubel"))
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    assert diagnostic.code == "T0005"  # a name nothing in scope defines


async def test_a_duplicate_points_at_the_first_declaration(client: LanguageClient):
    text = "struct P =\n  x: Float\n  x: Int\n"
    [diagnostic] = await open_document(client, text)
    assert diagnostic.code == "T0006"  # a name declared twice
    assert diagnostic.range.start == types.Position(line=2, character=2)
    [first] = diagnostic.related_information
    assert first.message == "first declared here"
    assert first.location.uri == URI
    assert first.location.range.start == types.Position(line=1, character=2)
    assert first.location.range.end == types.Position(line=1, character=3)


async def test_hover_shows_the_type_with_its_shapes(client: LanguageClient):
    await open_document(client, SOURCE)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=URI), position=position_of(SOURCE, "xs\n", 1))
    )
    assert "xs : ((Fin 3) => Float32)" in hover.contents.value
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=types.TextDocumentIdentifier(uri=URI), position=position_of(SOURCE, "n_to_f", 2))
    )
    assert "n_to_f" in hover.contents.value


async def test_completion_offers_the_documents_names(client: LanguageClient):
    text = SOURCE + ":p dou"
    await open_document(client, text)
    items = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=URI),
            position=position_of(text, ":p dou", len(":p dou")),
        )
    )
    labels = [item.label for item in items]
    assert labels == ["double"]
    assert items[0].kind == types.CompletionItemKind.Function


async def test_go_to_definition_and_symbols(client: LanguageClient):
    await open_document(client, SOURCE)
    location = await client.text_document_definition_async(
        types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=URI),
            position=position_of(SOURCE, "double xs", 2),
        )
    )
    assert location.uri == URI
    assert location.range.start == position_of(SOURCE, "double(")
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=URI))
    )
    assert [(symbol.name, symbol.kind) for symbol in symbols] == [
        ("xs", types.SymbolKind.Variable),
        ("double", types.SymbolKind.Function),
    ]
    assert symbols[1].detail == "((n => Float32) -> (n => Float32))"
