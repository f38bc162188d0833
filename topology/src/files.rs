//! Reading TOML/JSON description files with errors that name file, line and
//! field, and the small helpers the line-oriented formats share.
//!
//! Used by this crate's loaders and by `copr-cost-models` for its own
//! configuration files.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Origin, Result, TopologyError};

/// A serialisation format for description files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// TOML (the default for any extension but `.json`).
    Toml,
    /// JSON.
    Json,
}

impl Format {
    /// The format a file name implies: `.json` is JSON, anything else TOML.
    ///
    /// ```
    /// use copr_topology::files::Format;
    /// assert_eq!(Format::from_path("a/b.JSON".as_ref()), Format::Json);
    /// assert_eq!(Format::from_path("a/b.toml".as_ref()), Format::Toml);
    /// ```
    pub fn from_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("json") => Self::Json,
            _ => Self::Toml,
        }
    }
}

/// One step of a [`FieldPath`]: a table key or an array index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PathSeg {
    /// A key in a table/object.
    Key(String),
    /// A 0-based index in an array.
    Index(usize),
}

/// The path of a field inside a document, e.g. `inter.link_bandwidth[1]`.
///
/// ```
/// use copr_topology::files::FieldPath;
/// let p = FieldPath::root().key("terms").index(2).key("weight");
/// assert_eq!(p.to_string(), "terms[2].weight");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct FieldPath(pub Vec<PathSeg>);

impl FieldPath {
    /// The document itself.
    pub fn root() -> Self {
        Self(Vec::new())
    }

    /// This path followed by table key `k`.
    #[must_use]
    pub fn key(&self, k: &str) -> Self {
        let mut v = self.0.clone();
        v.push(PathSeg::Key(k.to_string()));
        Self(v)
    }

    /// This path followed by array index `i`.
    #[must_use]
    pub fn index(&self, i: usize) -> Self {
        let mut v = self.0.clone();
        v.push(PathSeg::Index(i));
        Self(v)
    }

    /// `prefix` followed by this path.
    #[must_use]
    pub fn under(&self, prefix: &FieldPath) -> Self {
        let mut v = prefix.0.clone();
        v.extend(self.0.iter().cloned());
        Self(v)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(document)");
        }
        for (n, seg) in self.0.iter().enumerate() {
            match seg {
                PathSeg::Key(k) if n == 0 => write!(f, "{k}")?,
                PathSeg::Key(k) => write!(f, ".{k}")?,
                PathSeg::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

/// A rejected value found while validating a parsed document: which field,
/// what value, why. Turned into a [`TopologyError`] with file and line by
/// [`Invalid::into_error`].
#[derive(Clone, Debug, PartialEq)]
pub struct Invalid {
    /// The field.
    pub field: FieldPath,
    /// The value, as text.
    pub value: String,
    /// Why it is rejected.
    pub reason: String,
}

impl Invalid {
    /// A rejected value.
    pub fn new(field: FieldPath, value: impl fmt::Display, reason: impl Into<String>) -> Self {
        Self {
            field,
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// The same rejection with its field path placed under `prefix`.
    #[must_use]
    pub fn under(mut self, prefix: &FieldPath) -> Self {
        self.field = self.field.under(prefix);
        self
    }

    /// The error for this rejection. With `source = Some((text, format))`
    /// the line of the field is looked up in the document's text.
    pub fn into_error(self, file: Option<&Path>, source: Option<(&str, Format)>) -> TopologyError {
        let line = source.and_then(|(text, fmt)| locate_line(text, fmt, &self.field));
        TopologyError::InvalidValue {
            origin: Origin::maybe_file(file).at_maybe_line(line),
            field: self.field.to_string(),
            value: self.value,
            reason: self.reason,
        }
    }
}

/// Largest latency, inverse bandwidth or weight copr accepts: 10⁹ (seconds, seconds
/// per byte, or a factor). With it and [`MIN_BANDWIDTH`], every cost copr computes —
/// up to 2⁶⁴ bytes over up to 2⁴⁸ rank pairs, summed over a model's terms — stays far
/// below `f64::MAX`, so no printed number is infinite or NaN.
pub const MAX_COST: f64 = 1e9;

/// Smallest bandwidth copr accepts: 10⁻⁹ bytes per second (its inverse is
/// [`MAX_COST`]); the largest is 10³⁰.
pub const MIN_BANDWIDTH: f64 = 1e-9;

/// Largest bandwidth copr accepts, bytes per second.
pub const MAX_BANDWIDTH: f64 = 1e30;

/// Checks that `v` is finite, `>= 0` and at most [`MAX_COST`] (a latency, an inverse
/// bandwidth, a weight). This and [`check_bandwidth`] are the one check every float
/// copr reads from a file or a flag goes through.
///
/// # Errors
/// [`Invalid`] naming `field` if `v` is negative, NaN, infinite or above
/// [`MAX_COST`].
///
/// ```
/// use copr_topology::files::{check_nonneg, FieldPath};
/// assert!(check_nonneg(0.5, &FieldPath::root().key("latency")).is_ok());
/// let e = check_nonneg(-1.0, &FieldPath::root().key("latency")).unwrap_err();
/// assert_eq!(e.field.to_string(), "latency");
/// assert!(check_nonneg(1e308, &FieldPath::root().key("latency")).is_err());
/// ```
pub fn check_nonneg(v: f64, field: &FieldPath) -> Result<(), Invalid> {
    if v.is_nan() {
        Err(Invalid::new(field.clone(), short(v), "NaN is not a cost"))
    } else if v.is_infinite() {
        Err(Invalid::new(field.clone(), short(v), "must be finite"))
    } else if v < 0.0 {
        Err(Invalid::new(
            field.clone(),
            short(v),
            "must not be negative",
        ))
    } else if v > MAX_COST {
        Err(Invalid::new(
            field.clone(),
            short(v),
            "must be at most 1e9 (seconds, seconds per byte, or a factor)",
        ))
    } else {
        Ok(())
    }
}

/// Checks that a bandwidth `v` (bytes per second) is finite and within
/// [[`MIN_BANDWIDTH`], [`MAX_BANDWIDTH`]].
///
/// # Errors
/// [`Invalid`] naming `field` otherwise.
///
/// ```
/// use copr_topology::files::{check_bandwidth, FieldPath};
/// assert!(check_bandwidth(6.5e9, &FieldPath::root().key("bandwidth")).is_ok());
/// assert!(check_bandwidth(5e-324, &FieldPath::root().key("bandwidth")).is_err());
/// ```
pub fn check_bandwidth(v: f64, field: &FieldPath) -> Result<(), Invalid> {
    if v.is_nan() || v.is_infinite() || v <= 0.0 {
        Err(Invalid::new(
            field.clone(),
            short(v),
            "a bandwidth (bytes per second) must be finite and positive",
        ))
    } else if !(MIN_BANDWIDTH..=MAX_BANDWIDTH).contains(&v) {
        Err(Invalid::new(
            field.clone(),
            short(v),
            "a bandwidth (bytes per second) must be between 1e-9 and 1e30",
        ))
    } else {
        Ok(())
    }
}

/// `v` as an error quotes it: as written for ordinary values (`-0.0000001`), in
/// exponent notation when the plain form runs long (`5e-324`, not 324 digits).
fn short(v: f64) -> String {
    let plain = v.to_string();
    if plain.len() > 24 {
        format!("{v:e}")
    } else {
        plain
    }
}

/// Largest input file copr reads (configurations, plans, coordinates, graphs):
/// 64 MiB. Reading stops one byte past it, so an endless or mistaken multi-gigabyte
/// input fails fast instead of filling memory. Parsed TOML and JSON take many times
/// their text (a 63 MB plan listing 5600 × 5600 grid owners peaks at 1 GB while it is
/// parsed), so the limit also bounds what a parse can take.
pub const MAX_FILE_BYTES: u64 = 1 << 26;

/// TOML files (machine files, network descriptions, cost configs) are read up to this
/// many bytes, 16 MiB: the TOML reader keeps about 80 bytes of memory per byte of an
/// array (a 60 MB `ranks_per_node` list took 4.5 GB), where JSON is read up to
/// [`MAX_FILE_BYTES`] in a few bytes per byte.
pub const MAX_TOML_BYTES: usize = 16 << 20;

/// Reads a whole file of at most [`MAX_FILE_BYTES`] as UTF-8 text. A NUL byte (never
/// part of a TOML, JSON or line-based input) stops the reading at once: `/dev/zero` or
/// a binary file given by mistake is refused after its first 64 KiB.
///
/// # Errors
/// [`TopologyError::Io`] naming the file if it cannot be read, holds a NUL byte, is
/// not UTF-8, or is larger than [`MAX_FILE_BYTES`].
pub fn read_text(path: &Path) -> Result<String> {
    use std::io::{Error, ErrorKind, Read};
    let io = |source| TopologyError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_FILE_BYTES + 1);
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(io(e)),
        };
        if let Some(k) = chunk[..n].iter().position(|&b| b == 0) {
            return Err(io(Error::new(
                ErrorKind::InvalidData,
                format!("a NUL byte at offset {}: not a text file", bytes.len() + k),
            )));
        }
        bytes.extend_from_slice(&chunk[..n]);
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(io(Error::new(
            ErrorKind::FileTooLarge,
            format!(
                "larger than the limit of {MAX_FILE_BYTES} bytes (copr_topology::files::MAX_FILE_BYTES)"
            ),
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        io(Error::new(
            ErrorKind::InvalidData,
            format!("not UTF-8 text ({e})"),
        ))
    })
}

/// Resolves `path` against `base` (a config file's directory) unless it is
/// absolute.
///
/// ```
/// use copr_topology::files::resolve;
/// use std::path::Path;
/// assert_eq!(resolve(Path::new("/cfg"), Path::new("t.coords")), Path::new("/cfg/t.coords"));
/// assert_eq!(resolve(Path::new("/cfg"), Path::new("/abs/x")), Path::new("/abs/x"));
/// ```
pub fn resolve(base: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

/// The directory relative paths in the file `path` resolve against.
pub fn base_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Deserialises `text` in `format` into `T`.
///
/// # Errors
/// [`TopologyError::Parse`] with the file (if given), the line and the path
/// of the offending field, for syntax errors, wrong types, unknown or missing
/// fields.
///
/// ```
/// use copr_topology::files::{parse_str, Format};
/// #[derive(Debug, serde::Deserialize)]
/// struct S { a: Vec<f64> }
/// let s: S = parse_str("a = [1.0, 2.0]", Format::Toml, None).unwrap();
/// assert_eq!(s.a, [1.0, 2.0]);
/// let e = parse_str::<S>("a = [1.0,\n \"x\"]", Format::Toml, None).unwrap_err();
/// let msg = e.to_string();
/// assert!(msg.contains("line 2") && msg.contains("a[1]"), "{msg}");
/// ```
pub fn parse_str<T: DeserializeOwned>(
    text: &str,
    format: Format,
    file: Option<&Path>,
) -> Result<T> {
    let origin = Origin::maybe_file(file);
    let text = skip_bom(text);
    match format {
        Format::Json => {
            let mut de = serde_json::Deserializer::from_str(text);
            let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
                let field = path_name(e.path());
                let string_at = string_value_at(text, format, e.path(), &e.inner().to_string());
                let inner = e.into_inner();
                let mut err = json_error(origin.clone(), field, &inner);
                if let TopologyError::Parse {
                    origin,
                    field,
                    message,
                } = &mut err
                {
                    refine_string_error(string_at, field, &mut origin.line, message);
                }
                err
            })?;
            de.end()
                .map_err(|e| json_error(origin.clone(), "(document)".into(), &e))?;
            Ok(value)
        }
        Format::Toml => {
            check_toml_size(text, file)?;
            let de = toml::Deserializer::parse(text)
                .map_err(|e| toml_error(origin.clone(), text, "(document)".into(), &e))?;
            serde_path_to_error::deserialize(de).map_err(|e| {
                let field = path_name(e.path());
                let unknown_at = unknown_field_line(text, e.path(), e.inner().message());
                let string_at = string_value_at(text, format, e.path(), e.inner().message());
                let inner = e.into_inner();
                let mut err = toml_error(origin, text, field, &inner);
                if let TopologyError::Parse {
                    origin,
                    field,
                    message,
                } = &mut err
                {
                    if let Some(line) = unknown_at {
                        origin.line = Some(line);
                    }
                    refine_string_error(string_at, field, &mut origin.line, message);
                }
                err
            })
        }
    }
}

/// Refuses TOML text longer than [`MAX_TOML_BYTES`] before a reader builds it.
///
/// ```
/// use copr_topology::files::{check_toml_size, MAX_TOML_BYTES};
/// assert!(check_toml_size("a = 1", None).is_ok());
/// let big = "#".repeat(MAX_TOML_BYTES + 1);
/// assert!(check_toml_size(&big, None).unwrap_err().to_string().contains("JSON"));
/// ```
///
/// # Errors
/// [`TopologyError::Parse`] naming the size, the limit and the JSON form.
pub fn check_toml_size(text: &str, file: Option<&Path>) -> Result<()> {
    if text.len() <= MAX_TOML_BYTES {
        return Ok(());
    }
    Err(TopologyError::Parse {
        origin: Origin::maybe_file(file),
        field: "(document)".into(),
        message: format!(
            "{} bytes of TOML: at most {MAX_TOML_BYTES} are read (the TOML reader needs \
             about 80 bytes of memory per byte); write a larger file as JSON (the same \
             fields, a name ending in .json)",
            text.len()
        ),
    })
}

/// Reads and deserialises a TOML or JSON file (format from the extension).
///
/// # Errors
/// [`TopologyError::Io`] or [`TopologyError::Parse`] (see [`parse_str`]).
pub fn parse_file<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = read_text(path)?;
    parse_str(&text, Format::from_path(path), Some(path))
}

/// Deserialises `text` into `T`, then runs `check` on the value with the
/// document (so that rejected fields get line numbers via [`Doc`]).
///
/// # Errors
/// Parse errors as in [`parse_str`], and whatever `check` returns.
pub fn parse_checked<T, E>(
    text: &str,
    format: Format,
    file: Option<&Path>,
    check: impl FnOnce(&T, Doc<'_>) -> Result<(), E>,
) -> Result<T, E>
where
    T: DeserializeOwned,
    E: From<TopologyError>,
{
    let value: T = parse_str(text, format, file)?;
    check(&value, Doc::new(file, text, format))?;
    Ok(value)
}

/// A JSON document's syntax error (a number beyond `f64`, a missing comma), named as
/// itself with its line; `Ok` for TOML and for JSON that parses. Readers that choose
/// the type to parse by the document's keys call it when they found none, so that the
/// typed parse does not stop first at a key it does not know.
///
/// ```
/// use copr_topology::files::{check_syntax, Format};
/// let e = check_syntax("{\"a\": [1e999]}", Format::Json, None).unwrap_err();
/// assert!(e.to_string().contains("number out of range"), "{e}");
/// assert!(check_syntax("{\"a\": [1]}", Format::Json, None).is_ok());
/// ```
///
/// # Errors
/// [`TopologyError::Parse`] with the line of the error.
pub fn check_syntax(text: &str, format: Format, file: Option<&Path>) -> Result<()> {
    if format == Format::Json {
        parse_str::<serde_json::Value>(text, format, file)?;
    }
    Ok(())
}

/// Reads the file `path` (format from the extension) with [`parse_checked`].
///
/// # Errors
/// [`TopologyError::Io`], and the errors of [`parse_checked`].
pub fn read_checked<T, E>(
    path: &Path,
    check: impl FnOnce(&T, Doc<'_>) -> Result<(), E>,
) -> Result<T, E>
where
    T: DeserializeOwned,
    E: From<TopologyError>,
{
    let text = read_text(path)?;
    parse_checked(&text, Format::from_path(path), Some(path), check)
}

/// Serialises `value` as TOML or JSON (pretty).
///
/// # Errors
/// [`TopologyError::Parse`] if the value has no representation in `format`
/// (e.g. TOML cannot hold a bare array at the top level).
pub fn to_string<T: Serialize>(value: &T, format: Format) -> Result<String> {
    let r = match format {
        Format::Json => serde_json::to_string_pretty(value).map_err(|e| e.to_string()),
        Format::Toml => toml::to_string_pretty(value).map_err(|e| e.to_string()),
    };
    r.map_err(|message| TopologyError::Parse {
        origin: Origin::none(),
        field: "(document)".into(),
        message: format!("cannot serialise: {message}"),
    })
}

/// For "unknown field `k`" errors the TOML span is the enclosing table; the
/// line of the key itself (the first `k` below the error's path) is more
/// useful.
fn unknown_field_line(
    text: &str,
    path: &serde_path_to_error::Path,
    message: &str,
) -> Option<usize> {
    use serde_path_to_error::Segment;
    use toml::de::{DeTable, DeValue};
    let key = message.strip_prefix("unknown field `")?.split('`').next()?;
    let root = DeValue::Table(DeTable::parse(text).ok()?.into_inner());
    let mut cur = &root;
    // Descend along the path as far as it goes.
    for seg in path.iter() {
        let next = match (seg, cur) {
            (Segment::Map { key }, DeValue::Table(t)) => t
                .iter()
                .find(|(k, _)| k.get_ref().as_ref() == key.as_str())
                .map(|(_, v)| v.get_ref()),
            (Segment::Seq { index }, DeValue::Array(a)) => a.get(*index).map(|v| v.get_ref()),
            _ => None,
        };
        match next {
            Some(v) => cur = v,
            None => break,
        }
    }
    // Depth-first search for the key below.
    fn find(v: &DeValue<'_>, key: &str) -> Option<usize> {
        match v {
            DeValue::Table(t) => t.iter().find_map(|(k, v)| {
                if k.get_ref().as_ref() == key {
                    Some(k.span().start)
                } else {
                    find(v.get_ref(), key)
                }
            }),
            DeValue::Array(a) => a.iter().find_map(|v| find(v.get_ref(), key)),
            _ => None,
        }
    }
    find(cur, key).map(|offset| line_of_offset(text, offset))
}

/// A value of the wrong type: the field and line of the value itself (serde names
/// only the table around it when the table is read by its `kind`), and, for a string
/// where a number goes, a hint.
fn refine_string_error(
    found: Option<(FieldPath, usize)>,
    field: &mut String,
    line: &mut Option<usize>,
    message: &mut String,
) {
    let Some((below, at)) = found else { return };
    if !below.0.is_empty() {
        *field = below.to_string();
        *line = Some(at);
    }
    if message.starts_with("invalid type: string")
        && NUMBER_TYPES.iter().any(|t| message.ends_with(t))
    {
        message.push_str(" (write the number alone, without a unit)");
    }
}

/// The endings of serde's "invalid type" messages where a number was expected.
const NUMBER_TYPES: [&str; 8] = [
    "expected f64",
    "expected f32",
    "expected u64",
    "expected u32",
    "expected usize",
    "expected i64",
    "expected u16",
    "expected u8",
];

/// For serde's `invalid type: string "…"` (or integer, floating point, boolean) at
/// `path`: the path below `path` of the first value equal to it (`path` itself when
/// it names the value) and its 1-based line. Tables read by a `kind` tag are read whole, so serde's path
/// stops at the table.
fn string_value_at(
    text: &str,
    format: Format,
    path: &serde_path_to_error::Path,
    message: &str,
) -> Option<(FieldPath, usize)> {
    use serde_json::Value;
    use serde_path_to_error::Segment;
    let rest = message.strip_prefix("invalid type: ")?;
    let want = if let Some(r) = rest.strip_prefix("string \"") {
        Value::String(r[..r.rfind("\", expected ")?].to_string())
    } else {
        // `integer `2``, `floating point `5.5``, `boolean `true``
        let (kind, r) = rest.split_once(" `")?;
        let v = &r[..r.find('`')?];
        match kind {
            "integer" => Value::Number(match v.parse::<i64>() {
                Ok(i) => i.into(),
                Err(_) => v.parse::<u64>().ok()?.into(),
            }),
            "floating point" => serde_json::Number::from_f64(v.parse().ok()?).map(Value::Number)?,
            "boolean" => Value::Bool(v.parse().ok()?),
            _ => return None,
        }
    };
    let want = &want;
    let doc: Value = match format {
        Format::Json => serde_json::from_str(text).ok()?,
        Format::Toml => toml::from_str(text).ok()?,
    };
    let mut at = FieldPath::root();
    let mut cur = &doc;
    for seg in path.iter() {
        match (seg, cur) {
            (Segment::Map { key }, Value::Object(o)) => {
                cur = o.get(key.as_str())?;
                at = at.key(key);
            }
            (Segment::Seq { index }, Value::Array(a)) => {
                cur = a.get(*index)?;
                at = at.index(*index);
            }
            _ => {}
        }
    }
    fn find(v: &Value, want: &Value, at: &FieldPath) -> Option<FieldPath> {
        let same = match (v, want) {
            (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
            _ => v == want,
        };
        if same {
            return Some(at.clone());
        }
        match v {
            Value::Object(o) => o.iter().find_map(|(k, v)| find(v, want, &at.key(k))),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .find_map(|(i, v)| find(v, want, &at.index(i))),
            _ => None,
        }
    }
    let below = find(cur, want, &at)?;
    let line = locate_line(text, format, &below)?;
    Some((below, line))
}

fn path_name(p: &serde_path_to_error::Path) -> String {
    let s = p.to_string();
    if s == "." || s.is_empty() {
        "(document)".to_string()
    } else {
        s
    }
}

fn json_error(origin: Origin, field: String, e: &serde_json::Error) -> TopologyError {
    let full = e.to_string();
    // serde_json appends " at line L column C"; the line goes into the origin.
    let message = match full.rfind(" at line ") {
        Some(pos) => full[..pos].to_string(),
        None => full,
    };
    let line = (e.line() > 0).then_some(e.line());
    TopologyError::Parse {
        origin: origin.at_maybe_line(line),
        field,
        message,
    }
}

fn toml_error(origin: Origin, text: &str, field: String, e: &toml::de::Error) -> TopologyError {
    let line = e.span().map(|s| line_of_offset(text, s.start));
    TopologyError::Parse {
        origin: origin.at_maybe_line(line),
        field,
        message: e.message().trim().to_string(),
    }
}

/// `text` without a leading UTF-8 byte order mark (editors on Windows write one; JSON
/// parsers reject it).
///
/// ```
/// assert_eq!(copr_topology::files::skip_bom("\u{feff}{}"), "{}");
/// assert_eq!(copr_topology::files::skip_bom("{}"), "{}");
/// ```
pub fn skip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// 1-based line number of byte `offset` in `text`.
///
/// ```
/// assert_eq!(copr_topology::files::line_of_offset("a\nb\nc", 2), 2);
/// ```
pub fn line_of_offset(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    1 + text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// The 1-based line where `path` is written in `text`, or — if the path does
/// not exist in the document (a defaulted field) — the line of its deepest
/// existing ancestor. `None` if the document does not parse.
///
/// ```
/// use copr_topology::files::{locate_line, FieldPath, Format};
/// let toml = "a = 1\n[inter]\nkind = \"torus\"\ndims = [4,\n 4, 8]\n";
/// let p = FieldPath::root().key("inter").key("dims").index(2);
/// assert_eq!(locate_line(toml, Format::Toml, &p), Some(5));
/// let json = "{\n \"inter\": {\n  \"dims\": [4,\n   4, 8]}}";
/// assert_eq!(locate_line(json, Format::Json, &p), Some(4));
/// ```
pub fn locate_line(text: &str, format: Format, path: &FieldPath) -> Option<usize> {
    let offset = match format {
        Format::Toml => toml_locate(text, &path.0)?,
        Format::Json => json_locate(text, &path.0)?,
    };
    Some(line_of_offset(text, offset))
}

fn toml_locate(text: &str, path: &[PathSeg]) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let root = DeTable::parse(text).ok()?;
    let mut best = 0usize;
    let mut table: Option<&DeTable<'_>> = Some(root.get_ref());
    let mut array: Option<&toml::de::DeArray<'_>> = None;
    for seg in path {
        let value = match seg {
            PathSeg::Key(k) => {
                let t = table?;
                let Some((key, v)) = t.iter().find(|(key, _)| key.get_ref().as_ref() == k) else {
                    return Some(best);
                };
                best = key.span().start;
                v
            }
            PathSeg::Index(i) => {
                let a = array?;
                let Some(v) = a.get(*i) else {
                    return Some(best);
                };
                best = v.span().start;
                v
            }
        };
        table = None;
        array = None;
        match value.get_ref() {
            DeValue::Table(t) => table = Some(t),
            DeValue::Array(a) => array = Some(a),
            _ => {}
        }
    }
    Some(best)
}

/// The byte offset in `text` of the JSON value at `path`, or of its deepest existing
/// ancestor. serde_json's borrowed raw values are slices of `text`, so each step parses
/// one object or array and takes where the value it names starts (a duplicated key:
/// the last, as serde_json reads it).
fn json_locate(text: &str, path: &[PathSeg]) -> Option<usize> {
    use serde_json::value::RawValue;
    use std::collections::BTreeMap;
    let mut value: &RawValue = serde_json::from_str(skip_bom(text)).ok()?;
    for seg in path {
        let next = match seg {
            PathSeg::Key(k) => serde_json::from_str::<BTreeMap<String, &RawValue>>(value.get())
                .ok()
                .and_then(|m| m.get(k).copied()),
            PathSeg::Index(i) => serde_json::from_str::<Vec<&RawValue>>(value.get())
                .ok()
                .and_then(|v| v.get(*i).copied()),
        };
        match next {
            Some(v) => value = v,
            None => break,
        }
    }
    (value.get().as_ptr() as usize).checked_sub(text.as_ptr() as usize)
}

/// One data line of a line-oriented text file: its 1-based number and its
/// fields (comments after `#` removed, split on whitespace and commas).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataLine<'a> {
    /// 1-based line number.
    pub line: usize,
    /// The fields.
    pub fields: Vec<&'a str>,
}

/// The non-blank, non-comment lines of `text`, split into fields.
///
/// ```
/// use copr_topology::files::data_lines;
/// let lines = data_lines("# header\n\nnid1 0 1 2 # note\n nid2,1,1,1\n");
/// assert_eq!(lines.len(), 2);
/// assert_eq!(lines[0].line, 3);
/// assert_eq!(lines[1].fields, ["nid2", "1", "1", "1"]);
/// ```
pub fn data_lines(text: &str) -> Vec<DataLine<'_>> {
    text.lines()
        .enumerate()
        .filter_map(|(n, l)| {
            let content = l.split('#').next().unwrap_or("");
            let fields: Vec<&str> = content
                .split(|c: char| c.is_whitespace() || c == ',')
                .filter(|f| !f.is_empty())
                .collect();
            (!fields.is_empty()).then_some(DataLine {
                line: n + 1,
                fields,
            })
        })
        .collect()
}

/// Parses field `name` (column of a line-oriented file) as `T`.
///
/// # Errors
/// [`TopologyError::Parse`] naming origin, field and the text.
pub(crate) fn parse_field<T: std::str::FromStr>(
    text: &str,
    name: &str,
    expected: &str,
    origin: &Origin,
) -> Result<T> {
    text.parse().map_err(|_| TopologyError::Parse {
        origin: origin.clone(),
        field: name.to_string(),
        message: format!("expected {expected}, found `{text}`"),
    })
}

/// A document being validated: its file and text, so that a field path can
/// be turned into an [`Origin`] with a line number.
#[derive(Clone, Copy, Debug, Default)]
pub struct Doc<'a> {
    /// The file, if the document was read from one.
    pub file: Option<&'a Path>,
    /// The document's text and format, if known.
    pub text: Option<(&'a str, Format)>,
}

impl<'a> Doc<'a> {
    /// An in-memory value: no file, no text.
    pub fn none() -> Self {
        Self::default()
    }

    /// The document `text` in `format`, read from `file` if `Some`.
    pub fn new(file: Option<&'a Path>, text: &'a str, format: Format) -> Self {
        Self {
            file,
            text: Some((text, format)),
        }
    }

    /// The origin of `field`: the file and the line where the field is written.
    pub fn origin(&self, field: &FieldPath) -> Origin {
        let line = self
            .text
            .and_then(|(text, fmt)| locate_line(text, fmt, field));
        Origin::maybe_file(self.file).at_maybe_line(line)
    }

    /// The error for a rejected value in this document.
    pub fn invalid(&self, e: Invalid) -> TopologyError {
        e.into_error(self.file, self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_of_keys_indices_and_missing_paths() {
        let text = "\u{feff}{\n \"a\\\"b\": \"}{][\",\n \"inter\": {\n  \"dims\": [[1, 2],\n   [3,\n    4]],\n  \"x\": 1\n }\n}";
        let at = |p: FieldPath| locate_line(text, Format::Json, &p);
        let root = FieldPath::root();
        assert_eq!(at(root.clone()), Some(1));
        assert_eq!(at(root.key("a\"b")), Some(2));
        assert_eq!(at(root.key("inter").key("dims")), Some(4));
        assert_eq!(at(root.key("inter").key("dims").index(1).index(1)), Some(6));
        assert_eq!(at(root.key("inter").key("x")), Some(7));
        // a path that is not there: its deepest ancestor
        assert_eq!(at(root.key("inter").key("dims").index(7)), Some(4));
        assert_eq!(at(root.key("inter").key("nope").key("deeper")), Some(3));
        assert_eq!(at(root.key("a\"b").index(0)), Some(2));
        // not JSON at all
        assert_eq!(locate_line("{\"a\": ", Format::Json, &root.key("a")), None);
    }

    #[test]
    fn a_string_for_a_number_inside_a_kind_table_names_its_key() {
        let toml = "[inter]\nkind = \"uniform\"\nlatency = 1e-6\nbandwidth = \"1 GB/s\"\n";
        let json =
            "{\"inter\": {\"kind\": \"uniform\",\n \"latency\": \"1 us\",\n \"bandwidth\": 1e9}}";
        for (text, format, name, want) in [
            (toml, Format::Toml, "m.toml", "m.toml:4: field `inter.bandwidth`: invalid type: string \"1 GB/s\", expected f64 (write the number alone, without a unit)"),
            (json, Format::Json, "m.json", "m.json:2: field `inter.latency`: invalid type: string \"1 us\", expected f64 (write the number alone, without a unit)"),
            ("[placement]\nrule = \"round-robin\"\nranks = 5\nnodes = 2\n", Format::Toml, "p.toml", "p.toml:4: field `placement.nodes`: invalid type: integer `2`, expected a sequence"),
        ] {
            let e = parse_str::<crate::TopologyConfig>(text, format, Some(Path::new(name)))
                .unwrap_err()
                .to_string();
            assert_eq!(e, want);
        }
    }
}
