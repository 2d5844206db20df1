//! Escapes in character and string literals, as Dex writes and prints them: Haskell's
//! (`'\n'`, `'\NUL'`, `'\210'`, `"a\"b"`), since Dex prints a `Word8` with Haskell's `show`.

/// The names of the control characters 0–32 (`\NUL` … `\SP`), Haskell's `asciiTab`.
const CONTROL_NAMES: [&str; 33] = [
    "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "HT", "LF", "VT", "FF", "CR",
    "SO", "SI", "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM", "SUB", "ESC",
    "FS", "GS", "RS", "US", "SP",
];

/// A byte inside a literal, without quotes (Haskell's `showLitChar`): printable ASCII as
/// itself, `\\`, the short escapes `\a \b \f \n \r \t \v`, other control characters by name
/// (`\NUL`), `\DEL`, and bytes above 127 in decimal (`\210`).
pub fn escape_byte(byte: u8) -> String {
    match byte {
        b'\\' => "\\\\".to_string(),
        0x07 => "\\a".to_string(),
        0x08 => "\\b".to_string(),
        0x0c => "\\f".to_string(),
        b'\n' => "\\n".to_string(),
        b'\r' => "\\r".to_string(),
        b'\t' => "\\t".to_string(),
        0x0b => "\\v".to_string(),
        0x20..=0x7e => (byte as char).to_string(),
        0x7f => "\\DEL".to_string(),
        0..=0x1f => format!("\\{}", CONTROL_NAMES[usize::from(byte)]),
        _ => format!("\\{byte}"),
    }
}

/// A character literal as Dex prints it: `'a'`, `'\''`, `'\n'`, `'\NUL'`, `'\210'`.
pub fn quoted_char(byte: u8) -> String {
    match byte {
        b'\'' => "'\\''".to_string(),
        _ => format!("'{}'", escape_byte(byte)),
    }
}

/// The text of a string of bytes as Dex prints it: `"a\"b"`, with `\&` where the next byte
/// would otherwise continue an escape (`"\210\&1"`, `"\SO\&H"`), as Haskell writes it.
pub fn quoted_bytes(bytes: impl IntoIterator<Item = u8>) -> String {
    let mut out = String::from("\"");
    let mut previous = None;
    for byte in bytes {
        push_in_string(&mut out, previous, byte);
        previous = Some(byte);
    }
    out.push('"');
    out
}

/// `byte` written inside a string literal after `previous`.
pub fn push_in_string(out: &mut String, previous: Option<u8>, byte: u8) {
    let continues = match previous {
        Some(previous) if previous > 0x7f => byte.is_ascii_digit(),
        Some(0x0e) => byte == b'H',
        _ => false,
    };
    if continues {
        out.push_str("\\&");
    }
    match byte {
        b'"' => out.push_str("\\\""),
        _ => out.push_str(&escape_byte(byte)),
    }
}

/// The byte a character literal (with its quotes, as `quoted_char` writes it) denotes.
pub fn char_byte(quoted: &str) -> Option<u8> {
    let inner = quoted.strip_prefix('\'')?.strip_suffix('\'')?;
    let text = unescape(inner)?;
    let mut chars = text.chars();
    match (chars.next(), chars.next()) {
        (Some(ch), None) => u8::try_from(ch).ok(),
        _ => None,
    }
}

/// The characters a literal's text (between its quotes) denotes: every escape `escape_byte`
/// writes, `\'`, `\"` and `\&` (nothing); `None` for an escape that names no byte (`\300`,
/// `\XYZ`). Other characters stand for themselves.
pub fn unescape(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let escape = &rest[at + 1..];
        let (ch, len) = escaped(escape)?;
        out.extend(ch);
        rest = &escape[len..];
    }
    out.push_str(rest);
    Some(out)
}

/// The character an escape (the text after its `\`) stands for, and the escape's length.
fn escaped(escape: &str) -> Option<(Option<char>, usize)> {
    let digits = escape.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 {
        let code: u32 = escape[..digits.min(3)].parse().ok()?;
        return (digits <= 3 && code <= 0xff).then(|| (char::from_u32(code), digits));
    }
    // The longest name that matches (`\SOH` rather than `\SO` and an `H`).
    let named = CONTROL_NAMES
        .iter()
        .enumerate()
        .chain(std::iter::once((0x7f, &"DEL")))
        .filter(|(_, name)| escape.starts_with(*name))
        .max_by_key(|(_, name)| name.len());
    if let Some((code, name)) = named {
        return Some((char::from_u32(code as u32), name.len()));
    }
    let ch = escape.chars().next()?;
    let byte = match ch {
        'a' => '\x07',
        'b' => '\x08',
        'f' => '\x0c',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'v' => '\x0b',
        '&' => return Some((None, 1)),
        '\\' | '\'' | '"' => ch,
        _ => return None,
    };
    Some((Some(byte), 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_printed_reads_back_as_itself() {
        for byte in 0..=255u8 {
            let quoted = quoted_char(byte);
            assert_eq!(char_byte(&quoted), Some(byte), "{quoted}");
        }
    }

    #[test]
    fn escapes_are_haskells() {
        assert_eq!(quoted_char(210), "'\\210'");
        assert_eq!(quoted_char(0), "'\\NUL'");
        assert_eq!(quoted_char(b'\n'), "'\\n'");
        assert_eq!(quoted_char(b'\''), "'\\''");
        assert_eq!(quoted_char(127), "'\\DEL'");
        assert_eq!(quoted_bytes(*b"a\"b"), "\"a\\\"b\"");
        assert_eq!(quoted_bytes([210, b'1']), "\"\\210\\&1\"");
        assert_eq!(unescape("\\SOH\\SO\\&H").as_deref(), Some("\x01\x0eH"));
        assert_eq!(unescape("\\300"), None);
        assert_eq!(unescape("\\q"), None);
    }
}
