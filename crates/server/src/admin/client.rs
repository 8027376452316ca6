//! The admin endpoint's client half, over `ureq` (plain HTTP, blocking): what `mosaic
//! status`, `flush`, `compact`, `stats`, `repair` and `cluster up` use. Requests that
//! change state carry a role's credentials when the operator gave them ([`Login`]; a node
//! with password authentication needs a superuser's, see `super::login`).

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// How long connecting to a node may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a GET may take (the answers are small).
const GET_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a POST may take: flushing, compacting or repairing a node is long work.
const POST_TIMEOUT: Duration = Duration::from_secs(3600);
/// The largest answer read (`/stats` of a node with many tables).
const BODY_BYTES_MAX: u64 = 256 << 20;

/// A role's credentials, sent (HTTP Basic) with requests that change state.
#[derive(Clone)]
pub struct Login {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password: errors and logs may print this.
        write!(f, "Login({})", self.username)
    }
}

/// Sends `method path` to the admin endpoint at `addr`; the JSON answer of a 200.
fn request(addr: SocketAddr, method: &str, path: &str, timeout: Duration) -> Result<Value> {
    request_with(addr, method, path, timeout, None, None)
}

/// `POST path` with a text `body` as `login`, read as a `T`.
pub fn post_text_as<T: DeserializeOwned>(
    addr: SocketAddr,
    path: &str,
    body: &str,
    login: Option<&Login>,
) -> Result<T> {
    serde_json::from_value(request_with(
        addr,
        "POST",
        path,
        POST_TIMEOUT,
        Some(body),
        login,
    )?)
    .with_context(|| format!("{addr} answered {path} with an unexpected shape"))
}

fn request_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    timeout: Duration,
    body: Option<&str>,
    login: Option<&Login>,
) -> Result<Value> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_global(Some(timeout))
        // Error answers carry a JSON body worth showing: read them like any other.
        .http_status_as_error(false)
        .build()
        .into();
    let url = format!("http://{addr}{path}");
    let authorization = login.map(|l| super::login::basic_header(&l.username, &l.password));
    let sent = match (method, body) {
        ("POST", body) => {
            let mut post = agent.post(&url);
            if let Some(value) = &authorization {
                post = post.header("Authorization", value);
            }
            match body {
                Some(body) => post.send(body),
                None => post.send_empty(),
            }
        }
        _ => agent.get(&url).call(),
    };
    let mut response = sent.map_err(|e| match e {
        ureq::Error::Io(io) => {
            anyhow::Error::new(io).context(format!("connecting to the admin port {addr}"))
        }
        ureq::Error::Timeout(t) => anyhow::anyhow!("{addr} did not answer in time ({t})"),
        other => anyhow::Error::new(other).context(format!("asking the admin port {addr}")),
    })?;
    let status = response.status();
    let body = response
        .body_mut()
        .with_config()
        .limit(BODY_BYTES_MAX)
        .read_to_string()
        .with_context(|| format!("reading the answer of {addr}"))?;
    let value: Value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    if status == 401 && login.is_none() {
        bail!(
            "{addr} answered {status}: {value}; the node checks passwords: give a superuser \
             role with -u/--username (or MOSAIC_USERNAME) and its password in MOSAIC_PASSWORD \
             or --password-file"
        );
    }
    if status != 200 {
        bail!("{addr} answered {status}: {value}");
    }
    Ok(value)
}

/// `GET path` on the admin endpoint at `addr`, as JSON.
pub fn get(addr: SocketAddr, path: &str) -> Result<Value> {
    request(addr, "GET", path, GET_TIMEOUT)
}

/// `GET path` on the admin endpoint at `addr`, read as a `T`.
pub fn get_as<T: DeserializeOwned>(addr: SocketAddr, path: &str) -> Result<T> {
    serde_json::from_value(get(addr, path)?)
        .with_context(|| format!("{addr} answered {path} with an unexpected shape"))
}

/// `POST path` on the admin endpoint at `addr` as `login`, read as a `T` (operations may
/// take long).
pub fn post_as<T: DeserializeOwned>(
    addr: SocketAddr,
    path: &str,
    login: Option<&Login>,
) -> Result<T> {
    let value = request_with(addr, "POST", path, POST_TIMEOUT, None, login)?;
    serde_json::from_value(value)
        .with_context(|| format!("{addr} answered {path} with an unexpected shape"))
}
