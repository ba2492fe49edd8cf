//! The Prometheus endpoint's HTTP server: GET /metrics, hardened for a
//! switch's management network. At most [`Limits::max_conns`] connections
//! are served at once (more get a short 503 and are closed); a client has
//! [`Limits::read_timeout`] to send its request and [`Limits::write_timeout`]
//! to take the answer; accept errors (fd exhaustion, ...) are logged once a
//! second and retried after a pause, never in a busy loop; a failure to
//! read the counters is logged and the client gets a bare 503, no internal
//! error text.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The server's bounds.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_conns: usize,
    pub read_timeout: Duration,
    pub write_timeout: Duration,
    /// Pause after an accept error.
    pub accept_backoff: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_conns: 16,
            read_timeout: Duration::from_secs(5),
            write_timeout: Duration::from_secs(5),
            accept_backoff: Duration::from_millis(100),
        }
    }
}

/// What the server has done (for its tests and the log).
#[derive(Debug, Default)]
pub struct ServerStats {
    pub served: AtomicU64,
    pub refused_busy: AtomicU64,
    pub timed_out: AtomicU64,
    pub accept_errors: AtomicU64,
    pub render_errors: AtomicU64,
}

/// The longest request head read.
const MAX_REQUEST: usize = 2048;

/// Serves until the task is dropped. `render` produces the metrics text
/// (called per request, on a blocking thread).
pub async fn serve<F>(listener: TcpListener, limits: Limits, stats: Arc<ServerStats>, render: F)
where
    F: Fn() -> anyhow::Result<String> + Send + Sync + 'static,
{
    let render = Arc::new(render);
    let active = Arc::new(AtomicUsize::new(0));
    let mut last_logged: Option<std::time::Instant> = None;
    loop {
        let sock = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                let n = stats.accept_errors.fetch_add(1, Ordering::Relaxed) + 1;
                if last_logged.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                    crate::log::warn(&format!("metrics: accept failed ({n} so far): {e}"));
                    last_logged = Some(std::time::Instant::now());
                }
                tokio::time::sleep(limits.accept_backoff).await;
                continue;
            }
        };
        if active.fetch_add(1, Ordering::AcqRel) >= limits.max_conns {
            active.fetch_sub(1, Ordering::AcqRel);
            stats.refused_busy.fetch_add(1, Ordering::Relaxed);
            tokio::spawn(busy(sock, limits.write_timeout));
            continue;
        }
        let (active, stats, render) = (active.clone(), stats.clone(), render.clone());
        tokio::spawn(async move {
            answer(sock, limits, &stats, render).await;
            active.fetch_sub(1, Ordering::AcqRel);
        });
    }
}

/// Over the connection limit: a short 503, closed.
async fn busy(mut sock: TcpStream, write_timeout: Duration) {
    let resp = response("503 Service Unavailable", "text/plain", "busy\n");
    let _ = tokio::time::timeout(write_timeout, sock.write_all(resp.as_bytes())).await;
}

fn response(status: &str, ctype: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Reads the request head (until an empty line, [`MAX_REQUEST`] bytes or
/// the peer's end), within `timeout`.
async fn read_head(sock: &mut TcpStream, timeout: Duration) -> Option<Vec<u8>> {
    let mut buf = Vec::with_capacity(512);
    let read = async {
        let mut chunk = [0u8; 512];
        loop {
            let n = sock.read(&mut chunk).await.ok()?;
            if n == 0 {
                return Some(());
            }
            buf.extend_from_slice(&chunk[..n]);
            if buf.len() >= MAX_REQUEST || buf.windows(4).any(|w| w == b"\r\n\r\n") {
                return Some(());
            }
        }
    };
    tokio::time::timeout(timeout, read).await.ok()??;
    Some(buf)
}

async fn answer<F>(mut sock: TcpStream, limits: Limits, stats: &ServerStats, render: Arc<F>)
where
    F: Fn() -> anyhow::Result<String> + Send + Sync + 'static,
{
    let Some(head) = read_head(&mut sock, limits.read_timeout).await else {
        stats.timed_out.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let req = String::from_utf8_lossy(&head);
    let mut words = req.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let resp = if method == "GET" && (path == "/metrics" || path == "/") {
        let r = render.clone();
        match tokio::task::spawn_blocking(move || r()).await {
            Ok(Ok(body)) => response("200 OK", "text/plain; version=0.0.4", &body),
            Ok(Err(e)) => {
                stats.render_errors.fetch_add(1, Ordering::Relaxed);
                crate::log::warn(&format!("metrics: reading the counters failed: {e:#}"));
                response(
                    "503 Service Unavailable",
                    "text/plain",
                    "metrics unavailable\n",
                )
            }
            Err(_) => {
                stats.render_errors.fetch_add(1, Ordering::Relaxed);
                response(
                    "500 Internal Server Error",
                    "text/plain",
                    "metrics unavailable\n",
                )
            }
        }
    } else {
        response("404 Not Found", "text/plain", "GET /metrics\n")
    };
    match tokio::time::timeout(limits.write_timeout, sock.write_all(resp.as_bytes())).await {
        Ok(Ok(())) => {
            stats.served.fetch_add(1, Ordering::Relaxed);
        }
        _ => {
            stats.timed_out.fetch_add(1, Ordering::Relaxed);
        }
    }
}
