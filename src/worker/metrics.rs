//! Counters per outcome in Workers Analytics Engine, when its `METRICS` binding is configured.

use worker::{AnalyticsEngineDataPointBuilder, Env};

use crate::log_line::LogLine;

/// The binding name of the optional Analytics Engine dataset.
pub const BINDING: &str = "METRICS";

/// Writes one data point for `line`: index = route; blobs = route, outcome, settle step, event
/// type or method, provider; doubles = 1 (the count), status, duration in ms, origin time in ms.
/// Without the binding it does nothing, and a failed write is ignored: metrics never change
/// an answer.
pub fn count(env: &Env, line: &LogLine) {
    let Ok(dataset) = env.analytics_engine(BINDING) else {
        return;
    };
    let _ = AnalyticsEngineDataPointBuilder::new()
        .indexes([line.route.word()])
        .blobs([
            line.route.word(),
            line.outcome.word(),
            line.settle.map_or("", |step| step.word()),
            line.event_type
                .as_deref()
                .or(line.method.as_deref())
                .unwrap_or(""),
            line.provider.map_or("", |p| p.name()),
        ])
        .doubles([
            1.0,
            f64::from(line.status.unwrap_or(0)),
            line.duration_ms.unwrap_or(0) as f64,
            line.origin_ms.unwrap_or(0) as f64,
        ])
        .write_to(&dataset);
}
