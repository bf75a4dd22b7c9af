//! Reading the configuration from the worker's vars and secrets, once per isolate.

use std::cell::OnceCell;
use std::rc::Rc;

use worker::Env;

use crate::config::{self, Config, ConfigProblem};
use crate::secret::Secret;

/// The configuration of this isolate, or every problem in it; shared, never copied per request.
pub type Loaded = Result<Rc<Config>, Rc<[ConfigProblem]>>;

thread_local! {
    static LOADED: OnceCell<Loaded> = const { OnceCell::new() };
}

/// The configuration from `env` (vars, secrets, `.dev.vars` locally), or every problem in it.
///
/// Read and checked on the first request of an isolate and kept: vars and secrets cannot
/// change within one (changing a secret deploys a new version, which starts new isolates).
pub fn config(env: &Env) -> Loaded {
    LOADED.with(|loaded| loaded.get_or_init(|| load(env)).clone())
}

/// The usable admin token: the loaded configuration's, or while it has problems, the token
/// read alone (see [`config::admin_token`]).
pub fn admin_token(env: &Env, loaded: &Loaded) -> Option<Secret> {
    match loaded {
        Ok(config) => config.admin.token.clone(),
        Err(_) => config::admin_token(|key| lookup(env, key)),
    }
}

fn load(env: &Env) -> Loaded {
    Config::load(|key| lookup(env, key))
        .map(Rc::new)
        .map_err(Rc::from)
}

/// `key`'s value (see [`config::var_or_secret`]).
fn lookup(env: &Env, key: &str) -> Option<String> {
    let var = env.var(key).map(|var| var.to_string()).ok();
    config::var_or_secret(var, || env.secret(key).map(|s| s.to_string()).ok())
}
