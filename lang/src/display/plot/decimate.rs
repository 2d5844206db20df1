//! Fewer points for a curve than pixels can show: what keeps a 10⁶-point line's SVG small and
//! its PNG quick. Points that fall in the same pixel column, one after another, are replaced
//! by the first, lowest, highest and last of them (the M4 rule), which draws the same
//! picture. A curve breaks at non-finite points.

/// The runs of finite points of a curve, each thinned to at most four points per column of
/// `columns` across `[x_lo, x_hi]`.
pub fn segments(
    xs: &[f64],
    ys: &[f64],
    x_lo: f64,
    x_hi: f64,
    columns: usize,
) -> Vec<Vec<(f64, f64)>> {
    let column_of = |x: f64| (((x - x_lo) / (x_hi - x_lo)) * columns as f64).floor() as i64;
    let mut segments = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    // The points of the current column: first, lowest, highest, last.
    let mut bucket: Option<(i64, [(f64, f64); 4])> = None;
    let flush = |bucket: &mut Option<(i64, [(f64, f64); 4])>, current: &mut Vec<(f64, f64)>| {
        if let Some((_, [first, low, high, last])) = bucket.take() {
            let mut kept = vec![first];
            let (a, b) = if low.0 <= high.0 {
                (low, high)
            } else {
                (high, low)
            };
            for point in [a, b, last] {
                if kept.last() != Some(&point) {
                    kept.push(point);
                }
            }
            current.extend(kept);
        }
    };
    for (&x, &y) in xs.iter().zip(ys) {
        if !(x.is_finite() && y.is_finite()) {
            flush(&mut bucket, &mut current);
            if !current.is_empty() {
                segments.push(std::mem::take(&mut current));
            }
            continue;
        }
        let point = (x, y);
        let column = column_of(x);
        match &mut bucket {
            Some((at, [_, low, high, last])) if *at == column => {
                if y < low.1 {
                    *low = point;
                }
                if y > high.1 {
                    *high = point;
                }
                *last = point;
            }
            _ => {
                flush(&mut bucket, &mut current);
                bucket = Some((column, [point; 4]));
            }
        }
    }
    flush(&mut bucket, &mut current);
    if !current.is_empty() {
        segments.push(current);
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_million_points_become_a_few_per_column() {
        let xs: Vec<f64> = (0..1_000_000).map(|idx| idx as f64).collect();
        let ys: Vec<f64> = xs.iter().map(|x| (x * 0.37).sin()).collect();
        let segments = segments(&xs, &ys, 0.0, 999_999.0, 500);
        assert_eq!(segments.len(), 1);
        assert!(segments[0].len() <= 4 * 501, "{}", segments[0].len());
        // The extremes survive.
        let top = segments[0].iter().map(|p| p.1).fold(f64::MIN, f64::max);
        assert!(top > 0.9999);
    }

    #[test]
    fn short_curves_are_unchanged_and_break_at_nan() {
        let xs = [0.0, 1.0, 2.0, 3.0, 4.0];
        let ys = [1.0, 2.0, f64::NAN, 4.0, 5.0];
        assert_eq!(
            segments(&xs, &ys, 0.0, 4.0, 100),
            vec![vec![(0.0, 1.0), (1.0, 2.0)], vec![(3.0, 4.0), (4.0, 5.0)]]
        );
    }
}
