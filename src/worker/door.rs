//! What every front door's adapter does, written once: time the request and write its one log
//! line and one metric; render an answer its rules decided.

use worker::{Env, Headers, Method, Response, Result};

use super::clock;
use super::log;
use crate::answer::{HttpAnswer, INTERNAL_ERROR};
use crate::log_line::{LogLine, Outcome, Route};

/// One request being served: its log line, filled in as it goes, and when it started.
pub struct Visit {
    started: u64,
    /// The request's log line.
    pub line: LogLine,
}

impl Visit {
    /// Starts serving a `method` request on `route`.
    pub fn start(route: Route, method: &Method) -> Visit {
        Visit {
            started: clock::now_ms(),
            line: LogLine {
                method: Some(method.to_string()),
                ..LogLine::new(route)
            },
        }
    }

    /// Finishes with `response`: records its status (raising the level for this service's own
    /// 4xx and 5xx) and the time taken, writes the log line and the metric, returns it.
    pub fn finish(mut self, env: &Env, response: Response) -> Response {
        self.line.answered(response.status_code());
        self.line.duration_ms = Some(clock::now_ms().saturating_sub(self.started));
        log::record(env, &self.line);
        response
    }

    /// Finishes with the rendered `answer` (see [`Visit::finish`]).
    pub fn answer(self, env: &Env, answer: HttpAnswer) -> Result<Response> {
        Ok(self.finish(env, render(answer)?))
    }
}

/// `answer` as the runtime's response.
pub fn render(answer: HttpAnswer) -> Result<Response> {
    let headers = Headers::new();
    for (name, value) in &answer.headers {
        headers.append(name, value)?;
    }
    let response = match answer.body {
        Some(bytes) => Response::from_bytes(bytes)?,
        None => Response::empty()?,
    };
    Ok(response.with_status(answer.status).with_headers(headers))
}

/// Answers `{ "error": code, "detail": detail }` with `status` (and `Allow` when given) to a
/// request on `route`, and writes its log line.
pub fn refuse(
    env: &Env,
    (route, method): (Route, &Method),
    (status, code, detail): (u16, &'static str, &str),
    allow: Option<&str>,
) -> Result<Response> {
    let mut visit = Visit::start(route, method);
    visit.line.outcome = Outcome::Refused(code);
    visit.line.detail = Some(detail.to_owned());
    let answer = HttpAnswer::error(status, code, detail).with_hints(None, allow);
    visit.answer(env, answer)
}

/// Answers a runtime error met while serving a request on `route`: 500 `internal_error` with a
/// fixed detail; the error's text (which can quote URLs, headers or values) goes to the log
/// line only.
pub fn internal_error(
    env: &Env,
    route: Route,
    method: &Method,
    error: &worker::Error,
) -> Result<Response> {
    let mut visit = Visit::start(route, method);
    visit.line.outcome = Outcome::Refused(INTERNAL_ERROR);
    visit.line.detail = Some(error.to_string());
    let detail = "an internal error; the service's log says more";
    visit.answer(env, HttpAnswer::error(500, INTERNAL_ERROR, detail))
}
