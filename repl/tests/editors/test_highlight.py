"""The Pygments lexer and the TextMate grammar for dx (run by repl/tests/editors.rs)."""

import json
import os
import re
import sys
import tomllib

import pygments
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.token import Comment, Keyword, Name, Number, String, Token

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")
sys.path.insert(0, os.path.join(ROOT, "editors", "pygments"))

from dx_pygments import DxLexer  # noqa: E402

SAMPLE = """\
'# Title
Some prose.

-- The square.
def sq2(x: Float) -> Float = x * x   # a comment
xs = for i:(Fin 3). n_to_f (ordinal i) * 1.5e-3
:plot (xs, xs) "title"
> 42.
"""


def tokens(text):
    return [(kind, value) for kind, value in pygments.lex(text, DxLexer()) if value.strip()]


def kind_of(text, value):
    return next(kind for kind, token in tokens(text) if token == value)


def test_the_lexer_tells_the_parts_of_dx_apart():
    assert kind_of(SAMPLE, "'# Title\nSome prose.\n") in String.Doc
    assert kind_of(SAMPLE, "-- The square.") in Comment
    assert kind_of(SAMPLE, "def") in Keyword
    assert kind_of(SAMPLE, "sq2") in Name.Function
    assert kind_of(SAMPLE, "Float") in Keyword.Type
    assert kind_of(SAMPLE, "Fin") in Keyword.Type
    assert kind_of(SAMPLE, "for") in Keyword
    assert kind_of(SAMPLE, "1.5e-3") in Number.Float
    assert kind_of(SAMPLE, "3") in Number.Integer
    assert kind_of(SAMPLE, "plot") in Keyword.Pseudo
    assert kind_of(SAMPLE, '"title"') in String
    assert kind_of(SAMPLE, "> 42.\n") in Comment.Special
    assert not any(kind in Token.Error for kind, _ in tokens(SAMPLE))
    # Every example file lexes without an error token.
    examples = os.path.join(ROOT, "examples")
    for name in os.listdir(examples):
        if name.endswith(".dx"):
            with open(os.path.join(examples, name)) as file:
                assert not any(kind in Token.Error for kind, _ in tokens(file.read())), name


def test_the_lexer_is_registered_under_the_kernels_name():
    with open(os.path.join(ROOT, "editors", "pygments", "pyproject.toml"), "rb") as file:
        project = tomllib.load(file)
    entry = project["project"]["entry-points"]["pygments.lexers"]["dx"]
    assert entry == "dx_pygments:DxLexer"
    assert "dx" in DxLexer.aliases and "*.dx" in DxLexer.filenames
    with open(os.path.join(ROOT, "kernel", "src", "server.rs")) as file:
        assert 'pygments_lexer: Some("dx".to_string())' in file.read()


def test_pygments_finds_the_installed_lexer_by_the_kernels_name():
    # As Jupyter and nbconvert look it up: by the name the kernel's `language_info` gives,
    # through the entry point `pip install editors/pygments` registers (.ci/python-venv).
    lexer = get_lexer_by_name("dx")
    assert type(lexer).__name__ == "DxLexer" and lexer.name == "dx"
    assert type(get_lexer_for_filename("model.dx")).__name__ == "DxLexer"
    snippet = "def sq(x: Float) -> Float = x * x\nys = for i:(Fin 3). sq 2.0\n"
    kinds = [(kind, value) for kind, value in lexer.get_tokens(snippet) if value.strip()]
    assert (Keyword, "def") in kinds and (Keyword, "for") in kinds
    assert (Keyword.Type, "Float") in kinds and (Keyword.Type, "Fin") in kinds
    assert not any(kind in Token.Error for kind, _ in kinds)
    html = pygments.highlight(snippet, lexer, HtmlFormatter())
    assert '<span class="k">def</span>' in html and '<span class="k">for</span>' in html
    assert '<span class="kt">Float</span>' in html


def test_the_textmate_grammar_is_valid_and_scopes_the_same_words():
    with open(os.path.join(ROOT, "editors", "vscode", "syntaxes", "dx.tmLanguage.json")) as file:
        grammar = json.load(file)
    assert grammar["scopeName"] == "source.dx" and grammar["fileTypes"] == ["dx"]
    repository = grammar["repository"]
    for include in grammar["patterns"]:
        assert include["include"][1:] in repository
    patterns = {}
    for name, rule in repository.items():
        for key in ("match", "begin", "end"):
            if key in rule:
                patterns[(name, key)] = re.compile(rule[key], re.M)
    line = "def sq2(x: Float) -> Float = grad sq2 1.5  -- done"
    assert patterns[("definition", "match")].search(line).group(2) == "sq2"
    assert patterns[("type", "match")].search(line).group(0) == "Float"
    assert patterns[("builtin", "match")].search(line).group(0) == "grad"
    assert patterns[("comment", "match")].search(line).group(0) == "-- done"
    assert patterns[("command", "match")].match(":plotgrad f 0.0 1.0").group(1) == "plotgrad"
    with open(os.path.join(ROOT, "editors", "vscode", "package.json")) as file:
        manifest = json.load(file)
    assert manifest["contributes"]["grammars"][0]["scopeName"] == "source.dx"
