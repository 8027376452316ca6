//! Arbitrary bytes as CQL text (lossily decoded as UTF-8): the parser must never panic,
//! and every statement it accepts must print as CQL that parses back to the same tree.

use mosaic_cql::parse::{parse_statement, parse_statements};

/// The target: must return (never panic) for any `data`.
pub fn run(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    if let Ok(statements) = parse_statements(&text) {
        for s in statements {
            let printed = s.to_string();
            match parse_statement(&printed) {
                Ok(again) => assert_eq!(again, s, "printed as {printed:?}"),
                Err(e) => panic!("{printed:?} (printed from an accepted statement) fails: {e}"),
            }
        }
    }
    let _ = parse_statement(&text);
}
