//! Number formatting shared by tables and axis ticks.

/// `v` with at most four significant digits and no trailing zeros: `69`,
/// `9.06`, `118.5`, `0.001234`, `1.235e7`. Non-finite values print as `NaN`,
/// `inf` and `-inf`.
pub(crate) fn fmt_num(v: f64) -> String {
    fmt_sig(v, 7)
}

/// An axis tick: as [`fmt_num`] but in scientific notation from 100000 up
/// (`2.5e5`), so tick labels stay short.
pub(crate) fn fmt_tick(v: f64) -> String {
    fmt_sig(v, 5)
}

/// Four significant digits; scientific notation below 0.001 and from
/// 10^`sci_from` up.
fn fmt_sig(v: f64, sci_from: i32) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    if v == 0.0 {
        return "0".into();
    }
    let mag = v.abs().log10().floor() as i32;
    if !(-3..sci_from).contains(&mag) {
        let s = format!("{v:.3e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        return format!("{}e{exp}", trim_zeros(mantissa));
    }
    let decimals = (3 - mag).max(0) as usize;
    trim_zeros(&format!("{v:.decimals$}")).to_string()
}

/// measured / published with two decimals, or `NaN` when it has no value.
pub(crate) fn fmt_ratio(r: Option<f64>) -> String {
    match r {
        Some(r) if r.abs() >= 100.0 || (r != 0.0 && r.abs() < 0.01) => fmt_num(r),
        Some(r) => format!("{r:.2}"),
        None => "NaN".into(),
    }
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// measured / published when both are finite and published is not zero.
pub(crate) fn ratio(measured: f64, published: f64) -> Option<f64> {
    let r = measured / published;
    (measured.is_finite() && published.is_finite() && published != 0.0 && r.is_finite())
        .then_some(r)
}

/// Whether a ratio is within a factor of two of the paper.
pub(crate) fn within_2x(r: Option<f64>) -> bool {
    matches!(r, Some(r) if (0.5..=2.0).contains(&r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(fmt_num(69.0), "69");
        assert_eq!(fmt_num(9.06), "9.06");
        assert_eq!(fmt_num(118.456), "118.5");
        assert_eq!(fmt_num(-0.5), "-0.5");
        assert_eq!(fmt_num(0.001234), "0.001234");
        assert_eq!(fmt_num(12_345_678.0), "1.235e7");
        assert_eq!(fmt_num(1e-6), "1e-6");
        assert_eq!(fmt_num(1_000_000.0), "1000000");
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(f64::NAN), "NaN");
        assert_eq!(fmt_num(f64::NEG_INFINITY), "-inf");
        assert_eq!(fmt_tick(2.5e5), "2.5e5");
        assert_eq!(fmt_tick(99_999.0), "99999");
        assert_eq!(fmt_ratio(Some(1.0 / 3.0)), "0.33");
        assert_eq!(fmt_ratio(Some(250.0)), "250");
        assert_eq!(fmt_ratio(None), "NaN");
    }

    #[test]
    fn ratios() {
        assert_eq!(ratio(2.0, 4.0), Some(0.5));
        assert_eq!(ratio(2.0, 0.0), None);
        assert_eq!(ratio(f64::NAN, 1.0), None);
        assert!(within_2x(Some(0.5)) && within_2x(Some(2.0)));
        assert!(!within_2x(Some(2.01)) && !within_2x(Some(0.49)) && !within_2x(None));
    }
}
