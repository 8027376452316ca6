//! Arbitrary-precision numbers: CQL `varint` and `decimal`.
//!
//! Kept deliberately small instead of pulling in a bignum crate: values are stored in the
//! native protocol's own form (big-endian two's complement), and the only arithmetic needed
//! is conversion to and from decimal digits (for ordering decimals, printing and parsing),
//! done with schoolbook division by 10^9 on 32-bit limbs. That is quadratic in the number of
//! digits, which is fine for key-sized values (Cassandra caps keys at 64 KiB).

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// Why a number could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NumberError {
    /// A varint must have at least one byte.
    #[error("a varint needs at least one byte")]
    Empty,
    /// Text that is not a number of the expected form.
    #[error("not a valid number: {input:?}")]
    Syntax {
        /// The text as given (possibly truncated to 64 characters).
        input: String,
    },
    /// A decimal whose scale does not fit Cassandra's 32-bit scale.
    #[error("decimal scale {scale} is outside the 32-bit range")]
    ScaleOutOfRange {
        /// The scale that was needed.
        scale: i64,
    },
}

fn syntax_error(s: &str) -> NumberError {
    NumberError::Syntax {
        input: s.chars().take(64).collect(),
    }
}

/// A CQL `varint`: an integer of any size, held as minimal big-endian two's complement
/// bytes (Java's `BigInteger.toByteArray`), never empty.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Varint(Vec<u8>);

impl Varint {
    /// Zero.
    pub fn zero() -> Varint {
        Varint(vec![0])
    }

    /// A varint from big-endian two's complement bytes (redundant sign bytes are dropped).
    pub fn from_be_bytes(bytes: &[u8]) -> Result<Varint, NumberError> {
        if bytes.is_empty() {
            return Err(NumberError::Empty);
        }
        Ok(Varint(minimal_twos_complement(bytes).to_vec()))
    }

    /// A varint from a sign and a big-endian unsigned magnitude (leading zeros allowed).
    /// A zero magnitude gives zero whatever the sign.
    pub fn from_sign_magnitude(negative: bool, magnitude_be: &[u8]) -> Varint {
        let mut bytes = Vec::with_capacity(magnitude_be.len() + 1);
        bytes.push(0);
        bytes.extend_from_slice(magnitude_be);
        if negative {
            negate_in_place(&mut bytes);
        }
        Varint(minimal_twos_complement(&bytes).to_vec())
    }

    /// The minimal big-endian two's complement bytes (at least one).
    pub fn as_be_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.0.first().is_some_and(|b| b & 0x80 != 0)
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.0 == [0]
    }

    /// The big-endian unsigned magnitude without leading zeros (empty for zero).
    pub fn magnitude_be(&self) -> Vec<u8> {
        let mut bytes = self.0.clone();
        if self.is_negative() {
            negate_in_place(&mut bytes);
        }
        let first = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
        bytes.split_off(first)
    }

    /// The value as an `i128`, if it fits.
    pub fn to_i128(&self) -> Option<i128> {
        if self.0.len() > 16 {
            return None;
        }
        let fill = if self.is_negative() { 0xff } else { 0 };
        let mut buf = [fill; 16];
        buf.get_mut(16 - self.0.len()..)?.copy_from_slice(&self.0);
        Some(i128::from_be_bytes(buf))
    }

    /// The value as an `i64`, if it fits.
    pub fn to_i64(&self) -> Option<i64> {
        self.to_i128().and_then(|v| i64::try_from(v).ok())
    }

    /// The decimal digits of the magnitude, most significant first, each 0..=9; empty for
    /// zero.
    pub(crate) fn magnitude_digits(&self) -> Vec<u8> {
        digits_of_magnitude(&self.magnitude_be())
    }
}

impl From<i128> for Varint {
    fn from(v: i128) -> Varint {
        Varint(minimal_twos_complement(&v.to_be_bytes()).to_vec())
    }
}

impl From<i64> for Varint {
    fn from(v: i64) -> Varint {
        Varint::from(i128::from(v))
    }
}

impl Ord for Varint {
    /// Numeric order.
    fn cmp(&self, other: &Varint) -> Ordering {
        match (self.is_negative(), other.is_negative()) {
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            // Minimal encodings: among non-negatives a longer one is larger, among negatives
            // a longer one is smaller; same length compares as unsigned bytes either way.
            (false, false) => self.0.len().cmp(&other.0.len()).then(self.0.cmp(&other.0)),
            (true, true) => other.0.len().cmp(&self.0.len()).then(self.0.cmp(&other.0)),
        }
    }
}

impl PartialOrd for Varint {
    fn partial_cmp(&self, other: &Varint) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for Varint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Varint({self})")
    }
}

impl fmt::Display for Varint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_zero() {
            return f.write_str("0");
        }
        if self.is_negative() {
            f.write_str("-")?;
        }
        f.write_str(&digits_to_string(&self.magnitude_digits()))
    }
}

impl FromStr for Varint {
    type Err = NumberError;

    /// Parses `[+-]digits`.
    fn from_str(s: &str) -> Result<Varint, NumberError> {
        let (negative, body) = split_sign(s);
        if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
            return Err(syntax_error(s));
        }
        let digits: Vec<u8> = body.bytes().map(|b| b - b'0').collect();
        Ok(Varint::from_sign_magnitude(
            negative,
            &magnitude_of_digits(&digits),
        ))
    }
}

/// A CQL `decimal`: `unscaled × 10^(-scale)`, as Java's `BigDecimal`.
///
/// Equality is structural (`1.0 != 1.00`, like `BigDecimal.equals`); use
/// [`Decimal::numeric_cmp`] for Cassandra's ordering, under which they are equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Decimal {
    /// The power of ten the unscaled value is divided by.
    pub scale: i32,
    /// The digits as an integer.
    pub unscaled: Varint,
}

/// A decimal in normalized scientific form: `±0.d₁d₂…dₙ × 10^exponent`, with `d₁ ≠ 0` and
/// `dₙ ≠ 0` (zero has no digits and exponent 0). Two decimals are numerically equal exactly
/// when their parts are equal.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DecimalParts {
    /// Whether the value is below zero (never set for zero).
    pub negative: bool,
    /// The significant digits, each 0..=9, most significant first.
    pub digits: Vec<u8>,
    /// The power of ten of the leading digit's place plus one.
    pub exponent: i64,
}

impl Decimal {
    /// `unscaled × 10^(-scale)`.
    pub fn new(unscaled: Varint, scale: i32) -> Decimal {
        Decimal { scale, unscaled }
    }

    /// The normalized scientific parts of the value.
    pub fn to_parts(&self) -> DecimalParts {
        let mut digits = self.unscaled.magnitude_digits();
        if digits.is_empty() {
            return DecimalParts {
                negative: false,
                digits,
                exponent: 0,
            };
        }
        let exponent = digits.len() as i64 - i64::from(self.scale);
        while digits.last() == Some(&0) {
            digits.pop();
        }
        DecimalParts {
            negative: self.unscaled.is_negative(),
            digits,
            exponent,
        }
    }

    /// The decimal with the fewest digits for `parts` whose scale fits in 32 bits (trailing
    /// zeros dropped unless the scale would fall below `i32::MIN`; zero at scale 0). Fails
    /// if a digit is > 9, or the value needs a scale above `i32::MAX` or more than
    /// 200 000 padding zeros (neither happens for parts of a valid decimal).
    pub fn from_parts(parts: &DecimalParts) -> Result<Decimal, NumberError> {
        if parts.digits.iter().any(|&d| d > 9) {
            return Err(NumberError::Syntax {
                input: format!("{:?}", parts.digits),
            });
        }
        let first = parts.digits.iter().position(|&d| d != 0);
        let last = parts.digits.iter().rposition(|&d| d != 0);
        let (Some(first), Some(last)) = (first, last) else {
            return Ok(Decimal::new(Varint::zero(), 0));
        };
        let mut digits = parts.digits.get(first..=last).unwrap_or_default().to_vec();
        let exponent = i128::from(parts.exponent) - first as i128;
        let mut scale = digits.len() as i128 - exponent;
        let out_of_range = |scale: i128| NumberError::ScaleOutOfRange {
            scale: i64::try_from(scale).unwrap_or(if scale < 0 { i64::MIN } else { i64::MAX }),
        };
        let min = i128::from(i32::MIN);
        if scale < min {
            // A huge integer: keep enough trailing zeros for the scale to fit.
            let pad = usize::try_from(min - scale)
                .ok()
                .filter(|&pad| pad <= PAD_DIGITS_MAX)
                .ok_or(out_of_range(scale))?;
            digits.resize(digits.len() + pad, 0);
            scale = min;
        }
        let scale = i32::try_from(scale).map_err(|_| out_of_range(scale))?;
        let unscaled = Varint::from_sign_magnitude(parts.negative, &magnitude_of_digits(&digits));
        Ok(Decimal::new(unscaled, scale))
    }

    /// The same value with trailing zeros dropped from the unscaled digits, as far as the
    /// scale stays within 32 bits (zero becomes `0` at scale 0).
    pub fn normalized(&self) -> Result<Decimal, NumberError> {
        Decimal::from_parts(&self.to_parts())
    }

    /// Numeric order, as Cassandra's `DecimalType` compares (`BigDecimal.compareTo`).
    pub fn numeric_cmp(&self, other: &Decimal) -> Ordering {
        compare_parts(&self.to_parts(), &other.to_parts())
    }
}

/// Most zeros [`Decimal::from_parts`] appends to keep a scale in range (a bound against
/// absurd exponents in untrusted bytes; valid decimals need at most their own digit count,
/// and Cassandra keys are at most 64 KiB).
const PAD_DIGITS_MAX: usize = 200_000;

/// Numeric order of two normalized decimals.
pub(crate) fn compare_parts(a: &DecimalParts, b: &DecimalParts) -> Ordering {
    let sign = |p: &DecimalParts| match (p.digits.is_empty(), p.negative) {
        (true, _) => 0,
        (false, true) => -1,
        (false, false) => 1,
    };
    let (sa, sb) = (sign(a), sign(b));
    if sa != sb || sa == 0 {
        return sa.cmp(&sb);
    }
    let magnitude = a
        .exponent
        .cmp(&b.exponent)
        .then_with(|| a.digits.cmp(&b.digits));
    if sa < 0 {
        magnitude.reverse()
    } else {
        magnitude
    }
}

impl fmt::Display for Decimal {
    /// Java's `BigDecimal.toString`: plain notation when the scale is non-negative and the
    /// adjusted exponent is at least -6, scientific (`1.23E+5`) otherwise.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut digits = digits_to_string(&self.unscaled.magnitude_digits());
        if digits.is_empty() {
            digits.push('0');
        }
        if self.unscaled.is_negative() {
            f.write_str("-")?;
        }
        let n = digits.len() as i64;
        let scale = i64::from(self.scale);
        let adjusted = n - 1 - scale;
        if scale >= 0 && adjusted >= -6 {
            if scale == 0 {
                f.write_str(&digits)
            } else if n > scale {
                let (int, frac) = digits.split_at((n - scale) as usize);
                write!(f, "{int}.{frac}")
            } else {
                let zeros = "0".repeat((scale - n) as usize);
                write!(f, "0.{zeros}{digits}")
            }
        } else {
            let (lead, rest) = digits.split_at(1);
            f.write_str(lead)?;
            if !rest.is_empty() {
                write!(f, ".{rest}")?;
            }
            write!(f, "E{}{adjusted}", if adjusted >= 0 { "+" } else { "" })
        }
    }
}

impl FromStr for Decimal {
    type Err = NumberError;

    /// Parses Java `BigDecimal` syntax: `[+-]digits[.digits][(e|E)[+-]digits]`, with at
    /// least one digit in the mantissa.
    fn from_str(s: &str) -> Result<Decimal, NumberError> {
        let (negative, body) = split_sign(s);
        let (mantissa, exp) = match body.find(['e', 'E']) {
            Some(i) => (body.get(..i).unwrap_or(""), body.get(i + 1..)),
            None => (body, None),
        };
        let (int, frac) = match mantissa.find('.') {
            Some(i) => (
                mantissa.get(..i).unwrap_or(""),
                mantissa.get(i + 1..).unwrap_or(""),
            ),
            None => (mantissa, ""),
        };
        let all_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
        if int.len() + frac.len() == 0 || !all_digits(int) || !all_digits(frac) {
            return Err(syntax_error(s));
        }
        let exp: i64 = match exp {
            None => 0,
            Some(e) => {
                let (neg, digits) = split_sign(e);
                if digits.is_empty() || !all_digits(digits) || digits.len() > 12 {
                    return Err(syntax_error(s));
                }
                let v: i64 = digits.parse().map_err(|_| syntax_error(s))?;
                if neg {
                    -v
                } else {
                    v
                }
            }
        };
        let digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
        let scale = frac.len() as i64 - exp;
        let scale = i32::try_from(scale).map_err(|_| NumberError::ScaleOutOfRange { scale })?;
        let unscaled = Varint::from_sign_magnitude(negative, &magnitude_of_digits(&digits));
        Ok(Decimal::new(unscaled, scale))
    }
}

fn split_sign(s: &str) -> (bool, &str) {
    if let Some(rest) = s.strip_prefix('-') {
        (true, rest)
    } else {
        (false, s.strip_prefix('+').unwrap_or(s))
    }
}

fn digits_to_string(digits: &[u8]) -> String {
    digits.iter().map(|&d| char::from(b'0' + d)).collect()
}

/// Drops redundant leading sign bytes (keeps at least one byte).
fn minimal_twos_complement(bytes: &[u8]) -> &[u8] {
    let mut start = 0;
    while let (Some(&b), Some(&next)) = (bytes.get(start), bytes.get(start + 1)) {
        let redundant = (b == 0x00 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0);
        if !redundant {
            break;
        }
        start += 1;
    }
    bytes.get(start..).unwrap_or(bytes)
}

/// Two's complement negation of a big-endian number in place (wrapping at its width).
fn negate_in_place(bytes: &mut [u8]) {
    let mut carry = true;
    for b in bytes.iter_mut().rev() {
        let (v, c) = (!*b).overflowing_add(u8::from(carry));
        *b = v;
        carry = c;
    }
}

/// Little-endian 32-bit limbs of a big-endian magnitude, without high zero limbs.
fn limbs_of(magnitude_be: &[u8]) -> Vec<u32> {
    let mut limbs: Vec<u32> = magnitude_be
        .rchunks(4)
        .map(|chunk| chunk.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)))
        .collect();
    while limbs.last() == Some(&0) {
        limbs.pop();
    }
    limbs
}

fn bytes_of(limbs: &[u32]) -> Vec<u8> {
    let mut out: Vec<u8> = limbs.iter().rev().flat_map(|l| l.to_be_bytes()).collect();
    let first = out.iter().position(|&b| b != 0).unwrap_or(out.len());
    out.split_off(first)
}

const CHUNK: u32 = 1_000_000_000;

/// Divides in place by `d`, returning the remainder.
fn div_small(limbs: &mut Vec<u32>, d: u32) -> u32 {
    let mut rem: u64 = 0;
    for limb in limbs.iter_mut().rev() {
        let cur = (rem << 32) | u64::from(*limb);
        *limb = (cur / u64::from(d)) as u32;
        rem = cur % u64::from(d);
    }
    while limbs.last() == Some(&0) {
        limbs.pop();
    }
    rem as u32
}

fn mul_add_small(limbs: &mut Vec<u32>, m: u32, a: u32) {
    let mut carry = u64::from(a);
    for limb in limbs.iter_mut() {
        let cur = u64::from(*limb) * u64::from(m) + carry;
        *limb = cur as u32;
        carry = cur >> 32;
    }
    if carry != 0 {
        limbs.push(carry as u32);
    }
}

fn digits_of_magnitude(magnitude_be: &[u8]) -> Vec<u8> {
    let mut limbs = limbs_of(magnitude_be);
    let mut chunks = Vec::new();
    while !limbs.is_empty() {
        chunks.push(div_small(&mut limbs, CHUNK));
    }
    let mut digits = Vec::with_capacity(chunks.len() * 9);
    for (i, chunk) in chunks.iter().rev().enumerate() {
        let text = if i == 0 {
            chunk.to_string()
        } else {
            format!("{chunk:09}")
        };
        digits.extend(text.bytes().map(|b| b - b'0'));
    }
    digits
}

fn magnitude_of_digits(digits: &[u8]) -> Vec<u8> {
    let mut limbs = Vec::new();
    let head = digits.len() % 9;
    let (first, rest) = digits.split_at(head);
    let value = |ds: &[u8]| ds.iter().fold(0u32, |acc, &d| acc * 10 + u32::from(d));
    if !first.is_empty() {
        mul_add_small(&mut limbs, 1, value(first));
    }
    for chunk in rest.chunks(9) {
        mul_add_small(&mut limbs, CHUNK, value(chunk));
    }
    while limbs.last() == Some(&0) {
        limbs.pop();
    }
    bytes_of(&limbs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn varints_are_kept_minimal() {
        assert_eq!(
            Varint::from_be_bytes(&[0, 0, 0x7f]).unwrap().as_be_bytes(),
            [0x7f]
        );
        assert_eq!(
            Varint::from_be_bytes(&[0, 0x80]).unwrap().as_be_bytes(),
            [0, 0x80]
        );
        assert_eq!(
            Varint::from_be_bytes(&[0xff, 0xff, 0x80])
                .unwrap()
                .as_be_bytes(),
            [0x80]
        );
        assert_eq!(
            Varint::from_be_bytes(&[0xff, 0x7f]).unwrap().as_be_bytes(),
            [0xff, 0x7f]
        );
        assert_eq!(Varint::from_be_bytes(&[]), Err(NumberError::Empty));
        assert_eq!(Varint::from(-128i64).as_be_bytes(), [0x80]);
        assert_eq!(Varint::from(128i64).as_be_bytes(), [0, 0x80]);
        assert_eq!(Varint::from(0i64).as_be_bytes(), [0]);
    }

    #[test]
    fn varints_print_and_parse_in_decimal() {
        let big = "-123456789012345678901234567890123456789012345678901234567890";
        let v: Varint = big.parse().unwrap();
        assert_eq!(v.to_string(), big);
        assert_eq!("+0".parse::<Varint>().unwrap(), Varint::zero());
        assert_eq!("-0".parse::<Varint>().unwrap(), Varint::zero());
        assert!("12a".parse::<Varint>().is_err());
        assert!("".parse::<Varint>().is_err());
        assert!("-".parse::<Varint>().is_err());
    }

    #[test]
    fn decimals_print_like_java_big_decimal() {
        let d = |u: i64, s: i32| Decimal::new(Varint::from(u), s).to_string();
        assert_eq!(d(123, 2), "1.23");
        assert_eq!(d(-123, 5), "-0.00123");
        assert_eq!(d(123, 0), "123");
        assert_eq!(d(123, -2), "1.23E+4");
        assert_eq!(d(1, 10), "1E-10");
        assert_eq!(d(0, 3), "0.000");
        assert_eq!(d(-5, 7), "-5E-7");
        assert_eq!(d(12, 7), "0.0000012");
    }

    #[test]
    fn decimals_parse_java_syntax() {
        let p = |s: &str| s.parse::<Decimal>().unwrap();
        assert_eq!(p("1.23"), Decimal::new(Varint::from(123i64), 2));
        assert_eq!(p("-1.23e3"), Decimal::new(Varint::from(-123i64), -1));
        assert_eq!(p(".5"), Decimal::new(Varint::from(5i64), 1));
        assert_eq!(p("5."), Decimal::new(Varint::from(5i64), 0));
        assert_eq!(p("1E-10"), Decimal::new(Varint::from(1i64), 10));
        for bad in ["", ".", "e5", "1e", "1.2.3", "--1", "1e+-2", "0x10"] {
            assert!(bad.parse::<Decimal>().is_err(), "{bad}");
        }
        assert!(matches!(
            "1e99999999999".parse::<Decimal>(),
            Err(NumberError::ScaleOutOfRange { .. })
        ));
    }

    #[test]
    fn equal_decimals_at_different_scales_compare_equal() {
        let a = Decimal::new(Varint::from(10i64), 1);
        let b = Decimal::new(Varint::from(1000i64), 3);
        assert_ne!(a, b);
        assert_eq!(a.numeric_cmp(&b), Ordering::Equal);
        assert_eq!(a.normalized().unwrap(), Decimal::new(Varint::from(1i64), 0));
        let zero = Decimal::new(Varint::zero(), -7);
        assert_eq!(zero.normalized().unwrap(), Decimal::new(Varint::zero(), 0));
    }

    #[test]
    fn normalizing_keeps_the_scale_in_range() {
        let huge = Decimal::new(Varint::from(1_000i64), i32::MIN + 1);
        let n = huge.normalized().unwrap();
        assert_eq!(n, Decimal::new(Varint::from(100i64), i32::MIN));
        assert_eq!(n.numeric_cmp(&huge), Ordering::Equal);
        let absurd = DecimalParts {
            negative: false,
            digits: vec![1],
            exponent: i64::MAX,
        };
        assert!(Decimal::from_parts(&absurd).is_err());
        let tiny = DecimalParts {
            negative: false,
            digits: vec![1],
            exponent: i64::MIN,
        };
        assert!(Decimal::from_parts(&tiny).is_err());
    }

    proptest! {
        #[test]
        fn varint_order_is_numeric(a: i128, b: i128) {
            prop_assert_eq!(Varint::from(a).cmp(&Varint::from(b)), a.cmp(&b));
            prop_assert_eq!(Varint::from(a).to_i128(), Some(a));
        }

        #[test]
        fn varint_decimal_text_round_trips(a: i128) {
            let v = Varint::from(a);
            prop_assert_eq!(v.to_string(), a.to_string());
            prop_assert_eq!(v.to_string().parse::<Varint>().unwrap(), v);
        }

        #[test]
        fn varint_sign_magnitude_round_trips(bytes in proptest::collection::vec(any::<u8>(), 1..40)) {
            let v = Varint::from_be_bytes(&bytes).unwrap();
            let back = Varint::from_sign_magnitude(v.is_negative(), &v.magnitude_be());
            prop_assert_eq!(back, v);
        }

        #[test]
        fn decimal_order_matches_exact_arithmetic(
            a in -1_000_000_000i64..1_000_000_000, sa in -8i32..8,
            b in -1_000_000_000i64..1_000_000_000, sb in -8i32..8,
        ) {
            // a×10^-sa vs b×10^-sb, both scaled to 10^-8 (exact in i128).
            let fa = i128::from(a) * 10i128.pow((8 - sa) as u32);
            let fb = i128::from(b) * 10i128.pow((8 - sb) as u32);
            let da = Decimal::new(Varint::from(a), sa);
            let db = Decimal::new(Varint::from(b), sb);
            prop_assert_eq!(da.numeric_cmp(&db), fa.cmp(&fb));
            let back = Decimal::from_parts(&da.to_parts()).unwrap();
            prop_assert_eq!(back.numeric_cmp(&da), Ordering::Equal);
            prop_assert_eq!(da.to_string().parse::<Decimal>().unwrap(), da);
        }
    }
}
