//! The metrics endpoint's bounds (telemetry::serve): connections over the
//! limit get a 503 and are closed, a silent client is dropped after the
//! read timeout, a failure to read the counters reaches the client as a
//! bare 503 without its text, and other paths are 404.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dataplane_user::telemetry::serve::{serve, Limits, ServerStats};

/// Starts a server on a free port in a thread of its own; returns its
/// address and statistics.
fn start<F>(limits: Limits, render: F) -> (std::net::SocketAddr, Arc<ServerStats>)
where
    F: Fn() -> anyhow::Result<String> + Send + Sync + 'static,
{
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let addr = l.local_addr().unwrap();
    let stats = Arc::new(ServerStats::default());
    let s = stats.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            serve(l, limits, s, render).await
        })
    });
    (addr, stats)
}

/// The response to one request. Over the limit the server answers and
/// closes without reading the request, so sending it may fail (broken
/// pipe: the server's close arrived first); the answer, already received,
/// is still read, and the caller's assertions on it decide.
fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = c.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    out
}

fn limits() -> Limits {
    Limits {
        max_conns: 3,
        read_timeout: Duration::from_millis(400),
        write_timeout: Duration::from_millis(400),
        accept_backoff: Duration::from_millis(50),
    }
}

#[test]
fn serves_metrics_and_404s_the_rest() {
    let (addr, stats) = start(limits(), || Ok("dataplane_up 1\n".into()));
    let r = get(addr, "/metrics");
    assert!(
        r.starts_with("HTTP/1.1 200 OK") && r.ends_with("dataplane_up 1\n"),
        "{r}"
    );
    let r = get(addr, "/secret");
    assert!(r.starts_with("HTTP/1.1 404"), "{r}");
    assert_eq!(stats.served.load(Ordering::Relaxed), 2);
}

#[test]
fn connections_over_the_limit_get_503_and_idle_ones_time_out() {
    let (addr, stats) = start(limits(), || Ok("x 1\n".into()));
    // three silent clients hold every slot
    let idle: Vec<TcpStream> = (0..3).map(|_| TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(100));
    let r = get(addr, "/metrics");
    assert!(r.starts_with("HTTP/1.1 503") && r.contains("busy"), "{r}");
    assert!(stats.refused_busy.load(Ordering::Relaxed) >= 1);
    // the read timeout frees them: the server closes each silent client
    let t0 = Instant::now();
    for mut c in idle {
        c.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let mut b = [0u8; 16];
        assert_eq!(c.read(&mut b).unwrap(), 0, "a silent client was answered");
    }
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "silent clients held for {:?}",
        t0.elapsed()
    );
    assert_eq!(stats.timed_out.load(Ordering::Relaxed), 3);
    std::thread::sleep(Duration::from_millis(50));
    let r = get(addr, "/metrics");
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
}

#[test]
fn a_failure_is_a_bare_503_without_internal_text() {
    let (addr, stats) = start(limits(), || {
        anyhow::bail!("opening /sys/fs/bpf/dataplane/secret/PORT_COUNTERS: permission denied")
    });
    let r = get(addr, "/metrics");
    assert!(r.starts_with("HTTP/1.1 503"), "{r}");
    assert!(
        !r.contains("/sys/fs/bpf") && !r.contains("permission"),
        "internal text sent: {r}"
    );
    assert_eq!(stats.render_errors.load(Ordering::Relaxed), 1);
}

#[test]
fn a_slow_request_is_read_whole() {
    let (addr, _) = start(limits(), || Ok("y 2\n".into()));
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    for part in ["GET /met", "rics HTTP/1.1\r\n", "Host: x\r\n\r\n"] {
        c.write_all(part.as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    assert!(
        out.starts_with("HTTP/1.1 200") && out.ends_with("y 2\n"),
        "{out}"
    );
}
