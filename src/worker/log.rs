//! Writing structured log lines (see [`crate::log_line`], which builds them) to the Workers
//! console (`wrangler tail`, `wrangler dev`, Workers Logs), and counting them.

use worker::Env;

use super::metrics;
use crate::log_line::LogLine;

/// Writes `line` as one JSON line.
pub fn write(line: &LogLine) {
    worker::console_log!("{}", line.to_json());
}

/// Writes `line` and counts it in the metrics.
pub fn record(env: &Env, line: &LogLine) {
    write(line);
    metrics::count(env, line);
}
