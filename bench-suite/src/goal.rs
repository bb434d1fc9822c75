//! Targets and whether a run met them (a leaf: it imports nothing of the crate).
//!
//! A group records a target row ([`crate::measure::Ctx::record_goal`]) whose median is
//! the number the goal is judged on (for the string targets: a geometric mean of ratios
//! over lengths) and whose `max` is the worst case behind it. The report prints the
//! verdict in stdout and in the Targets table at the top of `report.md`.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a target row must reach.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Goal {
    /// The value is at most this.
    AtMost(f64),
    /// The value is at least this.
    AtLeast(f64),
    /// The value lies in `[lo, hi]`.
    Within(f64, f64),
    /// Never above this anywhere (the worst case is at most it) and below it on the
    /// whole (the value is less): "smaller where it can be, never larger".
    BelowSomewhereNeverAbove(f64),
    /// A reference point, not a goal: shown, never met or missed.
    Reference(f64),
}

/// The outcome of a goal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Reached.
    Met,
    /// Not reached.
    Missed,
    /// A reference point: nothing to reach.
    Reference,
}

impl Goal {
    /// The verdict for `value` (what the goal is judged on) whose worst case is `worst`.
    pub fn judge(self, value: f64, worst: f64) -> Verdict {
        let met = match self {
            Goal::AtMost(x) => value <= x,
            Goal::AtLeast(x) => value >= x,
            Goal::Within(lo, hi) => (lo..=hi).contains(&value),
            Goal::BelowSomewhereNeverAbove(x) => value < x && worst <= x,
            Goal::Reference(_) => return Verdict::Reference,
        };
        if met { Verdict::Met } else { Verdict::Missed }
    }

    /// The band a plot draws for the goal: `(lo, hi)`, either end open (`None`).
    pub fn band(self) -> (Option<f64>, Option<f64>) {
        match self {
            Goal::AtMost(x) | Goal::BelowSomewhereNeverAbove(x) => (None, Some(x)),
            Goal::AtLeast(x) => (Some(x), None),
            Goal::Within(lo, hi) => (Some(lo), Some(hi)),
            Goal::Reference(x) => (Some(x), Some(x)),
        }
    }
}

impl fmt::Display for Goal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Goal::AtMost(x) => write!(f, "<= {x}"),
            Goal::AtLeast(x) => write!(f, ">= {x}"),
            Goal::Within(lo, hi) => write!(f, "{lo}..{hi}"),
            Goal::BelowSomewhereNeverAbove(x) => write!(f, "< {x} on the whole, never above"),
            Goal::Reference(x) => write!(f, "reference ~{x}"),
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Met => "met",
            Verdict::Missed => "MISSED",
            Verdict::Reference => "reference",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        assert_eq!(Goal::AtMost(1.0).judge(1.0, 9.0), Verdict::Met);
        assert_eq!(Goal::AtMost(1.0).judge(1.077, 1.2), Verdict::Missed);
        assert_eq!(Goal::AtLeast(10.0).judge(9.9, 9.9), Verdict::Missed);
        assert_eq!(Goal::Within(0.99, 1.01).judge(1.0, 1.3), Verdict::Met);
        assert_eq!(Goal::Within(0.99, 1.01).judge(0.98, 1.0), Verdict::Missed);
        let g = Goal::BelowSomewhereNeverAbove(1.0);
        assert_eq!(g.judge(0.9, 1.0), Verdict::Met);
        assert_eq!(g.judge(0.9, 1.01), Verdict::Missed);
        assert_eq!(g.judge(1.0, 1.0), Verdict::Missed);
        assert_eq!(Goal::Reference(4.0).judge(3.0, 5.0), Verdict::Reference);
        assert_eq!(Goal::AtMost(0.286).to_string(), "<= 0.286");
    }
}
