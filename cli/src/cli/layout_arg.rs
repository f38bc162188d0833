//! Layouts on the command line (`copr plan --source/--target`): the plan file's kinds
//! and fields, written `KIND:FIELD=VALUE,FIELD=VALUE,…`.
//!
//! `block-cyclic:m=10000,n=10000,mb=32,nb=32,nprow=2,npcol=4,grid_order=col-major` is
//! the `[source]` table
//!
//! ```toml
//! kind = "block-cyclic"
//! m = 10000
//! n = 10000
//! mb = 32
//! nb = 32
//! nprow = 2
//! npcol = 4
//! grid_order = "col-major"
//! ```
//!
//! Values are TOML values (numbers, `true`/`false`, arrays `[0,5000,10000]`, inline
//! tables `{…}`); a bare word is a string. Commas inside brackets and braces belong to
//! the value. The table is then read by the same code as a plan file, so the fields,
//! their defaults and their checks are the file's.

use std::path::Path;

use copr::layout::Layout;
use copr::plan::{parse_config, ConfigFormat};
use copr::{Error, Result};

/// The layout `spec` describes; errors name `flag` and the field.
///
/// # Errors
/// [`Error::Argument`] for text that is not `KIND:FIELD=VALUE,…`, and the plan file's
/// own errors (an unknown kind or field, a bad value, an invalid layout) with `flag`
/// in place of the file name.
pub(super) fn parse_layout(flag: &str, spec: &str) -> Result<Layout> {
    let toml = to_toml(flag, spec)?;
    parse_config::<Layout>(&toml, ConfigFormat::Toml, Path::new(flag)).map_err(|e| match e {
        // the text is generated one field a line: the field names the place, the line
        // number would only confuse
        Error::Parse { path, detail } => Error::Parse {
            path,
            detail: strip_line(&detail).to_string(),
        },
        e => e,
    })
}

/// `line 3: target: …` → `target: …`.
fn strip_line(detail: &str) -> &str {
    detail
        .strip_prefix("line ")
        .and_then(|rest| {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            (digits > 0).then(|| rest[digits..].strip_prefix(": "))?
        })
        .unwrap_or(detail)
}

/// The TOML table `spec` stands for, one field a line.
fn to_toml(flag: &str, spec: &str) -> Result<String> {
    let usage = |what: String| {
        Error::Argument(format!(
            "{flag} {spec}: {what}; write KIND:FIELD=VALUE,… with the plan file's kinds and fields, e.g. {flag} block-cyclic:m=1000,n=1000,mb=32,nb=32,nprow=2,npcol=2"
        ))
    };
    let (kind, fields) = match spec.split_once(':') {
        Some((k, rest)) if !k.contains('=') => (Some(k.trim()), rest),
        _ => (None, spec),
    };
    let mut out = String::new();
    if let Some(k) = kind {
        if k.is_empty() {
            return Err(usage("no kind before `:`".into()));
        }
        out.push_str(&format!("kind = {}\n", quoted(k)));
    }
    for part in split_top(fields).map_err(usage)? {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let Some((key, value)) = part.split_once('=') else {
            return Err(usage(format!("`{part}` is not FIELD=VALUE")));
        };
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(usage(format!("`{key}` is not a field name")));
        }
        if value.is_empty() {
            return Err(usage(format!("{key} has no value")));
        }
        out.push_str(&format!("{key} = {}\n", toml_value(value)));
    }
    Ok(out)
}

/// Splits at commas outside brackets, braces and quotes.
fn split_top(s: &str) -> std::result::Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let (mut depth, mut quote, mut start) = (0i64, false, 0);
    for (i, c) in s.char_indices() {
        match c {
            '"' => quote = !quote,
            '[' | '{' if !quote => depth += 1,
            ']' | '}' if !quote => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unbalanced `{c}`"));
                }
            }
            ',' if !quote && depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 || quote {
        return Err("an unclosed bracket, brace or quote".into());
    }
    parts.push(&s[start..]);
    Ok(parts)
}

/// A value as TOML: numbers, booleans, arrays, inline tables and quoted strings as
/// given, any other word quoted.
fn toml_value(v: &str) -> String {
    let raw = v.starts_with(|c: char| c.is_ascii_digit() || "+-[{\"".contains(c))
        || v == "true"
        || v == "false";
    if raw {
        v.to_string()
    } else {
        quoted(v)
    }
}

fn quoted(s: &str) -> String {
    let mut q = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            c if c.is_control() => q.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_become_one_toml_line_each() {
        let t = to_toml(
            "--source",
            "grid:row_splits=[0,5,10],col_splits=[0, 10],owners=[[0],[1]],note=\"a,b\",path=a\\b",
        )
        .unwrap();
        assert_eq!(
            t,
            "kind = \"grid\"\nrow_splits = [0,5,10]\ncol_splits = [0, 10]\nowners = [[0],[1]]\nnote = \"a,b\"\npath = \"a\\\\b\"\n"
        );
        let t = to_toml("--target", "kind=block-cyclic,m=4,grid_order=col-major").unwrap();
        assert_eq!(
            t,
            "kind = \"block-cyclic\"\nm = 4\ngrid_order = \"col-major\"\n"
        );
    }

    #[test]
    fn malformed_text_is_refused_with_the_flag() {
        for bad in [
            "block-cyclic:m",
            "block-cyclic:m=",
            ":m=4",
            "grid:row_splits=[0,5",
            "grid:owners=]",
            "grid:note=\"a",
            "block-cyclic:m x=4",
        ] {
            let e = to_toml("--source", bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--source {bad}: ")), "{e}");
        }
    }

    #[test]
    fn line_numbers_are_dropped() {
        assert_eq!(strip_line("line 12: field `mb`: bad"), "field `mb`: bad");
        assert_eq!(strip_line("field `mb`: bad"), "field `mb`: bad");
        assert_eq!(strip_line("line x: y"), "line x: y");
    }
}
