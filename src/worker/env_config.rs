//! Reading the configuration from the worker's vars and secrets.

use worker::Env;

use crate::config::{Config, ConfigProblem};

/// The configuration from `env` (vars, secrets, `.dev.vars` locally), or every problem in it.
pub fn config(env: &Env) -> Result<Config, Vec<ConfigProblem>> {
    Config::load(|key| {
        env.var(key)
            .map(|v| v.to_string())
            .or_else(|_| env.secret(key).map(|s| s.to_string()))
            .ok()
    })
}
