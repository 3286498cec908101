//! Quantities with units, as written in `cluster.toml` (DESIGN §5).
//!
//! Times take `s`, `ms`, `us` (or `µs`), `ns`; sizes take `B`, the decimal `KB`/`kB`, `MB`, `GB`,
//! `TB` (powers of 1000) and the binary `KiB`, `MiB`, `GiB`, `TiB` (powers of 1024); rates are a
//! size per second, `<size>/s`. The number may be an integer, a decimal or use an exponent
//! (`1.5GB`, `2e-3s`); whitespace between the number and the unit is allowed. Bits are not
//! accepted (`Gb`, `Mbit`): a rate of `1Gb/s` is ambiguous in practice and says so.
//!
//! Every parser returns a message fit to follow "field `x`:" in an error; the caller adds the
//! file, line and field.

/// Parse a duration such as `"50us"` into seconds.
pub fn parse_duration(text: &str) -> Result<f64, String> {
    let (number, unit) = split_number(text, "a time such as \"50us\" or \"2ms\"")?;
    // Dividing (rather than multiplying by 1e-6) keeps "50us" exactly 5e-5.
    let per_second = match unit {
        "s" => 1.0,
        "ms" => 1e3,
        "us" | "µs" | "μs" => 1e6,
        "ns" => 1e9,
        "" => return Err(missing_unit(text, "s, ms, us, ns")),
        other => {
            return Err(format!(
                "unknown time unit `{other}` in \"{text}\"; expected one of s, ms, us (µs), ns"
            ))
        }
    };
    Ok(number / per_second)
}

/// Parse a size such as `"48MiB"` into bytes (rounded down to a whole byte).
pub fn parse_size(text: &str) -> Result<f64, String> {
    let (number, unit) = split_number(text, "a size such as \"48MiB\" or \"2GB\"")?;
    let scale = size_scale(unit)
        .ok_or_else(|| unknown_size_unit(text, unit))?
        .ok_or_else(|| missing_unit(text, "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB"))?;
    Ok((number * scale).floor())
}

/// Parse a rate such as `"200MB/s"` into bytes per second.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let trimmed = text.trim();
    let Some(size) = trimmed.strip_suffix("/s") else {
        return Err(format!(
            "expected a rate such as \"200MB/s\" (a size per second), found \"{text}\""
        ));
    };
    let (number, unit) = split_number(size, "a rate such as \"200MB/s\"")?;
    let scale = size_scale(unit)
        .ok_or_else(|| unknown_size_unit(text, unit))?
        .ok_or_else(|| missing_unit(text, "B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s"))?;
    Ok(number * scale)
}

/// The multiplier of a size unit: `Some(None)` for a missing unit, `None` for an unknown one.
fn size_scale(unit: &str) -> Option<Option<f64>> {
    const KI: f64 = 1024.0;
    let scale = match unit {
        "" => return Some(None),
        "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "KiB" => KI,
        "MiB" => KI * KI,
        "GiB" => KI * KI * KI,
        "TiB" => KI * KI * KI * KI,
        _ => return None,
    };
    Some(Some(scale))
}

fn unknown_size_unit(text: &str, unit: &str) -> String {
    let hint = if unit.ends_with('b') || unit.contains("bit") {
        " (bits are not accepted: write bytes, e.g. 125MB/s for 1Gbit/s)"
    } else {
        ""
    };
    format!(
        "unknown size unit `{unit}` in \"{text}\"; expected one of B, KB, MB, GB, TB, KiB, MiB, \
         GiB, TiB{hint}"
    )
}

fn missing_unit(text: &str, units: &str) -> String {
    format!("\"{text}\" has no unit; write one of {units}")
}

/// Split `"  1.5 MiB "` into `(1.5, "MiB")`. The unit is the trailing run of letters (and the
/// micro sign); the number is everything before it.
fn split_number<'a>(text: &'a str, expected: &str) -> Result<(f64, &'a str), String> {
    let trimmed = text.trim();
    let unit_start = trimmed
        .char_indices()
        .rev()
        .take_while(|&(_, c)| c.is_alphabetic())
        .last()
        .map_or(trimmed.len(), |(i, _)| i);
    let (number, unit) = trimmed.split_at(unit_start);
    let number = number.trim();
    if number.is_empty() {
        return Err(format!("expected {expected}, found \"{text}\""));
    }
    let value: f64 = number.parse().map_err(|_| {
        format!("expected {expected}, found \"{text}\" (`{number}` is not a number)")
    })?;
    if !value.is_finite() {
        return Err(format!(
            "expected {expected}, found \"{text}\" (not a finite number)"
        ));
    }
    Ok((value, unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_every_unit() {
        assert_eq!(parse_duration("2s"), Ok(2.0));
        assert_eq!(parse_duration("2ms"), Ok(2e-3));
        assert_eq!(parse_duration("50us"), Ok(50e-6));
        assert_eq!(parse_duration("50µs"), Ok(50e-6));
        assert_eq!(parse_duration("50μs"), Ok(50e-6));
        assert_eq!(parse_duration("7ns"), Ok(7e-9));
        assert_eq!(parse_duration(" 1.5 ms "), Ok(1.5e-3));
        assert_eq!(parse_duration("1e-3s"), Ok(1e-3));
        assert_eq!(parse_duration("0s"), Ok(0.0));
    }

    #[test]
    fn sizes_decimal_and_binary() {
        assert_eq!(parse_size("1B"), Ok(1.0));
        assert_eq!(parse_size("1KB"), Ok(1000.0));
        assert_eq!(parse_size("1kB"), Ok(1000.0));
        assert_eq!(parse_size("2MB"), Ok(2e6));
        assert_eq!(parse_size("1GB"), Ok(1e9));
        assert_eq!(parse_size("1TB"), Ok(1e12));
        assert_eq!(parse_size("1KiB"), Ok(1024.0));
        assert_eq!(parse_size("48MiB"), Ok(48.0 * 1024.0 * 1024.0));
        assert_eq!(parse_size("1GiB"), Ok(1073741824.0));
        assert_eq!(parse_size("1TiB"), Ok(1099511627776.0));
        assert_eq!(parse_size("1.5KB"), Ok(1500.0));
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("200MB/s"), Ok(200e6));
        assert_eq!(parse_rate("1GiB/s"), Ok(1073741824.0));
        assert_eq!(parse_rate("1.5 GB/s"), Ok(1.5e9));
    }

    proptest::proptest! {
        /// Any whole number with any size unit parses to the number times the unit.
        #[test]
        fn whole_sizes_scale_exactly(n in 0u64..1_000_000, unit in 0usize..9) {
            let (name, scale) = [
                ("B", 1u64), ("KB", 1000), ("MB", 1_000_000), ("GB", 1_000_000_000),
                ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("kB", 1000), ("TiB", 1 << 40),
            ][unit];
            proptest::prop_assert_eq!(parse_size(&format!("{n}{name}")), Ok((n * scale) as f64));
            proptest::prop_assert_eq!(parse_rate(&format!("{n} {name}/s")), Ok((n * scale) as f64));
        }
    }

    #[test]
    fn wrong_units_are_explained() {
        let err = parse_duration("5min").unwrap_err();
        assert!(err.contains("unknown time unit `min`"), "{err}");
        let err = parse_duration("5").unwrap_err();
        assert!(err.contains("has no unit"), "{err}");
        let err = parse_size("5MB/s").unwrap_err();
        assert!(err.contains("expected a size"), "{err}");
        let err = parse_rate("1Gb/s").unwrap_err();
        assert!(err.contains("bits are not accepted"), "{err}");
        let err = parse_rate("200MB").unwrap_err();
        assert!(err.contains("size per second"), "{err}");
        let err = parse_size("MiB").unwrap_err();
        assert!(err.contains("expected a size"), "{err}");
        let err = parse_size("1x5MiB").unwrap_err();
        assert!(err.contains("is not a number"), "{err}");
    }
}
