//! The metrics server under fd exhaustion: accept fails with EMFILE while
//! clients keep connecting; the server logs, pauses and retries instead of
//! spinning (its CPU time stays small), and serves again once fds are
//! free. Its own test binary: it lowers this process's fd limit.

use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use dataplane_user::telemetry::serve::{serve, Limits, ServerStats};

fn cpu_time() -> Duration {
    // SAFETY: getrusage fills the zeroed struct.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| Duration::new(v.tv_sec as u64, v.tv_usec as u32 * 1000);
    t(u.ru_utime) + t(u.ru_stime)
}

#[test]
fn accept_errors_do_not_spin() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let addr = l.local_addr().unwrap();
    let stats = Arc::new(ServerStats::default());
    let s = stats.clone();
    let limits = Limits {
        max_conns: 4,
        read_timeout: Duration::from_millis(300),
        write_timeout: Duration::from_millis(300),
        accept_backoff: Duration::from_millis(100),
    };
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(l).unwrap();
            serve(l, limits, s, || Ok("z 1\n".into())).await
        })
    });
    std::thread::sleep(Duration::from_millis(100));
    // use up the fd table: limit = open fds now + a few
    let open = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
    let lim = libc::rlimit {
        rlim_cur: open + 6,
        rlim_max: 4096.max(open + 6),
    };
    let mut old: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: get/set this process's own limit.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut old);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &lim), 0);
    }
    let mut held = Vec::new();
    while let Ok(c) = TcpStream::connect(addr) {
        held.push(c);
        if held.len() > 64 {
            break;
        }
    }
    // connections in the backlog the server cannot accept (no fd)
    std::thread::sleep(Duration::from_millis(200));
    let c0 = cpu_time();
    std::thread::sleep(Duration::from_millis(1000));
    let used = cpu_time() - c0;
    let errors = stats.accept_errors.load(Ordering::Relaxed);
    drop(held);
    // SAFETY: restore the limit.
    unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &old) };
    assert!(
        errors > 0,
        "accept never failed: the test did not exhaust the fds"
    );
    assert!(errors < 40, "{errors} accept errors in ~1.2 s: no backoff");
    assert!(
        used < Duration::from_millis(300),
        "the server used {used:?} of CPU in 1 s of accept errors"
    );
    // serves again
    std::thread::sleep(Duration::from_millis(800));
    let mut c = TcpStream::connect(addr).unwrap();
    use std::io::{Read, Write};
    c.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    c.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = c.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
}
