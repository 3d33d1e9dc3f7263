//! The CBF byte-offset compression (`x-CBF_BYTE_OFFSET`) of signed 32-bit pixels: each pixel is
//! stored as its difference from the previous one (the first from 0) in 1, 3, 7 or 15 bytes,
//! little-endian, the smallest value of each width escaping to the next.
//!
//! | delta d (wrapping i32)     | bytes                                    |
//! |----------------------------|------------------------------------------|
//! | −127 ≤ d ≤ 127             | `d` as i8                                |
//! | −32767 ≤ d ≤ 32767         | `80` + i16                               |
//! | any other except −2³¹      | `80 00 80` + i32                         |
//! | −2³¹                       | `80 00 80 00 00 00 80` + i64 (15 bytes)  |
//!
//! Written once here and used by the miniCBF writer and reader of [`super`].

use super::CbfError;

/// The 8-bit escape (−128). The wider escapes are `i16::MIN` and `i32::MIN`, little-endian
/// (and `i64::MIN`, the escape to 128 bits, which no i32 image needs).
const ESC8: u8 = 0x80;

/// Appends one delta (a wrapping i32 difference) in the shortest byte-offset form that holds it.
///
/// The smallest value of each width is reserved as the escape to the next width, so −128 and
/// −32768 each go one width up: 1 byte for |d| ≤ 127; `80` + i16 for |d| ≤ 32767; `80 00 80` +
/// i32 for every other delta except −2³¹, which takes the 64-bit escape (see
/// [`byte_offset_encode`]). All little-endian.
fn push_delta(delta: i32, out: &mut Vec<u8>) {
    if (-127..=127).contains(&delta) {
        out.push(delta as i8 as u8);
        return;
    }
    out.push(ESC8);
    if (-32_767..=32_767).contains(&delta) {
        out.extend_from_slice(&(delta as i16).to_le_bytes());
        return;
    }
    out.extend_from_slice(&i16::MIN.to_le_bytes());
    out.extend_from_slice(&delta.to_le_bytes());
    if delta == i32::MIN {
        // the four bytes just written are the 64-bit escape marker; the value follows as i64
        out.extend_from_slice(&i64::from(delta).to_le_bytes());
    }
}

/// Compresses `data` with the CBF byte-offset algorithm as CBFlib's 32-bit path, fabio's
/// `comp_cbf32` and dxtbx write it: each value is stored as its difference from the previous value
/// (the first from 0), the difference taken modulo 2³² (wrapping i32 subtraction).
///
/// So a jump from −(2³¹−1) to 2³¹−1 is the delta −2 (one byte `FE`) rather than 2³²−2. Decoders
/// that sum in i32 (fabio's `dec_cbf32`, dxtbx) wrap back to the exact values; decoders that sum
/// in i64 (fabio's `dec_cbf` and numpy decoder) get them modulo 2³², i.e. exact after a cast to
/// i32.
///
/// The one delta the 32-bit form cannot carry is −2³¹ (`i32::MIN`, the 32-bit escape marker
/// itself). It is written with the CBF spec's 64-bit escape: `80 00 80 00 00 00 80` followed by
/// the i64 −2³¹ (`00 00 00 80 FF FF FF FF`), 15 bytes. It arises only when two consecutive pixels
/// differ by exactly 2³¹ (e.g. 0 → `i32::MIN`, −1 → `i32::MAX`, 2³⁰ → −2³⁰), never in images whose
/// pixels all lie in a range narrower than 2³¹ (e.g. all non-negative). Readers that implement
/// the 64-bit escape (CBFlib, fabio's `dec_cbf` and numpy decoder, [`byte_offset_decode`]) read it
/// exactly. int32-only decoders (fabio 2026.6.0's `dec_cbf32`, which `fabio.open()` uses for
/// signed 32-bit images, and dxtbx's `cbf_decompress`) take its first 7 bytes as the delta −2³¹,
/// which is right, but then read the 8 payload bytes as 5 further deltas and lose step for the
/// rest of the image, silently. No 32-bit writer does better: fabio's `comp_cbf32` writes this
/// delta as a single `00` byte (a delta of 0: silently wrong), and dxtbx's `cbf_compress` and
/// CBFlib's 4-byte fast path write the bare `80 00 80 00 00 00 80`, which every 64-bit-aware
/// reader (CBFlib's own included) takes for the 64-bit escape.
pub fn byte_offset_encode(data: &[i32]) -> Vec<u8> {
    byte_offset_encode_from(data.iter().copied()).0
}

/// [`byte_offset_encode`] of pixels as they come (never held whole): the compressed bytes and
/// how many pixels there were.
pub fn byte_offset_encode_from(data: impl IntoIterator<Item = i32>) -> (Vec<u8>, usize) {
    let data = data.into_iter();
    let mut out = Vec::with_capacity(data.size_hint().0 + 16);
    let (mut prev, mut n) = (0i32, 0usize);
    for v in data {
        push_delta(v.wrapping_sub(prev), &mut out);
        prev = v;
        n += 1;
    }
    (out, n)
}

/// `N` bytes at `pos`, or `None` when the stream is shorter.
fn take<const N: usize>(bytes: &[u8], pos: usize) -> Option<[u8; N]> {
    bytes.get(pos..pos.checked_add(N)?)?.try_into().ok()
}

/// Reads one delta at `pos`: the delta as stored (8, 16, 32 or 64 bits, widened to i64) and the
/// position after it, or `None` when the stream ends inside it. A 64-bit value of −2⁶³ (the
/// escape to 128 bits) is returned as such; [`byte_offset_decode`] rejects it.
fn read_delta(bytes: &[u8], pos: usize) -> Option<(i64, usize)> {
    let [b] = take::<1>(bytes, pos)?;
    if b != ESC8 {
        return Some((i64::from(b as i8), pos + 1));
    }
    let d = i16::from_le_bytes(take::<2>(bytes, pos + 1)?);
    if d != i16::MIN {
        return Some((i64::from(d), pos + 3));
    }
    let d = i32::from_le_bytes(take::<4>(bytes, pos + 3)?);
    if d != i32::MIN {
        return Some((i64::from(d), pos + 7));
    }
    Some((i64::from_le_bytes(take::<8>(bytes, pos + 7)?), pos + 15))
}

/// Largest |delta| a 64-bit escape may carry: 2³²−1, the widest difference of two i32 values.
const MAX_ESCAPED_DELTA: u64 = u32::MAX as u64;

/// Decompresses exactly `n` values from a byte-offset stream (the `X-Binary-Size` bytes after the
/// binary start marker, without padding).
///
/// Values are accumulated with wrapping i32 arithmetic (modulo 2³²), the convention
/// [`byte_offset_encode`] writes with. This reads both conventions found in files exactly:
/// - wrapping deltas (CBFlib's 32-bit path, fabio's `comp_cbf32`, dxtbx, this module), whose only
///   64-bit escape is the delta −2³¹;
/// - exact i64 deltas (the CBF spec read literally, fabio's numpy encoder, older versions of this
///   module), where consecutive pixels 2³¹ or more apart take the 64-bit escape with a value up to
///   ±(2³²−1).
///
/// Both agree modulo 2³², and every pixel is an i32, so adding the low 32 bits of each delta with
/// wrapping gives the pixel exactly. A 64-bit escape is accepted only when its value could be the
/// difference of two i32 values (|d| ≤ 2³²−1); anything wider (including −2⁶³, the escape to 128
/// bits) is [`CbfError::Overflow`]. The price of wrapping is that a stream cannot be caught
/// drifting out of the i32 range: `[2³¹−1, +1]` decodes to `[i32::MAX, i32::MIN]`, which is what
/// a wrapping writer writes for those two pixels.
///
/// Errors when the stream ends early, when bytes remain after the `n`-th value, or on a 64-bit
/// escape out of range.
pub fn byte_offset_decode(bytes: &[u8], n: usize) -> Result<Vec<i32>, CbfError> {
    let mut out = Vec::with_capacity(n.min(bytes.len()));
    let mut pos = 0;
    let mut current = 0i32;
    while out.len() < n {
        let index = out.len();
        let (delta, next) = read_delta(bytes, pos).ok_or(CbfError::Truncated {
            decoded: index,
            wanted: n,
        })?;
        if delta.unsigned_abs() > MAX_ESCAPED_DELTA {
            return Err(CbfError::Overflow { index });
        }
        // the low 32 bits of the delta: the delta modulo 2^32
        current = current.wrapping_add(delta as i32);
        out.push(current);
        pos = next;
    }
    match bytes.len() - pos {
        0 => Ok(out),
        extra => Err(CbfError::TrailingBytes { extra }),
    }
}

/// Test images shared by the unit tests of the byte-offset coder and of the file format.
#[cfg(test)]
pub(super) mod samples {
    /// Deterministic 64-bit LCG (Knuth's MMIX constants); the high 32 bits of each state.
    pub(crate) struct Lcg(pub(crate) u64);

    impl Lcg {
        pub(crate) fn next_u32(&mut self) -> u32 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 32) as u32
        }
    }

    pub(crate) const MAX: i32 = i32::MAX;
    pub(crate) const MIN: i32 = i32::MIN;
    pub(crate) const MIN1: i32 = i32::MIN + 1;

    /// The 7-byte prefix of a 64-bit escape: `80`, `8000`, `80000000`.
    pub(crate) const ESC64: [u8; 7] = [0x80, 0x00, 0x80, 0x00, 0x00, 0x00, 0x80];

    /// Values whose deltas hit every width boundary, both signs, and the widest jumps (including
    /// the deltas of exactly 2³¹, which need the 64-bit escape).
    pub(crate) fn extreme_values() -> Vec<i32> {
        // 8-bit edges: ±127 one byte, ±128 escaped
        let edges8 = [0, 0, 1, -1, 127, 0, -127, 0, 128, 0, -128, 0, 129, -129];
        // 16-bit edges: ±32767 two bytes, ±32768 escaped; then deltas past 2^15 both ways
        let edges16 = [
            32767, 0, -32767, 0, 32768, 0, -32768, 0, 32769, -32769, 70_000, -70_000, 40_000, -40_000,
        ];
        // 32-bit edges and wrapping jumps (MAX ↔ MIN1 is ∓2, MAX → MIN is +1, 0 → MIN is -2^31)
        let edges32 = [MAX, 0, MIN1, 0, MAX, MIN1, MAX, -1, MIN, 0, MIN, MAX, MIN];
        let tail = [MAX, MAX, MIN1, MIN1, 0, 1 << 30, -(1 << 30), 0];
        [&edges8[..], &edges16, &edges32, &tail].concat()
    }

    /// `n` pseudo-random values of mixed magnitude: 8-bit, 16-bit, full i32, and small counts.
    pub(crate) fn random_values(n: usize, seed: u64) -> Vec<i32> {
        let mut rng = Lcg(seed);
        (0..n)
            .map(|_| {
                let r = rng.next_u32();
                match rng.next_u32() >> 30 {
                    0 => (r % 256) as i32 - 128,
                    1 => (r % 65_536) as i32 - 32_768,
                    2 => r as i32,
                    _ => (r % 1000) as i32,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::samples::*;
    use super::*;

    /// The 15 bytes that carry the delta −2³¹ (escape, then i64 −2³¹).
    fn delta_min() -> Vec<u8> {
        [&ESC64[..], &[0x00, 0x00, 0x00, 0x80, 0xFF, 0xFF, 0xFF, 0xFF]].concat()
    }

    /// The CBF spec read literally (fabio's numpy encoder, this module before the switch to
    /// wrapping): exact i64 deltas, the 64-bit escape for |d| > 2³¹−1.
    fn encode_exact_i64(data: &[i32]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut prev = 0i64;
        for &v in data {
            let d = i64::from(v) - prev;
            prev = i64::from(v);
            if (-127..=127).contains(&d) {
                out.push(d as i8 as u8);
            } else if (-32_767..=32_767).contains(&d) {
                out.push(0x80);
                out.extend_from_slice(&(d as i16).to_le_bytes());
            } else if (-(MAX as i64)..=MAX as i64).contains(&d) {
                out.extend_from_slice(&ESC64[..3]);
                out.extend_from_slice(&(d as i32).to_le_bytes());
            } else {
                out.extend_from_slice(&ESC64);
                out.extend_from_slice(&d.to_le_bytes());
            }
        }
        out
    }

    /// Encoded size of one wrapping delta.
    fn width_of(d: i32) -> usize {
        match d {
            -127..=127 => 1,
            -32_767..=32_767 => 3,
            MIN => 15,
            _ => 7,
        }
    }

    fn round_trip(values: &[i32]) {
        let enc = byte_offset_encode(values);
        assert_eq!(byte_offset_decode(&enc, values.len()).unwrap(), values);
    }

    #[test]
    fn known_small_encodings() {
        // deltas 0, 1, 199, -33 → 00 01 | 80 C7 00 | DF
        assert_eq!(
            byte_offset_encode(&[0, 1, 200, 167]),
            [0x00, 0x01, 0x80, 0xC7, 0x00, 0xDF]
        );
        // ±127 fit one byte; +128 and -128 need the 16-bit form (0x80 is the escape)
        assert_eq!(byte_offset_encode(&[127]), [0x7F]);
        assert_eq!(byte_offset_encode(&[-127]), [0x81]);
        assert_eq!(byte_offset_encode(&[128]), [0x80, 0x80, 0x00]);
        assert_eq!(byte_offset_encode(&[-128]), [0x80, 0x80, 0xFF]);
        // ±32767 fit the 16-bit form; ±32768 = ±2^15 and beyond need 32 bits (0x8000 is the escape)
        assert_eq!(byte_offset_encode(&[32767]), [0x80, 0xFF, 0x7F]);
        assert_eq!(byte_offset_encode(&[-32767]), [0x80, 0x01, 0x80]);
        assert_eq!(byte_offset_encode(&[32768]), [0x80, 0x00, 0x80, 0x00, 0x80, 0x00, 0x00]);
        assert_eq!(
            byte_offset_encode(&[-32768]),
            [0x80, 0x00, 0x80, 0x00, 0x80, 0xFF, 0xFF]
        );
        assert_eq!(byte_offset_encode(&[32769]), [0x80, 0x00, 0x80, 0x01, 0x80, 0x00, 0x00]);
        assert_eq!(
            byte_offset_encode(&[-32769]),
            [0x80, 0x00, 0x80, 0xFF, 0x7F, 0xFF, 0xFF]
        );
        // 40000 up (0x9C40), then 80000 down (0xFFFE_C780)
        assert_eq!(
            byte_offset_encode(&[40_000, -40_000]),
            [0x80, 0x00, 0x80, 0x40, 0x9C, 0x00, 0x00, 0x80, 0x00, 0x80, 0x80, 0xC7, 0xFE, 0xFF]
        );
        // ±(2^31-1) fit 32 bits
        let max = [0x80, 0x00, 0x80, 0xFF, 0xFF, 0xFF, 0x7F];
        let min1 = [0x80, 0x00, 0x80, 0x01, 0x00, 0x00, 0x80];
        assert_eq!(byte_offset_encode(&[MAX]), max);
        assert_eq!(byte_offset_encode(&[MIN1]), min1);
    }

    #[test]
    fn wide_jumps_wrap_modulo_2_pow_32() {
        let max = [0x80, 0x00, 0x80, 0xFF, 0xFF, 0xFF, 0x7F];
        let min1 = [0x80, 0x00, 0x80, 0x01, 0x00, 0x00, 0x80];
        let cat = |parts: &[&[u8]]| parts.concat();
        // MIN1 → MAX is 2^32 - 2 ≡ -2; MAX → MIN1 is +2; MAX → MIN is +1; MIN → MAX is -1
        assert_eq!(byte_offset_encode(&[MIN1, MAX]), cat(&[&min1, &[0xFE]]));
        assert_eq!(byte_offset_encode(&[MAX, MIN1]), cat(&[&max, &[0x02]]));
        assert_eq!(byte_offset_encode(&[MAX, MIN]), cat(&[&max, &[0x01]]));
        assert_eq!(byte_offset_encode(&[MIN, MAX]), cat(&[&delta_min(), &[0xFF]]));
        // -2 → MAX is 2^31 + 1 ≡ -(2^31 - 1); MAX → -2 is -(2^31 + 1) ≡ 2^31 - 1
        assert_eq!(byte_offset_encode(&[-2, MAX]), cat(&[&[0xFE], &min1]));
        assert_eq!(byte_offset_encode(&[MAX, -2]), cat(&[&max, &max]));
        // 2^30 + 40000 steps wrap just past ±2^31 too
        assert_eq!(
            byte_offset_encode(&[-(1 << 30), (1 << 30) + 40_000]),
            [
                0x80, 0x00, 0x80, 0x00, 0x00, 0x00, 0xC0, // -2^30
                0x80, 0x00, 0x80, 0x40, 0x9C, 0x00, 0x80, // 2^31 + 40000 ≡ -(2^31 - 40000) = 0x8000_9C40
            ]
        );
    }

    #[test]
    fn delta_of_exactly_2_pow_31_takes_the_64_bit_escape() {
        // -2^31 is the 32-bit escape marker: such deltas are written 80 0080 00000080 + i64 -2^31
        assert_eq!(byte_offset_encode(&[MIN]), delta_min());
        assert_eq!(byte_offset_encode(&[0, MIN]), [&[0x00][..], &delta_min()].concat());
        assert_eq!(byte_offset_encode(&[-1, MAX]), [&[0xFF][..], &delta_min()].concat());
        assert_eq!(byte_offset_encode(&[MIN, 0]), [delta_min(), delta_min()].concat());
        let up = byte_offset_encode(&[1 << 30, -(1 << 30)]);
        assert_eq!(up[7..], delta_min()[..]);
        let down = byte_offset_encode(&[-(1 << 30), 1 << 30]);
        assert_eq!(down[7..], delta_min()[..]);
        round_trip(&[0, MIN, 0, -1, MAX, -1, 1 << 30, -(1 << 30), 1 << 30]);
    }

    #[test]
    fn decodes_hand_made_streams() {
        let bytes = [0x05, 0xFB, 0x80, 0xE8, 0x03, 0x80, 0x00, 0x80, 0xA0, 0x86, 0x01, 0x00];
        assert_eq!(byte_offset_decode(&bytes, 4).unwrap(), [5, 0, 1000, 101_000]);
        // non-minimal but valid forms decode too (a 16-bit 1, a 32-bit -1, a 64-bit 2)
        let wide = [0x80, 0x01, 0x00, 0x80, 0x00, 0x80, 0xFF, 0xFF, 0xFF, 0xFF];
        let wide64 = [&ESC64[..], &[2, 0, 0, 0, 0, 0, 0, 0]].concat();
        assert_eq!(
            byte_offset_decode(&[&wide[..], &wide64[..]].concat(), 3).unwrap(),
            [1, 0, 2]
        );
        // wrapping: MAX then +1 is MIN, MIN then -1 is MAX
        let max = byte_offset_encode(&[MAX]);
        assert_eq!(
            byte_offset_decode(&[&max[..], &[0x01, 0xFF]].concat(), 3).unwrap(),
            [MAX, MIN, MAX]
        );
    }

    #[test]
    fn decodes_the_exact_i64_convention_too() {
        let esc = |d: i64| [&ESC64[..], &d.to_le_bytes()].concat();
        let min1 = byte_offset_encode(&[MIN1]);
        let max = byte_offset_encode(&[MAX]);
        // MIN1 → MAX as the exact delta 2^32 - 2 = 0x0000_0000_FFFF_FFFE
        let up = [min1.clone(), esc(0xFFFF_FFFE)].concat();
        assert_eq!(
            up[7..],
            [&ESC64[..], &[0xFE, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0]].concat()[..]
        );
        assert_eq!(byte_offset_decode(&up, 2).unwrap(), [MIN1, MAX]);
        // MAX → MIN as -(2^32 - 1) = 0xFFFF_FFFF_0000_0001; MIN → MAX as 2^32 - 1
        let down = [max, esc(-0xFFFF_FFFF)].concat();
        assert_eq!(
            down[7..],
            [&ESC64[..], &[0x01, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF]].concat()[..]
        );
        assert_eq!(byte_offset_decode(&down, 2).unwrap(), [MAX, MIN]);
        assert_eq!(
            byte_offset_decode(&[esc(-(1 << 31)), esc(0xFFFF_FFFF)].concat(), 2).unwrap(),
            [MIN, MAX]
        );
        // whole images: same pixels from either convention; wrapping is never longer
        for values in [extreme_values(), random_values(20_000, 11)] {
            let exact = encode_exact_i64(&values);
            assert_eq!(byte_offset_decode(&exact, values.len()).unwrap(), values);
            assert!(byte_offset_encode(&values).len() <= exact.len());
        }
    }

    #[test]
    fn round_trips_extremes_and_random() {
        round_trip(&[]);
        round_trip(&[0; 100]);
        round_trip(&extreme_values());
        let mut rev = extreme_values();
        rev.reverse();
        round_trip(&rev);
        round_trip(&random_values(20_000, 42));
        round_trip(&[MAX; 10]);
        round_trip(&[MIN; 10]);
        round_trip(&[MIN1, MAX, MIN1, MAX, MIN, MAX, MIN, MIN1]);
    }

    #[test]
    fn every_boundary_delta_round_trips_from_several_bases() {
        let deltas = [
            0,
            1,
            126,
            127,
            128,
            129,
            32_766,
            32_767,
            32_768,
            32_769,
            1 << 30,
            MAX - 1,
            MAX,
            MIN,
        ];
        let bases = [0, 1, -1, 1000, -1000, MAX, MIN, MIN1, MAX - 40_000, MIN1 + 40_000];
        for base in bases {
            for &d in &deltas {
                for d in [d, d.wrapping_neg()] {
                    let next = base.wrapping_add(d);
                    let enc = byte_offset_encode(&[base, next, base]);
                    assert_eq!(
                        enc.len(),
                        width_of(base) + width_of(d) + width_of(d.wrapping_neg()),
                        "{base} {next}"
                    );
                    assert_eq!(byte_offset_decode(&enc, 3).unwrap(), [base, next, base]);
                }
            }
        }
    }

    #[test]
    fn encoding_widths_match_the_spec() {
        let width = |v: &[i32]| byte_offset_encode(v).len();
        assert_eq!(width(&[0, 127, 0, -127]), 4);
        assert_eq!(width(&[128]), 3);
        assert_eq!(width(&[-128]), 3);
        assert_eq!(width(&[32767]), 3);
        assert_eq!(width(&[-32767]), 3);
        assert_eq!(width(&[32768]), 7);
        assert_eq!(width(&[-32768]), 7);
        assert_eq!(width(&[MAX]), 7);
        assert_eq!(width(&[MIN1]), 7);
        assert_eq!(width(&[MIN]), 15);
        assert_eq!(width(&[MIN1, MAX]), 7 + 1);
        assert_eq!(width(&[MAX, MIN]), 7 + 1);
        assert_eq!(width(&[-1, MAX]), 1 + 15);
        // a 64-bit escape is written for a delta of exactly -2^31 and for nothing else
        let values = [extreme_values(), random_values(20_000, 5)].concat();
        let n_min = values
            .iter()
            .scan(0i32, |prev, &v| Some(v.wrapping_sub(std::mem::replace(prev, v))))
            .filter(|&d| d == MIN)
            .count();
        let enc = byte_offset_encode(&values);
        assert!(n_min > 0);
        assert_eq!(enc.windows(7).filter(|w| *w == ESC64).count(), n_min);
    }

    #[test]
    fn decode_rejects_bad_streams() {
        let enc = byte_offset_encode(&[1, 1000, MAX, MIN, 0, 40_000]);
        assert_eq!(enc.len(), 1 + 3 + 7 + 1 + 15 + 7);
        for cut in 0..enc.len() {
            assert!(
                matches!(byte_offset_decode(&enc[..cut], 6), Err(CbfError::Truncated { .. })),
                "cut {cut}"
            );
        }
        assert!(matches!(
            byte_offset_decode(&enc, 5),
            Err(CbfError::TrailingBytes { .. })
        ));
        // 64-bit deltas no two i32 pixels can differ by, and the 128-bit escape
        for d in [1i64 << 32, -(1 << 32), 1 << 40, i64::MAX, i64::MIN] {
            let bad = [&[0x07][..], &ESC64[..], &d.to_le_bytes()[..]].concat();
            assert!(
                matches!(byte_offset_decode(&bad, 2), Err(CbfError::Overflow { index: 1 })),
                "{d}"
            );
        }
    }
}
