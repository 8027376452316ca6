//! CQL text to tokens.
//!
//! One pass over the bytes, no allocation per token: a token is a kind and a byte span, and
//! the parser reads (and unescapes) the text only when it needs it. Keywords are not
//! distinguished here — every unquoted word is a [`Kind::Word`] and the parser decides
//! whether it is a keyword where it stands, which is how CQL's non-reserved keywords work.
//!
//! The lexical rules follow Cassandra's lexer: `--`, `//` and `/* */` comments; `'…'`
//! strings with `''` escapes and `$$…$$` strings; `"…"` quoted names with `""` escapes;
//! integers with an optional leading `-`; floats (`1.5`, `1.`, `-2e10`); `0x…` blobs;
//! unquoted UUIDs; duration literals (`1h30m`, `-2d`, and the ISO 8601 forms `P1Y2M3DT4H`,
//! `PT5M`, `P2W`, `P0001-02-03T04:05:06`); `?` and `:` for bind markers.
//!
//! Spans always start and end on ASCII bytes (or the end of the text), so slicing the text
//! by them never splits a character.
#![deny(clippy::indexing_slicing)]

use super::error::{position, ParseError};

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An unquoted identifier or keyword: `[A-Za-z][A-Za-z0-9_]*`.
    Word,
    /// `"Quoted Name"`.
    QuotedName,
    /// `'string'`.
    String,
    /// `$$string$$`.
    DollarString,
    Integer,
    Float,
    /// `0x…`.
    Hex,
    Uuid,
    /// `1h30m`, `-2d`, `P1Y2M`, `-PT5M`, `P2W`, `P0001-02-03T04:05:06`.
    Duration,
    QMark,
    Colon,
    Comma,
    Dot,
    Semicolon,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Star,
    Plus,
    Minus,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    PlusEq,
    MinusEq,
    Eof,
}

impl Kind {
    /// How Cassandra's error messages name the token kind.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Kind::Word => "IDENT",
            Kind::QuotedName => "QUOTED_NAME",
            Kind::String | Kind::DollarString => "STRING_LITERAL",
            Kind::Integer => "INTEGER",
            Kind::Float => "FLOAT",
            Kind::Hex => "HEXNUMBER",
            Kind::Uuid => "UUID",
            Kind::Duration => "DURATION",
            Kind::QMark => "QMARK",
            Kind::Colon => "':'",
            Kind::Comma => "','",
            Kind::Dot => "'.'",
            Kind::Semicolon => "';'",
            Kind::LParen => "'('",
            Kind::RParen => "')'",
            Kind::LBracket => "'['",
            Kind::RBracket => "']'",
            Kind::LBrace => "'{'",
            Kind::RBrace => "'}'",
            Kind::Star => "'*'",
            Kind::Plus => "'+'",
            Kind::Minus => "'-'",
            Kind::Eq => "'='",
            Kind::Ne => "'!='",
            Kind::Lt => "'<'",
            Kind::Le => "'<='",
            Kind::Gt => "'>'",
            Kind::Ge => "'>='",
            Kind::PlusEq => "'+='",
            Kind::MinusEq => "'-='",
            Kind::Eof => "EOF",
        }
    }
}

/// A token: its kind and byte span in the text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    pub(crate) kind: Kind,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn lex_error(text: &str, offset: usize, message: String) -> ParseError {
    let (line, column) = position(text, offset);
    ParseError::Syntax {
        line,
        column,
        message,
    }
}

/// Splits `text` into tokens; the last one is always [`Kind::Eof`].
// Long on purpose: one loop over the bytes with one arm per token class, which reads (and
// is fuzzed) as a single state machine; helpers would only pass the cursor around.
pub(crate) fn tokenize(text: &str) -> Result<Vec<Token>, ParseError> {
    let b = text.as_bytes();
    let at = |i: usize| b.get(i).copied();
    let mut tokens = Vec::with_capacity(text.len() / 3 + 1);
    let mut i = 0;
    while let Some(c) = at(i) {
        let start = i;
        let next = at(i + 1);
        let kind = match c {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0c => {
                i += 1;
                continue;
            }
            b'-' if next == Some(b'-') => {
                i = line_end(b, i);
                continue;
            }
            b'/' if next == Some(b'/') => {
                i = line_end(b, i);
                continue;
            }
            b'/' if next == Some(b'*') => match find(b, i + 2, b"*/") {
                Some(end) => {
                    i = end + 2;
                    continue;
                }
                None => {
                    return Err(lex_error(
                        text,
                        b.len(),
                        "mismatched input '<EOF>': unterminated /* comment".to_owned(),
                    ))
                }
            },
            b'\'' => {
                i = quoted_end(text, i, b'\'')?;
                Kind::String
            }
            b'"' => {
                i = quoted_end(text, i, b'"')?;
                if i == start + 2 {
                    return Err(lex_error(
                        text,
                        start,
                        "no viable alternative at input '\"\"' (empty quoted identifier)"
                            .to_owned(),
                    ));
                }
                Kind::QuotedName
            }
            b'$' if next == Some(b'$') => match find(b, i + 2, b"$$") {
                Some(end) => {
                    i = end + 2;
                    Kind::DollarString
                }
                None => {
                    return Err(lex_error(
                        text,
                        b.len(),
                        "mismatched character '<EOF>' expecting '$$'".to_owned(),
                    ))
                }
            },
            b'0' if matches!(next, Some(b'x' | b'X')) => {
                i += 2;
                while at(i).is_some_and(|h| h.is_ascii_hexdigit()) {
                    i += 1;
                }
                if at(i).is_some_and(is_ident_byte) {
                    return Err(bad_token(text, start));
                }
                if (i - start) % 2 != 0 {
                    return Err(lex_error(
                        text,
                        start,
                        format!(
                            "invalid hex blob '{}': an odd number of hex digits",
                            clip(text.get(start..i).unwrap_or(""))
                        ),
                    ));
                }
                Kind::Hex
            }
            b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' if is_uuid_at(b, i) => {
                i += 36;
                Kind::Uuid
            }
            b'0'..=b'9' => {
                let (end, kind) = number(text, i)?;
                i = end;
                kind
            }
            b'-' if next.is_some_and(|d| d.is_ascii_digit()) => {
                let (end, kind) = number(text, i)?;
                i = end;
                kind
            }
            b'-' if next == Some(b'P') && iso_duration_end(b, i + 1).is_some() => {
                i = iso_duration_end(b, i + 1).unwrap_or(i + 1);
                Kind::Duration
            }
            b'P' if iso_duration_end(b, i).is_some() => {
                i = iso_duration_end(b, i).unwrap_or(i + 1);
                Kind::Duration
            }
            b'a'..=b'z' | b'A'..=b'Z' => {
                i += 1;
                while at(i).is_some_and(is_ident_byte) {
                    i += 1;
                }
                Kind::Word
            }
            _ => {
                let (kind, len) = match (c, next) {
                    (b'!', Some(b'=')) => (Kind::Ne, 2),
                    (b'<', Some(b'=')) => (Kind::Le, 2),
                    (b'>', Some(b'=')) => (Kind::Ge, 2),
                    (b'+', Some(b'=')) => (Kind::PlusEq, 2),
                    (b'-', Some(b'=')) => (Kind::MinusEq, 2),
                    (b'<', _) => (Kind::Lt, 1),
                    (b'>', _) => (Kind::Gt, 1),
                    (b'=', _) => (Kind::Eq, 1),
                    (b'+', _) => (Kind::Plus, 1),
                    (b'-', _) => (Kind::Minus, 1),
                    (b'?', _) => (Kind::QMark, 1),
                    (b':', _) => (Kind::Colon, 1),
                    (b',', _) => (Kind::Comma, 1),
                    (b'.', _) => (Kind::Dot, 1),
                    (b';', _) => (Kind::Semicolon, 1),
                    (b'(', _) => (Kind::LParen, 1),
                    (b')', _) => (Kind::RParen, 1),
                    (b'[', _) => (Kind::LBracket, 1),
                    (b']', _) => (Kind::RBracket, 1),
                    (b'{', _) => (Kind::LBrace, 1),
                    (b'}', _) => (Kind::RBrace, 1),
                    (b'*', _) => (Kind::Star, 1),
                    _ => {
                        let ch = text
                            .get(start..)
                            .and_then(|s| s.chars().next())
                            .unwrap_or('?');
                        return Err(lex_error(
                            text,
                            start,
                            format!("no viable alternative at character '{}'", ch.escape_debug()),
                        ));
                    }
                };
                i += len;
                kind
            }
        };
        tokens.push(Token {
            kind,
            start,
            end: i,
        });
    }
    tokens.push(Token {
        kind: Kind::Eof,
        start: b.len(),
        end: b.len(),
    });
    Ok(tokens)
}

/// The offset of the newline ending the line comment at `i` (or the end of the text).
fn line_end(b: &[u8], i: usize) -> usize {
    b.get(i..)
        .and_then(|rest| rest.iter().position(|&c| c == b'\n'))
        .map_or(b.len(), |p| i + p)
}

/// The offset of the first `needle` at or after `from`.
fn find(b: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    b.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| from + p)
}

/// The offset just past the closing quote of the quoted token starting at `start`
/// (doubled quotes are escapes).
fn quoted_end(text: &str, start: usize, quote: u8) -> Result<usize, ParseError> {
    let b = text.as_bytes();
    let mut i = start + 1;
    loop {
        match b.get(i) {
            None => {
                return Err(lex_error(
                    text,
                    b.len(),
                    format!(
                        "mismatched character '<EOF>' expecting '{}'",
                        char::from(quote)
                    ),
                ))
            }
            Some(&c) if c == quote => {
                if b.get(i + 1) == Some(&quote) {
                    i += 2;
                } else {
                    return Ok(i + 1);
                }
            }
            Some(_) => i += 1,
        }
    }
}

/// Whether an unquoted UUID (`8-4-4-4-12` hex digits, not followed by an identifier
/// character) starts at `i`.
fn is_uuid_at(b: &[u8], i: usize) -> bool {
    let Some(candidate) = b.get(i..i + 36) else {
        return false;
    };
    let shape_ok = candidate.iter().enumerate().all(|(k, &c)| match k {
        8 | 13 | 18 | 23 => c == b'-',
        _ => c.is_ascii_hexdigit(),
    });
    shape_ok && !b.get(i + 36).copied().is_some_and(is_ident_byte)
}

/// Scans the number starting at `start` (digits or `-` then digits).
fn number(text: &str, start: usize) -> Result<(usize, Kind), ParseError> {
    let b = text.as_bytes();
    let at = |i: usize| b.get(i).copied();
    let digit = |i: usize| at(i).is_some_and(|d| d.is_ascii_digit());
    let mut i = start;
    if at(i) == Some(b'-') {
        i += 1;
    }
    while digit(i) {
        i += 1;
    }
    let mut kind = Kind::Integer;
    // `1..2` (a collection slice) is an integer, then `..`.
    if at(i) == Some(b'.') && at(i + 1) != Some(b'.') {
        kind = Kind::Float;
        i += 1;
        while digit(i) {
            i += 1;
        }
    }
    if matches!(at(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(at(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if digit(j) {
            while digit(j) {
                j += 1;
            }
            i = j;
            kind = Kind::Float;
        }
    }
    if kind == Kind::Integer
        && (at(i).is_some_and(is_ident_byte) || text.get(i..).is_some_and(|s| s.starts_with('µ')))
    {
        let mut j = i;
        loop {
            if at(j).is_some_and(is_ident_byte) {
                j += 1;
            } else if text.get(j..).is_some_and(|s| s.starts_with('µ')) {
                j += 'µ'.len_utf8();
            } else {
                break;
            }
        }
        let word = text.get(start..j).unwrap_or("");
        if is_duration(word) {
            return Ok((j, Kind::Duration));
        }
        return Err(bad_token(text, start));
    }
    if at(i).is_some_and(is_ident_byte) {
        return Err(bad_token(text, start));
    }
    Ok((i, kind))
}

/// Whether `word` is a CQL duration literal such as `1h30m`, `-2d` or `12µs`.
fn is_duration(word: &str) -> bool {
    const UNITS: [&str; 11] = ["y", "mo", "w", "d", "h", "m", "s", "ms", "us", "µs", "ns"];
    let rest = word.strip_prefix('-').unwrap_or(word);
    let mut chars = rest.char_indices().peekable();
    let mut groups = 0;
    while chars.peek().is_some() {
        let digits_start = chars.peek().map_or(0, |&(i, _)| i);
        let mut digits = 0;
        while chars.peek().is_some_and(|(_, c)| c.is_ascii_digit()) {
            chars.next();
            digits += 1;
        }
        let unit_start = chars.peek().map_or(rest.len(), |&(i, _)| i);
        while chars.peek().is_some_and(|(_, c)| !c.is_ascii_digit()) {
            chars.next();
        }
        let unit_end = chars.peek().map_or(rest.len(), |&(i, _)| i);
        let unit = rest.get(unit_start..unit_end).unwrap_or("").to_lowercase();
        if digits == 0 || digits_start == unit_start || !UNITS.contains(&unit.as_str()) {
            return false;
        }
        groups += 1;
    }
    groups > 0
}

/// The end of the ISO 8601 duration starting with the `P` at `p`, as Cassandra's lexer's
/// `DURATION` rule reads one: `P` then years, months, days (each optional, in that order,
/// at least one) and optionally `T` with hours, minutes, seconds (likewise); or `P` and the
/// time part alone; or `PnW`; or the alternative form `Pyyyy-mm-ddThh:mm:ss`. Designators
/// are upper case. A match followed by a letter, digit or `_` is the start of an identifier
/// instead (the longer token wins, as in Cassandra's lexer), except for the alternative form,
/// which is longer than any identifier it starts.
fn iso_duration_end(b: &[u8], p: usize) -> Option<usize> {
    if b.get(p) != Some(&b'P') {
        return None;
    }
    const ALTERNATIVE: &[u8] = b"P####-##-##T##:##:##";
    let alternative = b.get(p..p + ALTERNATIVE.len()).is_some_and(|candidate| {
        candidate
            .iter()
            .zip(ALTERNATIVE)
            .all(|(&c, &shape)| match shape {
                b'#' => c.is_ascii_digit(),
                _ => c == shape,
            })
    });
    if alternative {
        return Some(p + ALTERNATIVE.len());
    }
    // Digits at `i` and the byte after them.
    let digits_then = |i: usize| -> Option<(usize, u8)> {
        let n = b
            .get(i..)?
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if n == 0 {
            return None;
        }
        Some((i + n, *b.get(i + n)?))
    };
    // Designators in order, each after its digits; the end of the last one, if any.
    let designators = |mut i: usize, mut allowed: &[u8]| -> Option<usize> {
        let mut end = None;
        while let Some((j, d)) = digits_then(i) {
            let Some(at) = allowed.iter().position(|&a| a == d) else {
                break;
            };
            allowed = allowed.get(at + 1..).unwrap_or_default();
            i = j + 1;
            end = Some(i);
        }
        end
    };
    let mut end = p + 1;
    if b.get(end) != Some(&b'T') {
        if let Some((j, b'W')) = digits_then(end) {
            end = j + 1;
        } else {
            end = designators(end, b"YMD")?;
            if b.get(end) == Some(&b'T') {
                end = designators(end + 1, b"HMS").unwrap_or(end);
            }
        }
    } else {
        end = designators(end + 1, b"HMS")?;
    }
    if b.get(end).copied().is_some_and(is_ident_byte) {
        return None;
    }
    Some(end)
}

fn bad_token(text: &str, start: usize) -> ParseError {
    let b = text.as_bytes();
    let mut end = start;
    while b
        .get(end)
        .is_some_and(|&c| is_ident_byte(c) || c == b'-' || c == b'.')
    {
        end += 1;
    }
    let word = text.get(start..end).unwrap_or("");
    lex_error(
        text,
        start,
        format!("no viable alternative at input '{}'", clip(word)),
    )
}

/// At most 64 characters of `s`, for messages.
pub(crate) fn clip(s: &str) -> String {
    if s.chars().count() <= 64 {
        s.to_owned()
    } else {
        let mut out: String = s.chars().take(61).collect();
        out.push_str("...");
        out
    }
}

/// The text of a quoted token without its quotes, doubled quotes undone.
pub(crate) fn unquote(raw: &str, quote: char) -> String {
    let inner = raw
        .strip_prefix(quote)
        .and_then(|s| s.strip_suffix(quote))
        .unwrap_or(raw);
    let doubled: &[char] = &[quote, quote];
    let doubled: String = doubled.iter().collect();
    if inner.contains(doubled.as_str()) {
        inner.replace(doubled.as_str(), &quote.to_string())
    } else {
        inner.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Kind> {
        tokenize(text)
            .expect("lexes")
            .into_iter()
            .map(|t| t.kind)
            .collect()
    }

    fn texts(text: &str) -> Vec<&str> {
        tokenize(text)
            .expect("lexes")
            .into_iter()
            .map(|t| text.get(t.start..t.end).expect("span"))
            .collect()
    }

    #[test]
    fn words_numbers_and_punctuation() {
        use Kind::*;
        assert_eq!(
            kinds("SELECT a, b FROM ks.t WHERE x >= -12 AND y != 1.5e3;"),
            vec![
                Word, Word, Comma, Word, Word, Word, Dot, Word, Word, Word, Ge, Integer, Word,
                Word, Ne, Float, Semicolon, Eof
            ]
        );
    }

    #[test]
    fn comments_are_skipped() {
        assert_eq!(
            texts("a -- x\n b // y\n/* z\n */ c"),
            vec!["a", "b", "c", ""]
        );
    }

    #[test]
    fn strings_keep_their_escapes_in_the_span() {
        assert_eq!(texts("'it''s' $$a'b$$"), vec!["'it''s'", "$$a'b$$", ""]);
        assert_eq!(unquote("'it''s'", '\''), "it's");
        assert_eq!(unquote("\"a\"\"b\"", '"'), "a\"b");
    }

    #[test]
    fn uuids_are_recognised_before_numbers_and_words() {
        assert_eq!(
            kinds("123e4567-e89b-12d3-a456-426614174000 DEADBEEF-0000-0000-0000-000000000000"),
            vec![Kind::Uuid, Kind::Uuid, Kind::Eof]
        );
        assert_eq!(kinds("deadbeef"), vec![Kind::Word, Kind::Eof]);
    }

    #[test]
    fn numbers_in_their_cassandra_shapes() {
        assert_eq!(kinds("1 -1 1. 1.5 1e5 -2E-3 0x 0xCAFE"), {
            use Kind::*;
            vec![Integer, Integer, Float, Float, Float, Float, Hex, Hex, Eof]
        });
        assert_eq!(
            kinds("1h30m -2d 12µs 3mo"),
            vec![Kind::Duration; 4]
                .into_iter()
                .chain([Kind::Eof])
                .collect::<Vec<_>>()
        );
        assert!(tokenize("12abc").is_err());
        assert!(tokenize("0xabc").is_err(), "odd hex digits");
        assert!(tokenize("0xzz").is_err());
        assert!(tokenize("1.5h").is_err());
    }

    #[test]
    fn iso_durations_are_tokens_and_near_misses_are_words() {
        for text in [
            "P1Y2M3DT4H5M6S",
            "P1Y",
            "P2M3D",
            "P3D",
            "PT4H",
            "PT5M6S",
            "PT6S",
            "P1DT1S",
            "P2W",
            "-P2W",
            "-PT1H",
            "P0001-02-03T04:05:06",
            "-P0001-02-03T04:05:06",
        ] {
            assert_eq!(kinds(text), vec![Kind::Duration, Kind::Eof], "{text}");
        }
        // Identifiers that merely start like a duration.
        for text in [
            "P", "PT", "P1", "P1Dx", "P1YT", "P1D2", "Pw", "p1d", "P1W2", "PT1D",
        ] {
            assert_eq!(kinds(text), vec![Kind::Word, Kind::Eof], "{text}");
        }
        assert_eq!(
            kinds("-P1 P0001-02-03T04:05:06x"),
            vec![
                Kind::Minus,
                Kind::Word,
                Kind::Duration,
                Kind::Word,
                Kind::Eof
            ]
        );
    }

    #[test]
    fn operators() {
        use Kind::*;
        assert_eq!(
            kinds("= != < <= > >= + += - -= ? :"),
            vec![Eq, Ne, Lt, Le, Gt, Ge, Plus, PlusEq, Minus, MinusEq, QMark, Colon, Eof]
        );
    }

    #[test]
    fn unterminated_and_unknown_input_is_an_error_with_a_position() {
        let e = tokenize("SELECT 'abc").expect_err("unterminated");
        assert_eq!((e.line(), e.column()), (1, 11));
        assert!(e.message().contains("expecting '''"), "{e}");
        assert!(tokenize("SELECT \"abc").is_err());
        assert!(tokenize("/* never closed").is_err());
        assert!(tokenize("$$ never closed").is_err());
        let e = tokenize("a\n  @").expect_err("unknown char");
        assert_eq!((e.line(), e.column()), (2, 2));
        assert!(tokenize("\"\"").is_err(), "empty quoted identifier");
        assert!(tokenize("é").is_err());
    }
}
