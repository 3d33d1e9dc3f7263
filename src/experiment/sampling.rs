//! Auto-selection of counts, ranges and steps (φ, divergence, dispersion, sensor layers,
//! mosaic domains), exactly as the C program resolves what the user left unset.
//!
//! Each rule takes the user's values (`None` = not given, C's −1 sentinel) and returns the
//! resolved `(count, range, step)`.

/// A resolved sweep: `count` samples starting at the sweep's origin, `step` apart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sweep {
    pub count: usize,
    pub range: f64,
    pub step: f64,
}

impl Sweep {
    /// A single sample, no range.
    pub const SINGLE: Sweep = Sweep {
        count: 1,
        range: 0.0,
        step: 0.0,
    };
}

/// Spindle sweep (range = osc, rad). C's rules differ from the others: only-osc gives
/// 2 steps of osc/2; count-only gives an osc of 1°; count and osc give osc/count.
pub fn phi_sweep(count: Option<i64>, osc: Option<f64>, step: Option<f64>) -> Sweep {
    let mut n = count.unwrap_or(-1);
    let mut osc = osc.unwrap_or(-1.0);
    let mut st = step.unwrap_or(-1.0);
    if n < 0 {
        if osc < 0.0 {
            if st <= 0.0 {
                n = 1;
                osc = 0.0;
                st = 0.0;
            } else {
                osc = st;
                n = 2;
            }
        } else if st <= 0.0 {
            n = 2;
            st = osc / 2.0;
        } else {
            n = (osc / st).ceil() as i64;
        }
    } else {
        if n == 0 {
            n = 1;
        }
        if osc < 0.0 {
            if st <= 0.0 {
                osc = 1.0f64.to_radians();
                st = osc / n as f64;
            } else {
                osc = st;
                n = 2;
            }
        } else if st < 0.0 {
            st = osc / n as f64;
        }
    }
    Sweep {
        count: n.max(1) as usize,
        range: osc,
        step: st,
    }
}

/// Divergence (rad) or dispersion (fraction) sweep, followed by C's sanity reset (any of
/// range, step, count ≤ 0 → a single sample). `count_only_range` is the range C assumes when
/// only a count is given (1.0 for both).
pub fn spread_sweep(count: Option<i64>, range: Option<f64>, step: Option<f64>) -> Sweep {
    let (mut n, mut r, mut st) = (count.unwrap_or(-1), range.unwrap_or(-1.0), step.unwrap_or(-1.0));
    if n <= 0 {
        if r < 0.0 {
            if st <= 0.0 {
                return Sweep::SINGLE;
            }
            r = st;
            n = 2;
        } else if st <= 0.0 {
            st = r;
            n = 2;
        } else {
            n = (r / st).ceil() as i64;
        }
    } else if r < 0.0 {
        if st <= 0.0 {
            r = 1.0;
            st = r / n as f64;
        } else {
            r = st;
            n = 2;
        }
    } else if st <= 0.0 {
        if n <= 1 {
            n = 2;
        }
        st = r / (n - 1) as f64;
    }
    sanity(n, r, st)
}

/// Sensor layers (thickness in m). Only-thickness gives 2 layers of thick/2; thickness and a
/// count give count ≥ 2 layers of thick/(count−1). The thickness defaults to 0, not "unset".
pub fn thickness_sweep(count: Option<i64>, thickness: f64, step: Option<f64>) -> Sweep {
    let (mut n, mut r, mut st) = (count.unwrap_or(-1), thickness, step.unwrap_or(-1.0));
    if n <= 0 {
        if r < 0.0 {
            if st <= 0.0 {
                return Sweep::SINGLE;
            }
            r = st;
            n = 2;
        } else if st <= 0.0 {
            n = 2;
            st = r / n as f64;
        } else {
            n = (r / st).ceil() as i64;
        }
    } else if r < 0.0 {
        if st <= 0.0 {
            r = 0.5e-6;
            st = r / n as f64;
        } else {
            r = st;
            n = 2;
        }
    } else if st <= 0.0 {
        if n <= 1 {
            n = 2;
        }
        st = r / (n - 1) as f64;
    }
    sanity(n, r, st)
}

fn sanity(n: i64, r: f64, st: f64) -> Sweep {
    if r <= 0.0 || st <= 0.0 || n <= 0 {
        Sweep::SINGLE
    } else {
        Sweep {
            count: n as usize,
            range: r,
            step: st,
        }
    }
}

/// Mosaic domain count and spread (rad) after C's rules; the message is C's warning, if any.
pub fn mosaic_domains(domains: Option<i64>, spread: Option<f64>) -> (usize, f64, Option<&'static str>) {
    let d = domains.unwrap_or(-1);
    let s = spread.unwrap_or(-1.0);
    if d <= 0 {
        if s <= 0.0 {
            (1, 0.0, None)
        } else {
            (
                10,
                s,
                Some("finite mosaicity with only one domain! upping to 10 mosaic domains"),
            )
        }
    } else if s < 0.0 {
        (1, 0.0, Some("no mosaic spread specified.  setting mosaic_domains = 1"))
    } else if s == 0.0 {
        (
            1,
            0.0,
            Some("zero mosaic spread specified.  setting mosaic_domains = 1"),
        )
    } else {
        (d as usize, s, None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phi_rules_follow_the_reference_table() {
        assert_eq!(phi_sweep(None, None, None), Sweep::SINGLE);
        let s = phi_sweep(None, Some(0.2), None);
        assert_eq!((s.count, s.step), (2, 0.1));
        let s = phi_sweep(None, None, Some(0.1));
        assert_eq!((s.count, s.range), (2, 0.1));
        let s = phi_sweep(None, Some(1.0), Some(0.3));
        assert_eq!(s.count, 4);
        let s = phi_sweep(Some(4), None, None);
        assert!((s.range - 1f64.to_radians()).abs() < 1e-15);
        assert!((s.step - s.range / 4.0).abs() < 1e-18);
        let s = phi_sweep(Some(4), Some(0.4), None);
        assert_eq!((s.count, s.step), (4, 0.1));
        assert_eq!(phi_sweep(Some(0), None, None).count, 1);
    }

    #[test]
    fn divergence_rules() {
        assert_eq!(spread_sweep(None, None, None), Sweep::SINGLE);
        // range and count: step = range/(count-1)
        let s = spread_sweep(Some(3), Some(2e-3), None);
        assert_eq!(s.count, 3);
        assert!((s.step - 1e-3).abs() < 1e-18);
        // range only: two end points
        let s = spread_sweep(None, Some(2e-3), None);
        assert_eq!((s.count, s.step), (2, 2e-3));
        // count only: range 1 rad
        let s = spread_sweep(Some(4), None, None);
        assert_eq!((s.count, s.range, s.step), (4, 1.0, 0.25));
        // exact ratio on radians
        let s = spread_sweep(None, Some(0.28e-3), Some(0.02e-3));
        assert_eq!(s.count, 14);
        // dispersion: range 0 given (C's default) → single
        assert_eq!(spread_sweep(Some(5), Some(0.0), None), Sweep::SINGLE);
    }

    #[test]
    fn thickness_rules() {
        assert_eq!(thickness_sweep(None, 0.0, None), Sweep::SINGLE);
        let s = thickness_sweep(None, 100e-6, None);
        assert_eq!((s.count, s.step), (2, 50e-6));
        let s = thickness_sweep(Some(5), 450e-6, None);
        assert_eq!(s.count, 5);
        assert!((s.step - 112.5e-6).abs() < 1e-18);
        let s = thickness_sweep(Some(1), 100e-6, None);
        assert_eq!((s.count, s.step), (2, 100e-6));
        assert_eq!(thickness_sweep(Some(3), 0.0, None), Sweep::SINGLE);
    }

    #[test]
    fn mosaic_rules() {
        assert_eq!(mosaic_domains(None, None).0, 1);
        assert_eq!(mosaic_domains(None, Some(0.01)).0, 10);
        assert_eq!(mosaic_domains(Some(5), None).0, 1);
        assert_eq!(mosaic_domains(Some(5), Some(0.0)).0, 1);
        assert_eq!(mosaic_domains(Some(5), Some(0.01)).0, 5);
    }
}
