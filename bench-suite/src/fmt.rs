//! Number formatting shared by the report, the plots and the seed tables (a leaf: it
//! imports nothing of the crate).

/// Formats a value with about three significant digits (trailing zeros dropped).
pub fn fmt_value(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_three_significant_digits() {
        assert_eq!(fmt_value(1234.56), "1235");
        assert_eq!(fmt_value(12.345), "12.3");
        assert_eq!(fmt_value(1.2345), "1.23");
        assert_eq!(fmt_value(0.12345), "0.123");
        assert_eq!(fmt_value(48.0), "48");
        assert_eq!(fmt_value(24.0004), "24");
        assert_eq!(fmt_value(2.5), "2.5");
    }
}
