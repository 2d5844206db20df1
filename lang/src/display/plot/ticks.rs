//! Where an axis gets its ticks: round numbers (1, 2 or 5 times a power of ten), never more
//! than fit their labels, and only integers on an index axis.

/// Tick positions in `[lo, hi]`, at most `max_count` of them (at least two when the range
/// allows), at multiples of a round step; `integer` keeps the step a whole number.
pub fn ticks(lo: f64, hi: f64, max_count: usize, integer: bool) -> Vec<f64> {
    if !(lo.is_finite() && hi.is_finite()) || hi <= lo {
        return vec![lo];
    }
    let max_count = max_count.max(2);
    let rough = (hi - lo) / (max_count - 1) as f64;
    let magnitude = 10f64.powf(rough.log10().floor());
    let mut step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|factor| factor * magnitude)
        .find(|&step| step >= rough)
        .unwrap_or(10.0 * magnitude);
    if integer {
        step = step.max(1.0).round();
    }
    let first = (lo / step).ceil();
    let last = (hi / step).floor();
    let n_ticks = (last - first) as i64 + 1;
    if n_ticks > max_count as i64 {
        // Rounding the step for integers can leave one tick too many; take every other.
        step *= 2.0;
    }
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// How many ticks fit along `length_px` when each label is `label_px` long and needs a gap
/// of `gap_px`.
pub fn fitting(length_px: f64, label_px: f64, gap_px: f64) -> usize {
    ((length_px / (label_px + gap_px)).floor() as usize).clamp(2, 12)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_steps() {
        assert_eq!(ticks(0.0, 10.0, 6, false), [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(-1.0, 1.0, 5, false), [-1.0, -0.5, 0.0, 0.5, 1.0]);
        assert_eq!(ticks(0.0, 3.0, 10, true), [0.0, 1.0, 2.0, 3.0]);
        assert_eq!(
            ticks(0.0, 999.0, 6, true),
            [0.0, 200.0, 400.0, 600.0, 800.0]
        );
        assert_eq!(ticks(2.0, 2.0, 5, false), [2.0]);
    }

    #[test]
    fn index_axes_get_integers_only() {
        for n in 1..200 {
            let ticks = ticks(0.0, n as f64, 8, true);
            assert!(
                ticks.iter().all(|tick| tick.fract() == 0.0),
                "{n}: {ticks:?}"
            );
            assert!(ticks.len() <= 8, "{n}: {ticks:?}");
        }
    }

    #[test]
    fn fitting_counts_the_labels_that_fit() {
        assert_eq!(fitting(500.0, 40.0, 10.0), 10);
        assert_eq!(fitting(499.0, 40.0, 10.0), 9);
        // At least two ticks (the ends), at most twelve.
        assert_eq!(fitting(30.0, 40.0, 10.0), 2);
        assert_eq!(fitting(0.0, 40.0, 10.0), 2);
        assert_eq!(fitting(10_000.0, 10.0, 10.0), 12);
        for length in (50..2000).step_by(37) {
            for label in (4..200).step_by(13) {
                let (length, label) = (f64::from(length), f64::from(label));
                let count = fitting(length, label, 18.0);
                assert!((2..=12).contains(&count));
                if count > 2 {
                    assert!(count as f64 * (label + 18.0) <= length, "{length} {label}");
                }
                if count < 12 {
                    assert!(
                        (count + 1) as f64 * (label + 18.0) > length,
                        "{length} {label}"
                    );
                }
            }
        }
    }

    #[test]
    fn fitted_ticks_are_a_label_and_a_gap_apart() {
        // Ticks chosen for `fitting`'s count lie at least a label and a gap apart along the
        // axis, so labels centred on them cannot overlap.
        let ranges = [
            (0.0, 1.0),
            (-3.7, 12.2),
            (0.0, 1e9),
            (0.0, 9999.0),
            (-1e-5, 7e-5),
        ];
        for (lo, hi) in ranges {
            for length in [120.0, 300.0, 550.0, 1600.0] {
                for label in [8.0, 30.0, 65.0] {
                    let count = fitting(length, label, 18.0);
                    for integer in [false, true] {
                        let ticks = ticks(lo, hi, count, integer);
                        for pair in ticks.windows(2) {
                            let apart = (pair[1] - pair[0]) / (hi - lo) * length;
                            assert!(
                                count == 2 || apart >= label + 18.0,
                                "{lo}..{hi} over {length} px, labels {label} px: {ticks:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn never_more_than_fit() {
        for (lo, hi) in [(0.0, 1.0), (-3.7, 12.2), (1e-9, 3e-9), (0.0, 123456.0)] {
            for max_count in 2..12 {
                assert!(
                    ticks(lo, hi, max_count, false).len() <= max_count,
                    "{lo} {hi} {max_count}"
                );
            }
        }
    }
}
