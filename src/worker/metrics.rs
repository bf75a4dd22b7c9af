//! Counters per outcome in Workers Analytics Engine, when its `METRICS` binding is configured.

use worker::{AnalyticsEngineDataPointBuilder, Env};

use crate::log_line::LogLine;

/// The binding name of the optional Analytics Engine dataset.
pub const BINDING: &str = "METRICS";

/// Writes `line`'s data point (see [`LogLine::data_point`]). Without the binding it does
/// nothing, and a failed write is ignored: metrics never change an answer.
pub fn count(env: &Env, line: &LogLine) {
    let Ok(dataset) = env.analytics_engine(BINDING) else {
        return;
    };
    let point = line.data_point();
    let _ = AnalyticsEngineDataPointBuilder::new()
        .indexes([point.index])
        .blobs(point.blobs)
        .doubles(point.doubles)
        .write_to(&dataset);
}
