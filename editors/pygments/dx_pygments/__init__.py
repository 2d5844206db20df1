"""A Pygments lexer for dx (the kernel's `language_info.pygments_lexer` is `dx`), so that
Jupyter, nbconvert and anything else using Pygments highlight dx rather than Haskell.

Install it into the environment that renders notebooks: `pip install editors/pygments`.
"""

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Text, Whitespace

__all__ = ["DxLexer"]

KEYWORDS = (
    "def", "for", "for_", "if", "then", "else", "given", "import", "case", "of", "struct",
    "data", "enum", "interface", "instance", "where",
)
TYPES = (
    "Float", "Float32", "Float64", "Int", "Int32", "Int64", "Nat", "Word8", "Word32", "Word64",
    "Bool", "Key", "Fin", "Type", "Char", "String",
)
BUILTINS = (
    "grad", "jvp", "vjp", "linearize", "transpose_linear", "deriv", "deriv_rev", "jacobian",
    "hessian", "value_and_grad", "check_deriv", "stop_gradient", "sum", "fold", "scan", "reduce",
    "assoc_scan", "apply_n", "iota", "zero", "fst", "snd", "select", "size", "ordinal",
    "from_ordinal", "unsafe_from_ordinal", "pi", "infinity", "nan", "lowest", "highest",
)
COMMANDS = ("p", "t", "plot", "plotgrad", "table", "stages", "help", "export", "load", "quit", "q")


class DxLexer(RegexLexer):
    """dx source and literate files: code, `'` prose blocks, `>` output lines."""

    name = "dx"
    aliases = ["dx"]
    filenames = ["*.dx"]
    mimetypes = ["text/x-dx"]

    tokens = {
        "root": [
            # A prose block: `'` at column 0, to the next blank line.
            (r"^'[^\n]*\n(?:[^\n]+\n)*", String.Doc),
            # An output line of a literate file.
            (r"^>[^\n]*\n?", Comment.Special),
            (r"^%[a-z]+[^\n]*", Comment.Preproc),
            (r"(--|#)[^\n]*", Comment.Single),
            (r"^(:)(%s)\b" % "|".join(COMMANDS), bygroups(Punctuation, Keyword.Pseudo)),
            (words(KEYWORDS, suffix=r"\b"), Keyword),
            (words(("True", "False", "Nothing", "Just", "Left", "Right"), suffix=r"\b"), Keyword.Constant),
            (words(TYPES, suffix=r"\b"), Keyword.Type),
            (words(BUILTINS, suffix=r"\b"), Name.Builtin),
            (r"(?<=def )[a-z_][A-Za-z0-9_']*", Name.Function),
            (r"[A-Z][A-Za-z0-9_']*", Name.Class),
            (r"[a-z_][A-Za-z0-9_']*", Name),
            (r"\d+\.\d*(?:[eE][+-]?\d+)?|\d*\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+", Number.Float),
            (r"\d+", Number.Integer),
            (r'"(?:\\.|[^"\\])*"', String.Double),
            (r"'(?:\\.|[^'\\])'", String.Char),
            (r"\\", Operator),
            (r"=>|->|\*\*\.|\.\*\*|\*\*|\.\*|~~|==|!=|<=|>=|&&|\|\||[-+*/<>=@$|!]", Operator),
            (r"[()\[\],.:;`]", Punctuation),
            (r"\s+", Whitespace),
            (r".", Text),
        ]
    }
