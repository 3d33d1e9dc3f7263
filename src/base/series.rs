//! Every threshold, series coefficient and switch point of the special functions, in one
//! place for the tensor stages (`physics/`, [`super::trig`]), the cube kernels
//! (`kernel::trig`, `kernel::stages`) and the native loop (`kernel::native`).
//!
//! The numbers are f64. The cube kernels compute in f32 and read the `_F32` twins beside
//! them, each derived here from its f64 value, so that the two cannot drift apart: a twin of a
//! series coefficient ±k/d is the f32 quotient (k as f32)/(d as f32), which is the value the
//! kernels have always had (their literals were such quotients); for every coefficient but
//! one (1/14!, whose denominator is not exact in f32) it is also the f64 coefficient rounded
//! to f32. A twin of a threshold or a scale is its f64 value rounded to f32. The tests below
//! hold the twins to these rules.
//!
//! # The distance δ from the nearest lattice node
//!
//! Three rules, kept apart on purpose:
//!
//! * `x − ceil(x − ½)` ∈ (−½, ½], ties to the lower node: C's rounding (`ceil(h − 0.5)`) for
//!   the nearest-neighbour structure factor's node and the ROUND, GAUSS and TOPHAT shapes'
//!   δ. One rule in three types: `physics::lattice::fractional` (tensors),
//!   `kernel::stages::lattice::fractional` (f32 cube) and `kernel::native::pixel::fractional`
//!   (the native loop), and `ceil(x − ½)` in the structure factor's nearest node.
//! * `h − floor(h + ½)` ∈ [−½, ½), ties to the upper node: sincg's δ in the cube kernels and
//!   the native loop (one `floor` where `round` is a software routine on some drivers).
//! * `h − round(h)` (burn's `round`): sincg's δ in the tensor stages.
//!
//! The last two differ only where h is a half-integer (δ = ±½), and there not in the value:
//! sin(Nπδ)/sin(πδ) is even in δ, so both give the same F_latt (and C's own sincg takes h, not
//! δ, so neither is C's bit pattern anyway). The first differs from them in the sign of δ at a
//! tie, which ROUND, GAUSS and TOPHAT square away. Changing any of them would change results
//! at those ties, so they stay as they are.
//!
//! (Tricubic interpolation's `floor` is another quantity: t = h − ⌊h⌋ ∈ [0, 1), the position
//! in the grid cell that its Lagrange weights take, not a distance from a node.)

/// (2j+1)! for j = 0..=11: sin x = Σ_j (−1)^j·x^(2j+1)/(2j+1)!.
const ODD_FACTORIALS: [f64; 12] = [
    1.0,
    6.0,
    120.0,
    5_040.0,
    362_880.0,
    39_916_800.0,
    6_227_020_800.0,
    1_307_674_368_000.0,
    355_687_428_096_000.0,
    121_645_100_408_832_000.0,
    51_090_942_171_709_440_000.0,
    25_852_016_738_884_976_640_000.0,
];

/// (2j)! for j = 0..=11: cos x = Σ_j (−1)^j·x^(2j)/(2j)!.
const EVEN_FACTORIALS: [f64; 12] = [
    1.0,
    2.0,
    24.0,
    720.0,
    40_320.0,
    3_628_800.0,
    479_001_600.0,
    87_178_291_200.0,
    20_922_789_888_000.0,
    6_402_373_705_728_000.0,
    2_432_902_008_176_640_000.0,
    1_124_000_727_777_607_680_000.0,
];

/// sinc3(x) = 3(sin x − x·cos x)/x³ = Σ_j (−1)^j·x^(2j)/d_j: the d_j for j = 0..=5.
const SINC3_DENOMINATORS: [f64; 6] = [1.0, 10.0, 280.0, 15120.0, 1_330_560.0, 172_972_800.0];

/// (−1)^j·k_j/d_j for each j, in f64.
const fn alternating<const N: usize>(numerators: [f64; N], denominators: [f64; N]) -> [f64; N] {
    let mut out = [0.0; N];
    let mut j = 0;
    while j < N {
        let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
        out[j] = sign * numerators[j] / denominators[j];
        j += 1;
    }
    out
}

/// (−1)^j·k_j/d_j for each j, as the f32 quotient of f32 operands.
const fn alternating_f32<const N: usize>(numerators: [f64; N], denominators: [f64; N]) -> [f32; N] {
    let mut out = [0.0; N];
    let mut j = 0;
    while j < N {
        let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
        out[j] = sign * numerators[j] as f32 / denominators[j] as f32;
        j += 1;
    }
    out
}

/// `[1.0; N]`.
const fn ones<const N: usize>() -> [f64; N] {
    [1.0; N]
}

/// `[0, 1, …, N − 1]` as f64.
const fn indices<const N: usize>() -> [f64; N] {
    let mut out = [0.0; N];
    let mut j = 0;
    while j < N {
        out[j] = j as f64;
        j += 1;
    }
    out
}

/// sin x = x·Σ_j `SIN_TAYLOR[j]`·x^(2j): (−1)^j/(2j+1)!, j = 0..=11. The tensor stages and the
/// cube kernels take j ≤ 6 (to x¹³, truncation error below 7e-10 on [−π/2, π/2]), the native
/// loop all twelve (to x²³, below 1e-20).
pub const SIN_TAYLOR: [f64; 12] = alternating(ones(), ODD_FACTORIALS);
/// [`SIN_TAYLOR`] to x¹³ in f32, for the cube kernels.
pub const SIN_TAYLOR_F32: [f32; 7] = {
    let all = alternating_f32(ones::<12>(), ODD_FACTORIALS);
    [all[0], all[1], all[2], all[3], all[4], all[5], all[6]]
};

/// cos x = Σ_j `COS_TAYLOR[j]`·x^(2j): (−1)^j/(2j)!, j = 0..=11. The cube kernels take j ≤ 7
/// (to x¹⁴, truncation error below 1e-10 on [−π/2, π/2]), the native loop all twelve (to
/// x²², below 1e-19).
pub const COS_TAYLOR: [f64; 12] = alternating(ones(), EVEN_FACTORIALS);
/// [`COS_TAYLOR`] to x¹⁴ in f32, for the cube kernels (1/14! as 1/f32(14!), as the kernel has
/// always had it: 14! is not exact in f32).
pub const COS_TAYLOR_F32: [f32; 8] = {
    let all = alternating_f32(ones::<12>(), EVEN_FACTORIALS);
    [all[0], all[1], all[2], all[3], all[4], all[5], all[6], all[7]]
};

/// sinc3(x) = Σ_j `SINC3_TAYLOR[j]`·u^j with u = x², j = 0..=5 (to x¹⁰, error below 4e-11
/// where it is used, |x| < [`SINC3_SERIES_BELOW_F32`]).
pub const SINC3_TAYLOR: [f64; 6] = alternating(ones(), SINC3_DENOMINATORS);
/// [`SINC3_TAYLOR`] in f32.
pub const SINC3_TAYLOR_F32: [f32; 6] = alternating_f32(ones(), SINC3_DENOMINATORS);
/// d sinc3/du = Σ_{j≥1} `SINC3_SLOPE[j]`·u^(j−1): j·`SINC3_TAYLOR[j]` (`SINC3_SLOPE[0]` = 0).
pub const SINC3_SLOPE: [f64; 6] = alternating(indices(), SINC3_DENOMINATORS);
/// [`SINC3_SLOPE`] in f32.
pub const SINC3_SLOPE_F32: [f32; 6] = alternating_f32(indices(), SINC3_DENOMINATORS);

/// |x| below which sinc3 takes its series in f64 (tensor stages, native loop): its closed
/// form loses no more than f64 can spare above it.
pub const SINC3_SERIES_BELOW: f64 = 1e-2;
/// |x| below which sinc3 takes its series in f32 (tensor stages and cube kernels): the
/// closed form, sin x/x − cos x ≈ x²/3 from two numbers near 1, loses digits up to x ≈ 1.
pub const SINC3_SERIES_BELOW_F32: f32 = 1.0;
/// [`SINC3_SERIES_BELOW_F32`]², the switch in u = x².
pub const SINC3_SERIES_BELOW_F32_SQUARED: f32 = SINC3_SERIES_BELOW_F32 * SINC3_SERIES_BELOW_F32;

/// |δ| below which sin(Nπδ)/sin(πδ) is replaced by its limit N (tensor stages, native loop,
/// the cube kernels' forward sincg). The cube kernels' sincg with partials takes the limit at
/// δ = 0 only: its value and ∂/∂N are quotients of sines accurate relative to their values
/// down to δ → 0, so nothing needs replacing above 0.
pub const SINCG_EPS: f64 = 1e-9;
/// [`SINCG_EPS`] in f32.
pub const SINCG_EPS_F32: f32 = SINCG_EPS as f32;

/// |N·x| and |x| (x = πδ) below which the cube kernels' ∂sincg/∂h is its Taylor series
/// π·N(N²−1)·x·((3N²−7)·x²·[`SINCG_DH_TAYLOR`][1] − [`SINCG_DH_TAYLOR`][0]): the closed form
/// is a difference of two numbers near N there (error of the series below 1e-7 relative).
pub const SINCG_DH_SERIES_BELOW: f64 = 0.1;
/// [`SINCG_DH_SERIES_BELOW`] in f32.
pub const SINCG_DH_SERIES_BELOW_F32: f32 = SINCG_DH_SERIES_BELOW as f32;
/// The two coefficients of ∂sincg/∂h's series: 1/3 and 1/90 (the f32 kernel's are checked
/// against them).
#[cfg(test)]
pub const SINCG_DH_TAYLOR: [f64; 2] = [1.0 / 3.0, 1.0 / 90.0];
/// [`SINCG_DH_TAYLOR`] in f32 (f32 quotients).
pub const SINCG_DH_TAYLOR_F32: [f32; 2] = [1.0f32 / 3.0, 1.0f32 / 90.0];

/// The largest whole N whose lattice sum the native loop takes by Chebyshev's recurrence
/// (U_{N−1}(cos πδ)) instead of a quotient of sines.
pub const CHEBYSHEV_MAX_N: f64 = 32.0;

/// Scale of the ROUND shape: √(volume ratio) of the cube and the sphere, as C.
pub const ROUND_SCALE: f64 = 0.723601254558268;
/// [`ROUND_SCALE`] rounded to f32, for the cube kernels.
pub const ROUND_SCALE_F32: f32 = ROUND_SCALE as f32;

/// GAUSS: F_latt = V·exp(−r²/`GAUSS_WIDTH`) with r² = |Σ δ_v·recip_v|²·V²·fudge (C's 0.63).
pub const GAUSS_WIDTH: f64 = 0.63;
/// [`GAUSS_WIDTH`] in f32.
pub const GAUSS_WIDTH_F32: f32 = GAUSS_WIDTH as f32;
/// TOPHAT: F_latt = V where r² < `TOPHAT_R2` (0.63², C's 0.3969), else 0.
pub const TOPHAT_R2: f64 = 0.3969;
/// [`TOPHAT_R2`] in f32.
pub const TOPHAT_R2_F32: f32 = TOPHAT_R2 as f32;

#[cfg(test)]
mod tests {
    use super::*;

    /// The coefficients against their closed forms in f64 (independent of the tables above).
    #[test]
    fn coefficients_are_the_taylor_series() {
        let factorial = |n: u32| (1..=n).map(f64::from).product::<f64>();
        for j in 0..12 {
            let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
            let rel = |a: f64, b: f64| (a - b).abs() <= 1e-15 * b.abs();
            assert!(rel(SIN_TAYLOR[j], sign / factorial(2 * j as u32 + 1)), "sin {j}");
            assert!(rel(COS_TAYLOR[j], sign / factorial(2 * j as u32)), "cos {j}");
        }
        // 3(sin x − x cos x)/x³ = Σ_j (−1)^j·6(j+1)/(2j+3)!·x^(2j) = Σ_j (−1)^j·3/((2j+1)!·(2j+3))·x^(2j)
        for j in 0..6 {
            let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
            let want = sign * 3.0 / (factorial(2 * j as u32 + 1) * (2 * j + 3) as f64);
            assert!((SINC3_TAYLOR[j] - want).abs() <= 1e-15 * want.abs(), "sinc3 {j}");
            assert_eq!(SINC3_SLOPE[j], sign * j as f64 / SINC3_DENOMINATORS[j], "slope {j}");
        }
        assert!((TOPHAT_R2 - GAUSS_WIDTH * GAUSS_WIDTH).abs() < 1e-15);
    }

    /// The f64 values are those the code had as literals (the same quotients in f64).
    #[test]
    fn f64_values_are_the_literals_they_replace() {
        let sin = [
            1.0,
            -1.0 / 6.0,
            1.0 / 120.0,
            -1.0 / 5_040.0,
            1.0 / 362_880.0,
            -1.0 / 39_916_800.0,
            1.0 / 6_227_020_800.0,
            -1.0 / 1_307_674_368_000.0,
            1.0 / 355_687_428_096_000.0,
            -1.0 / 121_645_100_408_832_000.0,
            1.0 / 51_090_942_171_709_440_000.0,
            -1.0 / 25_852_016_738_884_976_640_000.0,
        ];
        let cos = [
            1.0,
            -1.0 / 2.0,
            1.0 / 24.0,
            -1.0 / 720.0,
            1.0 / 40_320.0,
            -1.0 / 3_628_800.0,
            1.0 / 479_001_600.0,
            -1.0 / 87_178_291_200.0,
            1.0 / 20_922_789_888_000.0,
            -1.0 / 6_402_373_705_728_000.0,
            1.0 / 2_432_902_008_176_640_000.0,
            -1.0 / 1_124_000_727_777_607_680_000.0,
        ];
        let sinc3 = [
            1.0,
            -1.0 / 10.0,
            1.0 / 280.0,
            -1.0 / 15120.0,
            1.0 / 1_330_560.0,
            -1.0 / 172_972_800.0,
        ];
        let slope = [
            0.0,
            -1.0 / 10.0,
            2.0 / 280.0,
            -3.0 / 15120.0,
            4.0 / 1_330_560.0,
            -5.0 / 172_972_800.0,
        ];
        assert_eq!(SIN_TAYLOR, sin);
        assert_eq!(COS_TAYLOR, cos);
        assert_eq!(SINC3_TAYLOR, sinc3);
        assert_eq!(SINC3_SLOPE, slope);
    }

    /// Each f32 twin is the f32 quotient the kernels computed from their literals, and (but
    /// for 1/14!) the f64 value rounded to f32.
    #[test]
    fn f32_twins_are_the_kernels_quotients() {
        assert_eq!(SIN_TAYLOR_F32[1], -1.0f32 / 6.0);
        assert_eq!(SIN_TAYLOR_F32[6], 1.0f32 / 6_227_020_800.0);
        assert_eq!(COS_TAYLOR_F32[7], -1.0f32 / 87_178_291_200.0);
        assert_ne!(COS_TAYLOR_F32[7], COS_TAYLOR[7] as f32);
        assert_eq!(SINC3_SLOPE_F32[5], -5.0f32 / 172_972_800.0);
        for (j, &c) in SIN_TAYLOR_F32.iter().enumerate() {
            assert_eq!(c, SIN_TAYLOR[j] as f32, "sin {j}");
        }
        for (j, &c) in COS_TAYLOR_F32.iter().enumerate().take(7) {
            assert_eq!(c, COS_TAYLOR[j] as f32, "cos {j}");
        }
        for j in 0..6 {
            assert_eq!(SINC3_TAYLOR_F32[j], SINC3_TAYLOR[j] as f32, "sinc3 {j}");
            assert_eq!(SINC3_SLOPE_F32[j], SINC3_SLOPE[j] as f32, "slope {j}");
        }
        for j in 0..2 {
            assert_eq!(SINCG_DH_TAYLOR_F32[j], SINCG_DH_TAYLOR[j] as f32);
        }
        assert_eq!(GAUSS_WIDTH_F32, 0.63f32);
        assert_eq!(TOPHAT_R2_F32, 0.3969f32);
        assert_eq!(SINCG_EPS_F32, 1e-9f32);
        assert_eq!(SINCG_DH_SERIES_BELOW_F32, 0.1f32);
        // the nearest f32 to C's scale, 0.72360128
        assert_eq!(ROUND_SCALE_F32, 0.723_601_3f32);
        assert!((f64::from(ROUND_SCALE_F32) - ROUND_SCALE).abs() <= 0.5 * f64::from(f32::EPSILON) * 0.5);
    }
}
