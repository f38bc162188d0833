//! Units on the command line: byte sizes with a suffix (`--bytes 1MiB`) and the unit
//! of a cost config's modelled cost.

use std::path::Path;

use copr_cost_models::{CostConfig, Term};

/// Parses a byte count: a whole number, optionally followed by `B`, `k`/`kB` (10³),
/// `KiB` (2¹⁰), `M`/`MB`, `MiB`, `G`/`GB`, `GiB` (case-insensitive, no space
/// needed).
///
/// # Errors
/// A one-line message naming the value when it is not a number with a known suffix
/// or does not fit in 64 bits.
pub(crate) fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    let bad = || {
        format!("`{text}` is not a byte count: expected a whole number with an optional unit B, kB, KiB, MB, MiB, GB or GiB (e.g. 1048576 or 1MiB)")
    };
    if digits.is_empty() {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let factor: u64 = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" => 1_000,
        "kib" => 1 << 10,
        "m" | "mb" => 1_000_000,
        "mib" => 1 << 20,
        "g" | "gb" => 1_000_000_000,
        "gib" => 1 << 30,
        _ => return Err(bad()),
    };
    n.checked_mul(factor)
        .ok_or_else(|| format!("`{text}` is more bytes than 64 bits hold"))
}

/// The unit of the modelled costs of the cost config at `path`: seconds when every
/// term prices time (latency + bandwidth, transforms, locality), bytes when every
/// term is the volume, else a weighted mix without one unit.
/// A machine file without terms is priced by latency + bandwidth: seconds.
pub(crate) fn cost_unit(path: &Path) -> &'static str {
    if copr_topology::MachineFile::read(path)
        .is_ok_and(|m| m.kind != copr_topology::MachineFileKind::CostConfig)
    {
        return "s";
    }
    let Ok(cfg) = CostConfig::from_file(path) else {
        return "(model units)";
    };
    let volume = cfg
        .terms
        .iter()
        .filter(|t| matches!(t, Term::Volume { .. }))
        .count();
    match volume {
        0 => "s",
        n if n == cfg.terms.len() => "B",
        _ => "(bytes and seconds, weighted)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_with_units() {
        for (text, want) in [
            ("1048576", 1 << 20),
            ("1MiB", 1 << 20),
            ("1 MiB", 1 << 20),
            ("4kib", 4096),
            ("3MB", 3_000_000),
            ("2GiB", 2 << 30),
            ("512B", 512),
            ("7k", 7000),
        ] {
            assert_eq!(parse_bytes(text), Ok(want), "{text}");
        }
        for bad in ["", "MiB", "1.5MiB", "-1", "1XB", "99999999999GiB"] {
            let e = parse_bytes(bad).unwrap_err();
            assert!(e.contains(bad) && e.lines().count() == 1, "{bad}: {e}");
        }
    }

    #[test]
    fn cost_units_follow_the_terms() {
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../data/cost");
        assert_eq!(cost_unit(&data.join("torus-3d.toml")), "s");
        assert_eq!(cost_unit(&data.join("volume.toml")), "B");
    }
}
