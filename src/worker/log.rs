//! Writing structured log lines (see [`crate::log_line`], which builds them) to the Workers
//! console (`wrangler tail`, `wrangler dev`, Workers Logs), and counting them in Workers
//! Analytics Engine when its `METRICS` binding is configured.

use worker::{AnalyticsEngineDataPointBuilder, Env};

use crate::log_line::LogLine;

/// Writes `line` as one JSON line.
pub fn write(line: &LogLine) {
    worker::console_log!("{}", line.to_json());
}

/// Writes `line` and writes its data point (see [`LogLine::data_point`]) to the `METRICS`
/// dataset. Without the binding nothing is counted, and a failed write is ignored: metrics
/// never change an answer.
pub fn record(env: &Env, line: &LogLine) {
    write(line);
    let Ok(dataset) = env.analytics_engine("METRICS") else {
        return;
    };
    let point = line.data_point();
    let _ = AnalyticsEngineDataPointBuilder::new()
        .indexes([point.index])
        .blobs(point.blobs)
        .doubles(point.doubles)
        .write_to(&dataset);
}
