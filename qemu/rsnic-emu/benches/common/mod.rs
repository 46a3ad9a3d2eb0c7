// SPDX-License-Identifier: GPL-2.0

//! What the card's benches share: how long each figure runs and how its
//! runs are summed up.

use std::time::Duration;

/// Time per figure: `RSNIC_BENCH_SECONDS`, default 2 s.
pub fn seconds() -> Duration {
    let s = std::env::var("RSNIC_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2.0);
    Duration::from_secs_f64(s)
}

/// Median, min and max of some runs.
pub fn spread(mut xs: Vec<f64>) -> (f64, f64, f64) {
    xs.sort_by(f64::total_cmp);
    (xs[xs.len() / 2], xs[0], xs[xs.len() - 1])
}
