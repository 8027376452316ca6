//! What the admin endpoint admits: requests a web page cannot forge, and a bounded number at
//! once.
//!
//! The endpoint binds to loopback unless the operator says otherwise
//! (`crate::config::Config::admin_address`), which keeps other hosts out; these checks keep
//! out what runs on the operator's own machine on behalf of someone else — a web page in a
//! browser:
//!
//! - **DNS rebinding**: a page on `evil.example` whose name later resolves to 127.0.0.1 can
//!   send requests to the endpoint as a same-origin page, but its `Host` header still names
//!   `evil.example`. Only a `Host` that is an IP address or `localhost` (with any port) is
//!   admitted, so only clients that address the node by IP — the `mosaic` CLI, Prometheus,
//!   curl — get answers (421 Misdirected Request otherwise).
//! - **Cross-site requests**: a page can make a browser POST to any address (a form needs
//!   no CORS preflight), but the browser then sends an `Origin` header. Requests that change
//!   state (anything but GET and HEAD) carrying one are refused (403); the CLI never sends it.
//!   Reads need no such check: without CORS headers in the answer, the page cannot read it.
//! - **Load**: at most `[limits] admin_requests_max` requests run at once; more are answered
//!   503 at once instead of queueing (a repair holds its slot until it finishes).
//! - **Credentials**: with password authentication, a request that changes state needs a
//!   superuser's (checked in its slot, so password checks are bounded too; see
//!   [`super::login`]).

use std::sync::Arc;

use std::net::{Ipv4Addr, SocketAddr};

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use tokio::sync::Semaphore;

use super::login::AdminLogin;

/// The admission state shared by every request of one endpoint.
#[derive(Clone)]
pub struct Guard {
    slots: Arc<Semaphore>,
    slots_max: usize,
    login: Option<Arc<AdminLogin>>,
}

impl Guard {
    /// Admits at most `requests_max` requests at once (at least one); with `login`,
    /// requests that change state need a superuser's credentials.
    pub fn new(requests_max: usize, login: Option<Arc<AdminLogin>>) -> Guard {
        let slots_max = requests_max.max(1);
        Guard {
            slots: Arc::new(Semaphore::new(slots_max)),
            slots_max,
            login,
        }
    }
}

/// Whether a request may change state (anything but GET and HEAD).
fn changes_state(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD)
}

/// Why a request is not admitted: the status and the message.
pub fn refusal(method: &Method, headers: &HeaderMap) -> Option<(StatusCode, String)> {
    if let Some(host) = headers.get(header::HOST) {
        let host = host.to_str().unwrap_or("");
        if !host_is_an_address(host) {
            return Some((
                StatusCode::MISDIRECTED_REQUEST,
                format!(
                    "the admin endpoint answers requests addressed to an IP address or localhost, \
                     not to {host:?}"
                ),
            ));
        }
    }
    if changes_state(method) && headers.contains_key(header::ORIGIN) {
        return Some((
            StatusCode::FORBIDDEN,
            "the admin endpoint refuses requests that change state from a web page (an Origin \
             header was sent)"
                .to_owned(),
        ));
    }
    None
}

/// Whether a `Host` header names an IP address or `localhost`, with or without a port.
fn host_is_an_address(host: &str) -> bool {
    let port_ok = |port: &str| port.parse::<u16>().is_ok();
    if let Some(rest) = host.strip_prefix('[') {
        // `[v6]` or `[v6]:port`.
        let Some((name, after)) = rest.split_once(']') else {
            return false;
        };
        let port_fits = after.is_empty() || after.strip_prefix(':').is_some_and(port_ok);
        return port_fits && name.parse::<std::net::Ipv6Addr>().is_ok();
    }
    let name = match host.split_once(':') {
        // `v4:port` or `localhost:port`; a bare IPv6 address has several colons.
        Some((name, port)) if !port.contains(':') => {
            if !port_ok(port) {
                return false;
            }
            name
        }
        _ => host,
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok()
}

/// The middleware: refuses what [`refusal`] names, then takes one of the endpoint's slots
/// for the request's duration (503 when none is free), then checks the credentials of a
/// request that changes state when the node checks passwords.
pub async fn admit(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    if let Some((code, message)) = refusal(request.method(), request.headers()) {
        tracing::warn!(target: "mosaic::admin", method = %request.method(), uri = %request.uri(), %message, "admin request refused");
        return super::error(code, message);
    }
    let Ok(_slot) = guard.slots.clone().try_acquire_owned() else {
        return super::error(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the admin endpoint is serving {} requests already ([limits] admin_requests_max); \
                 try again later",
                guard.slots_max
            ),
        );
    };
    if let Some(login) = guard
        .login
        .as_ref()
        .filter(|_| changes_state(request.method()))
    {
        // Without the peer's address (a router driven in-process), failures share one bucket.
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map_or(SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)), |c| c.0);
        if let Err(answer) = login.admit(peer, request.headers()).await {
            return answer;
        }
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (name, value) in pairs {
            h.insert(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        h
    }

    #[tokio::test]
    async fn requests_beyond_the_limit_are_answered_503_at_once_not_queued() {
        use axum::body::Body;
        use tower::ServiceExt;

        let release = Arc::new(tokio::sync::Notify::new());
        let held = release.clone();
        let router = axum::Router::new()
            .route(
                "/hold",
                axum::routing::post(move || {
                    let held = held.clone();
                    async move { held.notified().await }
                }),
            )
            .route("/quick", axum::routing::get(|| async {}))
            .layer(axum::middleware::from_fn_with_state(
                Guard::new(1, None),
                admit,
            ));
        let request = |method: &str, path: &str| {
            Request::builder()
                .method(method)
                .uri(path)
                .header(header::HOST, "127.0.0.1")
                .body(Body::empty())
                .unwrap()
        };
        let holding = tokio::spawn(router.clone().oneshot(request("POST", "/hold")));
        // Until the held request has its slot, a quick one may still get it.
        let mut busy = None;
        for _ in 0..1000 {
            let answer = router
                .clone()
                .oneshot(request("GET", "/quick"))
                .await
                .unwrap();
            if answer.status() == StatusCode::SERVICE_UNAVAILABLE {
                busy = Some(answer);
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(
            busy.is_some(),
            "the second request waited or ran instead of a 503"
        );
        release.notify_one();
        assert_eq!(holding.await.unwrap().unwrap().status(), StatusCode::OK);
        let answer = router.oneshot(request("GET", "/quick")).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK, "the slot is free again");
    }

    #[test]
    fn hosts_must_be_addresses_or_localhost() {
        for ok in [
            "127.0.0.1",
            "127.0.0.1:7199",
            "10.1.2.3:80",
            "[::1]:7199",
            "[::1]",
            "::1",
            "localhost",
            "LOCALHOST:7199",
        ] {
            assert!(host_is_an_address(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:7199",
            "127.0.0.1.evil.example",
            "localhost.evil.example:80",
            "127.0.0.1:port",
            "",
            "[::1]:",
        ] {
            assert!(!host_is_an_address(bad), "{bad}");
        }
    }

    #[test]
    fn browsers_cannot_change_state_or_rebind_but_tools_can_do_anything() {
        let cli = headers(&[(header::HOST, "127.0.0.2:7199")]);
        for method in [Method::GET, Method::POST] {
            assert_eq!(refusal(&method, &cli), None);
        }
        // HTTP/1.0 without a Host header: not a browser.
        assert_eq!(refusal(&Method::POST, &HeaderMap::new()), None);
        let page = headers(&[
            (header::HOST, "127.0.0.1:7199"),
            (header::ORIGIN, "https://evil.example"),
        ]);
        assert_eq!(refusal(&Method::GET, &page), None, "reads are harmless");
        assert_eq!(
            refusal(&Method::POST, &page).map(|(code, _)| code),
            Some(StatusCode::FORBIDDEN)
        );
        let rebound = headers(&[(header::HOST, "evil.example:7199")]);
        for method in [Method::GET, Method::POST] {
            assert_eq!(
                refusal(&method, &rebound).map(|(code, _)| code),
                Some(StatusCode::MISDIRECTED_REQUEST)
            );
        }
    }
}
