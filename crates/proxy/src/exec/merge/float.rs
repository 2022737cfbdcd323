//! MariaDB's text form of DOUBLE and FLOAT values (its `my_gcvt` and `my_fcvt`), so merged
//! results carry exactly the digits a single server would send.
//!
//! Verified against MariaDB 10.11: `1e20` → `1e20`, `1.5e-7` → `0.00000015`, `0.1e0+0.2e0` →
//! `0.30000000000000004`, `123456789012345680000e0` → `1.2345678901234568e20`, `-0e0` → `0`,
//! `1e15` → `1e15`, `999999999999999e0` → `999999999999999`, `1234567890123456.7e0` →
//! `1234567890123456.8`, `1e-15` → `0.000000000000001`, `1e-16` → `1e-16`; FLOAT 3.14 → `3.14`,
//! FLOAT 1234565 → `1234560` and 1234575 → `1234580` (6 digits, ties to even), FLOAT 1e10 →
//! `10000000000`; DOUBLE(12,2) 1234.5 → `1234.50`; AVG of DOUBLE(10,2) 1/128 → `0.007812`,
//! and -0.01/200000 → `-0.000000`.

/// Exponents (decimal point positions) beyond which MariaDB switches to `1e20` notation
/// (`MAX_DECPT_FOR_F_FORMAT` = DBL_DIG = 15).
const MAX_DECPT_FOR_F_FORMAT: i32 = 15;
/// Significant digits of a FLOAT (FLT_DIG).
const FLOAT_DIGITS: usize = 6;
/// `decimals` of a column whose values have no fixed number of decimals.
pub const NOT_FIXED_DEC: u8 = 31;

/// A DOUBLE's text with no fixed decimals: the shortest digits that read back as the same
/// double, in plain or exponent notation as MariaDB chooses.
pub fn format_double(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return "0".to_string();
    }
    let (digits, decpt) = shortest_digits(x);
    layout(x < 0.0, &digits, decpt)
}

/// A FLOAT's text with no fixed decimals: at most 6 significant digits.
pub fn format_float(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return "0".to_string();
    }
    let (digits, decpt) = split_exp(&format!("{:.*e}", FLOAT_DIGITS - 1, x.abs()));
    layout(x < 0.0, digits.trim_end_matches('0'), decpt)
}

/// A DOUBLE or FLOAT with `decimals` fixed decimals (`%.*f`, ties to even as dtoa does). A
/// negative value that rounds to zero keeps its sign (`-0.000000`); zero itself has none.
pub fn format_fixed(x: f64, decimals: u8) -> String {
    if !x.is_finite() || x == 0.0 {
        return format!("{:.*}", usize::from(decimals), 0.0);
    }
    format!("{:.*}", usize::from(decimals), x)
}

/// The text for a column of `column_type` (FLOAT or DOUBLE) with `decimals`.
pub fn format_for_column(x: f64, is_float: bool, decimals: u8) -> String {
    if decimals < NOT_FIXED_DEC {
        format_fixed(x, decimals)
    } else if is_float {
        format_float(x)
    } else {
        format_double(x)
    }
}

/// Shortest round-trip digits of |x| and the decimal point position (`0.DIGITS * 10^decpt`).
fn shortest_digits(x: f64) -> (String, i32) {
    let (digits, decpt) = split_exp(&format!("{:e}", x.abs()));
    (digits, decpt)
}

/// Splits Rust's `d.ddde-7` into (`dddd`, decpt = exponent + 1).
fn split_exp(s: &str) -> (String, i32) {
    let (mantissa, exp) = s.split_once('e').unwrap_or((s, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse::<i32>().unwrap_or(0) + 1)
}

/// MariaDB's choice between `123.45` and `1.2345e2`, with its exponent style (no `+`, no
/// zero padding).
fn layout(negative: bool, digits: &str, decpt: i32) -> String {
    let digits = if digits.is_empty() { "0" } else { digits };
    let len = digits.len() as i32;
    let plain = decpt > -MAX_DECPT_FOR_F_FORMAT && (decpt <= MAX_DECPT_FOR_F_FORMAT || len > decpt);
    let mut out = String::with_capacity(digits.len() + 8);
    if negative {
        out.push('-');
    }
    if plain {
        if decpt <= 0 {
            out.push_str("0.");
            out.push_str(&"0".repeat(decpt.unsigned_abs() as usize));
            out.push_str(digits);
        } else if decpt < len {
            let (int, frac) = digits.split_at(decpt as usize);
            out.push_str(int);
            out.push('.');
            out.push_str(frac);
        } else {
            out.push_str(digits);
            out.push_str(&"0".repeat((decpt - len) as usize));
        }
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push_str(&(decpt - 1).to_string());
    }
    out
}

#[cfg(test)]
#[allow(clippy::approx_constant)] // 3.14 is the FLOAT value checked against MariaDB
mod tests {
    use super::*;

    /// Each pair was read from MariaDB 10.11's text protocol.
    #[test]
    fn doubles_match_mariadb() {
        let cases: [(f64, &str); 21] = [
            (1e20, "1e20"),
            (1.5e-7, "0.00000015"),
            (0.1 + 0.2, "0.30000000000000004"),
            (123456789012345680000.0, "1.2345678901234568e20"),
            (-0.0, "0"),
            (1e15, "1e15"),
            (1e16, "1e16"),
            (123456789012345.6, "123456789012345.6"),
            (1234567890123456.7, "1234567890123456.8"),
            (12345678901234567.8, "1.2345678901234568e16"),
            (1e-5, "0.00001"),
            (100.0, "100"),
            (1.0, "1"),
            (2.5, "2.5"),
            (1.0 / 3.0, "0.3333333333333333"),
            (-1.5e-300, "-1.5e-300"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e308"),
            (1e-15, "0.000000000000001"),
            (1e-16, "1e-16"),
            (999999999999999.0, "999999999999999"),
        ];
        for (x, text) in cases {
            assert_eq!(format_double(x), text, "{x:e}");
        }
        assert_eq!(format_double(1.5e-15), "0.0000000000000015");
        assert_eq!(format_double(1234567890123456.0), "1.234567890123456e15");
        assert_eq!(format_double(123456789012345678.0), "1.2345678901234568e17");
    }

    #[test]
    fn floats_match_mariadb() {
        let cases: [(f32, &str); 10] = [
            (3.14, "3.14"),
            (1234565.0, "1234560"),
            (1234575.0, "1234580"),
            (123456789.0, "123457000"),
            (1e7, "10000000"),
            (1e10, "10000000000"),
            (0.000012345678, "0.0000123457"),
            (3.4e38, "3.4e38"),
            (1.17549e-38, "1.17549e-38"),
            (-1.5e-7, "-0.00000015"),
        ];
        for (x, text) in cases {
            assert_eq!(format_float(f64::from(x)), text, "{x:e}");
            assert_eq!(format_float(text.parse().unwrap()), text, "{x:e} from text");
        }
    }

    #[test]
    fn fixed_decimals_match_mariadb() {
        assert_eq!(format_fixed(1234.5, 2), "1234.50");
        assert_eq!(format_fixed(0.0078125, 6), "0.007812");
        assert_eq!(format_fixed(0.0234375, 6), "0.023438");
        assert_eq!(format_fixed(f64::from(3.14159f32), 3), "3.142");
        assert_eq!(format_fixed(-1e-7, 6), "-0.000000");
        assert_eq!(format_fixed(-0.0, 2), "0.00");
        assert_eq!(format_fixed(-1.0, 3), "-1.000");
        assert_eq!(format_for_column(1.8, false, 2), "1.80");
        assert_eq!(format_for_column(0.6, false, NOT_FIXED_DEC), "0.6");
    }
}
