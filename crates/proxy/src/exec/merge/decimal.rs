//! Exact decimals for merging DECIMAL results: parse MariaDB's text, add, multiply, divide with
//! MariaDB's rounding (half away from zero), and format with a fixed scale.

use std::cmp::Ordering;
use std::fmt;
use thiserror::Error;

/// One limb holds nine decimal digits.
const BASE: u64 = 1_000_000_000;
/// Longest text accepted (MariaDB's DECIMAL has at most 65 digits; sums may grow a little).
const MAX_TEXT: usize = 200;

/// Why a decimal's text was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecimalError {
    #[error("not a decimal number: {0:?}")]
    Invalid(String),
    #[error("decimal text longer than 200 characters")]
    TooLong,
}

/// An exact decimal: `magnitude / 10^scale`, with a sign. Equality is structural (1.5 and 1.50
/// differ, as their text does); [`Decimal::cmp_num`] compares numerically.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Decimal {
    negative: bool,
    /// Base-10^9 limbs, least significant first, without high zero limbs (zero is empty).
    limbs: Vec<u32>,
    scale: u32,
}

impl Decimal {
    /// Zero with `scale` decimals.
    pub fn zero(scale: u32) -> Decimal {
        Decimal {
            negative: false,
            limbs: Vec::new(),
            scale,
        }
    }

    /// An integer (scale 0).
    pub fn from_i128(v: i128) -> Decimal {
        let mut limbs = Vec::new();
        let mut m = v.unsigned_abs();
        while m > 0 {
            limbs.push((m % u128::from(BASE)) as u32);
            m /= u128::from(BASE);
        }
        Decimal {
            negative: v < 0,
            limbs,
            scale: 0,
        }
    }

    /// Parses MariaDB's text form, e.g. `-123.4500` (sign, digits, optional fraction).
    pub fn parse(text: &[u8]) -> Result<Decimal, DecimalError> {
        if text.len() > MAX_TEXT {
            return Err(DecimalError::TooLong);
        }
        let invalid = || DecimalError::Invalid(String::from_utf8_lossy(text).into_owned());
        let (negative, rest) = match text.split_first() {
            Some((b'-', r)) => (true, r),
            Some((b'+', r)) => (false, r),
            _ => (false, text),
        };
        let (int, frac) = match rest.iter().position(|&b| b == b'.') {
            Some(p) => (&rest[..p], &rest[p + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        let all_digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
        if int.len() + frac.len() == 0 || !all_digits(int) || !all_digits(frac) {
            return Err(invalid());
        }
        let digits: Vec<u8> = int.iter().chain(frac).map(|b| b - b'0').collect();
        let mut d = Decimal {
            negative,
            limbs: limbs_from_digits(&digits),
            scale: frac.len() as u32,
        };
        d.normalize();
        Ok(d)
    }

    /// Digits after the decimal point.
    pub fn scale(&self) -> u32 {
        self.scale
    }

    pub fn is_zero(&self) -> bool {
        self.limbs.is_empty()
    }

    pub fn is_negative(&self) -> bool {
        self.negative
    }

    /// The same number with `scale` decimals, rounded half away from zero when shortened.
    pub fn rescale(&self, scale: u32) -> Decimal {
        match scale.cmp(&self.scale) {
            Ordering::Equal => self.clone(),
            Ordering::Greater => self.widened(scale),
            Ordering::Less => {
                let mut limbs = self.limbs.clone();
                let mut dropped = 0;
                for _ in scale..self.scale {
                    dropped = div_small(&mut limbs, 10);
                }
                if dropped >= 5 {
                    add_small(&mut limbs, 1);
                }
                let mut d = Decimal {
                    negative: self.negative,
                    limbs,
                    scale,
                };
                d.normalize();
                d
            }
        }
    }

    /// `self` with more decimals (exact).
    fn widened(&self, scale: u32) -> Decimal {
        let mut limbs = self.limbs.clone();
        mul_pow10(&mut limbs, scale.saturating_sub(self.scale));
        Decimal {
            negative: self.negative,
            limbs,
            scale: scale.max(self.scale),
        }
    }

    /// Exact sum; the scale is the larger of both.
    pub fn add(&self, other: &Decimal) -> Decimal {
        let scale = self.scale.max(other.scale);
        let (a, b) = (self.widened(scale), other.widened(scale));
        let mut d = if a.negative == b.negative {
            Decimal {
                negative: a.negative,
                limbs: add_mag(&a.limbs, &b.limbs),
                scale,
            }
        } else if cmp_mag(&a.limbs, &b.limbs) != Ordering::Less {
            Decimal {
                negative: a.negative,
                limbs: sub_mag(&a.limbs, &b.limbs),
                scale,
            }
        } else {
            Decimal {
                negative: b.negative,
                limbs: sub_mag(&b.limbs, &a.limbs),
                scale,
            }
        };
        d.normalize();
        d
    }

    /// `-self`.
    pub fn neg(&self) -> Decimal {
        let mut d = self.clone();
        d.negative = !d.negative;
        d.normalize();
        d
    }

    /// Exact product; the scale is the sum of both.
    pub fn mul(&self, other: &Decimal) -> Decimal {
        let mut d = Decimal {
            negative: self.negative != other.negative,
            limbs: mul_mag(&self.limbs, &other.limbs),
            scale: self.scale + other.scale,
        };
        d.normalize();
        d
    }

    /// `self / count` with `scale` decimals, rounded half away from zero (MariaDB's AVG);
    /// `None` when `count` is 0.
    pub fn div_int(&self, count: u64, scale: u32) -> Option<Decimal> {
        if count == 0 {
            return None;
        }
        let mut limbs = self.limbs.clone();
        mul_pow10(&mut limbs, scale.saturating_sub(self.scale));
        let rem = div_small(&mut limbs, count);
        let mut d = Decimal {
            negative: self.negative,
            limbs,
            scale: scale.max(self.scale),
        };
        if scale >= self.scale {
            if u128::from(rem) * 2 >= u128::from(count) {
                add_small(&mut d.limbs, 1);
            }
            d.normalize();
            return Some(d);
        }
        // Fewer decimals than the dividend: the truncated quotient's dropped digits decide
        // the rounding alone (10^k is even, so the remainder cannot tip a tie).
        d.normalize();
        Some(d.rescale(scale))
    }

    /// `self / other` with `scale` decimals, rounded half away from zero; `None` when dividing
    /// by zero (SQL NULL).
    pub fn div(&self, other: &Decimal, scale: u32) -> Option<Decimal> {
        if other.is_zero() {
            return None;
        }
        // q = self * 10^(scale + 1 + other.scale - self.scale) / other, then round the last digit.
        let mut num = self.limbs.clone();
        let shift = i64::from(scale) + 1 + i64::from(other.scale) - i64::from(self.scale);
        let mut den = other.limbs.clone();
        if shift >= 0 {
            mul_pow10(&mut num, shift as u32);
        } else {
            mul_pow10(&mut den, shift.unsigned_abs() as u32);
        }
        let mut q = div_mag(&num, &den);
        let last = div_small(&mut q, 10);
        if last >= 5 {
            add_small(&mut q, 1);
        }
        let mut d = Decimal {
            negative: self.negative != other.negative,
            limbs: q,
            scale,
        };
        d.normalize();
        Some(d)
    }

    /// Numeric comparison (1.5 equals 1.50).
    pub fn cmp_num(&self, other: &Decimal) -> Ordering {
        match (self.negative, other.negative) {
            (false, true) => return Ordering::Greater,
            (true, false) => return Ordering::Less,
            _ => {}
        }
        let scale = self.scale.max(other.scale);
        let ord = cmp_mag(&self.widened(scale).limbs, &other.widened(scale).limbs);
        if self.negative {
            ord.reverse()
        } else {
            ord
        }
    }

    /// The nearest double.
    pub fn to_f64(&self) -> f64 {
        self.to_string().parse().unwrap_or(0.0)
    }

    /// The value as an i128 when it is an integer that fits.
    pub fn to_i128(&self) -> Option<i128> {
        let int = self.rescale(0);
        if int.cmp_num(self) != Ordering::Equal {
            return None;
        }
        let mut v: i128 = 0;
        for &l in int.limbs.iter().rev() {
            v = v.checked_mul(i128::from(BASE))?.checked_add(i128::from(l))?;
        }
        Some(if int.negative { -v } else { v })
    }

    /// Bytes held, for memory accounting.
    pub fn size(&self) -> usize {
        self.limbs.len() * 4 + 8
    }

    fn normalize(&mut self) {
        while self.limbs.last() == Some(&0) {
            self.limbs.pop();
        }
        if self.limbs.is_empty() {
            self.negative = false;
        }
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut digits = String::new();
        for (i, l) in self.limbs.iter().rev().enumerate() {
            if i == 0 {
                digits.push_str(&l.to_string());
            } else {
                digits.push_str(&format!("{l:09}"));
            }
        }
        let scale = self.scale as usize;
        if digits.len() <= scale {
            digits = format!("{}{digits}", "0".repeat(scale + 1 - digits.len()));
        }
        let (int, frac) = digits.split_at(digits.len() - scale);
        let sign = if self.negative { "-" } else { "" };
        if scale == 0 {
            write!(f, "{sign}{int}")
        } else {
            write!(f, "{sign}{int}.{frac}")
        }
    }
}

fn limbs_from_digits(digits: &[u8]) -> Vec<u32> {
    let mut limbs = Vec::with_capacity(digits.len() / 9 + 1);
    for chunk in digits.rchunks(9) {
        limbs.push(chunk.iter().fold(0u32, |acc, &d| acc * 10 + u32::from(d)));
    }
    limbs
}

fn trim(limbs: &mut Vec<u32>) {
    while limbs.last() == Some(&0) {
        limbs.pop();
    }
}

fn cmp_mag(a: &[u32], b: &[u32]) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.iter().rev().cmp(b.iter().rev()))
}

fn add_mag(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len().max(b.len()) + 1);
    let mut carry = 0u64;
    for i in 0..a.len().max(b.len()) {
        let s = u64::from(*a.get(i).unwrap_or(&0)) + u64::from(*b.get(i).unwrap_or(&0)) + carry;
        out.push((s % BASE) as u32);
        carry = s / BASE;
    }
    if carry > 0 {
        out.push(carry as u32);
    }
    out
}

/// `a - b` for `a >= b`.
fn sub_mag(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0i64;
    for (i, &x) in a.iter().enumerate() {
        let mut d = i64::from(x) - i64::from(*b.get(i).unwrap_or(&0)) - borrow;
        borrow = i64::from(d < 0);
        if d < 0 {
            d += BASE as i64;
        }
        out.push(d as u32);
    }
    trim(&mut out);
    out
}

fn mul_mag(a: &[u32], b: &[u32]) -> Vec<u32> {
    if a.is_empty() || b.is_empty() {
        return Vec::new();
    }
    let mut acc = vec![0u64; a.len() + b.len() + 1];
    for (i, &x) in a.iter().enumerate() {
        let mut carry = 0u64;
        for (j, &y) in b.iter().enumerate() {
            let t = acc[i + j] + u64::from(x) * u64::from(y) + carry;
            acc[i + j] = t % BASE;
            carry = t / BASE;
        }
        acc[i + b.len()] += carry;
    }
    let mut out: Vec<u32> = acc.into_iter().map(|v| v as u32).collect();
    trim(&mut out);
    out
}

fn mul_small(limbs: &mut Vec<u32>, m: u64) {
    let mut carry = 0u128;
    for l in limbs.iter_mut() {
        let t = u128::from(*l) * u128::from(m) + carry;
        *l = (t % u128::from(BASE)) as u32;
        carry = t / u128::from(BASE);
    }
    while carry > 0 {
        limbs.push((carry % u128::from(BASE)) as u32);
        carry /= u128::from(BASE);
    }
    trim(limbs);
}

fn mul_pow10(limbs: &mut Vec<u32>, mut k: u32) {
    while k > 0 {
        let step = k.min(9);
        mul_small(limbs, 10u64.pow(step));
        k -= step;
    }
}

fn add_small(limbs: &mut Vec<u32>, v: u32) {
    let mut carry = u64::from(v);
    for l in limbs.iter_mut() {
        if carry == 0 {
            return;
        }
        let t = u64::from(*l) + carry;
        *l = (t % BASE) as u32;
        carry = t / BASE;
    }
    if carry > 0 {
        limbs.push(carry as u32);
    }
}

/// Divides in place; returns the remainder.
fn div_small(limbs: &mut Vec<u32>, d: u64) -> u64 {
    let mut rem = 0u128;
    for l in limbs.iter_mut().rev() {
        let cur = rem * u128::from(BASE) + u128::from(*l);
        *l = (cur / u128::from(d)) as u32;
        rem = cur % u128::from(d);
    }
    trim(limbs);
    rem as u64
}

/// Truncated quotient of two magnitudes (`den` non-zero), by long division in decimal digits.
fn div_mag(num: &[u32], den: &[u32]) -> Vec<u32> {
    let mut rem: Vec<u32> = num.to_vec();
    let mut shifted = vec![den.to_vec()];
    while cmp_mag(shifted.last().map_or(&[][..], |v| v), &rem) != Ordering::Greater {
        let mut next = shifted.last().cloned().unwrap_or_default();
        mul_small(&mut next, 10);
        shifted.push(next);
    }
    let mut q: Vec<u32> = Vec::new();
    for step in shifted.iter().rev().skip(1) {
        mul_small(&mut q, 10);
        let mut digit = 0;
        while cmp_mag(step, &rem) != Ordering::Greater {
            rem = sub_mag(&rem, step);
            digit += 1;
        }
        add_small(&mut q, digit);
    }
    trim(&mut q);
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s.as_bytes()).unwrap()
    }

    #[test]
    fn parse_and_format_keep_the_scale() {
        for s in [
            "-123.4500",
            "0",
            "0.00",
            "1.5",
            "99999999999999.9999",
            "-0.0313",
            "123456789012345678901234567890.123456789",
        ] {
            assert_eq!(d(s).to_string(), s);
        }
        assert_eq!(d("-0.00").to_string(), "0.00");
        assert_eq!(d(".5").to_string(), "0.5");
        for bad in ["", "-", "1e5", "1.2.3", "abc", "1,5"] {
            assert!(Decimal::parse(bad.as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(Decimal::parse(&[b'1'; 300]), Err(DecimalError::TooLong));
    }

    #[test]
    fn sums_are_exact() {
        assert_eq!(d("5.01").add(&d("-123.4500")).to_string(), "-118.4400");
        assert_eq!(d("-1").add(&d("1")).to_string(), "0");
        let big = d("99999999999999999999999999999999999999999999999999999999999999999");
        assert_eq!(big.add(&d("1")).to_string(), format!("1{}", "0".repeat(65)));
        assert_eq!(d("1.5").mul(&d("-1.25")).to_string(), "-1.875");
    }

    /// MariaDB 10.11: AVG of INT 1,2,2 = 1.6667; AVG over 32 rows summing to 1 = 0.0313 and
    /// -0.0313 (half away from zero); AVG of DECIMAL(10,2) 1.00,2.00,2.01 = 1.670000.
    #[test]
    fn div_int_rounds_half_away_from_zero() {
        assert_eq!(d("5").div_int(3, 4).unwrap().to_string(), "1.6667");
        assert_eq!(d("1").div_int(32, 4).unwrap().to_string(), "0.0313");
        assert_eq!(d("-1").div_int(32, 4).unwrap().to_string(), "-0.0313");
        assert_eq!(d("5.01").div_int(3, 6).unwrap().to_string(), "1.670000");
        assert_eq!(d("0.00").div_int(7, 6).unwrap().to_string(), "0.000000");
        assert_eq!(d("1.25").div_int(1, 1).unwrap().to_string(), "1.3");
        assert_eq!(d("-1.25").div_int(2, 1).unwrap().to_string(), "-0.6");
        assert!(d("1").div_int(0, 4).is_none());
    }

    /// MariaDB 10.11: 5.01/3 = 1.670000, 1/3 = 0.3333, 2/3 = 0.6667, -2/3 = -0.6667, 1/32 = 0.0313.
    #[test]
    fn division_matches_mariadb() {
        assert_eq!(d("5.01").div(&d("3"), 6).unwrap().to_string(), "1.670000");
        assert_eq!(d("2").div(&d("3"), 4).unwrap().to_string(), "0.6667");
        assert_eq!(d("-2").div(&d("3"), 4).unwrap().to_string(), "-0.6667");
        assert_eq!(d("1").div(&d("32"), 4).unwrap().to_string(), "0.0313");
        assert_eq!(d("1").div(&d("0.25"), 4).unwrap().to_string(), "4.0000");
        assert_eq!(
            d("123456789123456789").div(&d("0.001"), 0).unwrap().to_string(),
            "123456789123456789000"
        );
        assert!(d("1").div(&d("0.00"), 4).is_none());
    }

    #[test]
    fn comparisons_and_conversions() {
        assert_eq!(d("1.5").cmp_num(&d("1.50")), Ordering::Equal);
        assert_eq!(d("-2").cmp_num(&d("-1.99")), Ordering::Less);
        assert_eq!(d("0.001").cmp_num(&d("0")), Ordering::Greater);
        assert_eq!(d("12.50").rescale(1).to_string(), "12.5");
        assert_eq!(d("12.55").rescale(1).to_string(), "12.6");
        assert_eq!(d("-12.55").rescale(0).to_string(), "-13");
        assert_eq!(d("3").rescale(2).to_string(), "3.00");
        assert_eq!(d("0.1").to_f64(), 0.1);
        assert_eq!(d("-42.000").to_i128(), Some(-42));
        assert_eq!(d("1.5").to_i128(), None);
        assert_eq!(
            Decimal::from_i128(-18446744073709551615).to_string(),
            "-18446744073709551615"
        );
    }
}
