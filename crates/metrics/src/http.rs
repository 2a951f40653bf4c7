//! The metrics endpoint: HTTP/1.x `GET /metrics` on a TCP socket.
//!
//! Only what a Prometheus scraper needs, with bounds so that no client can
//! slow the router: each connection is served by a thread of its own (the
//! workers never wait for it), at most [`Limits::clients`] at once (more
//! are answered `503` and closed), a request head must arrive within
//! [`Limits::timeout`] and fit in [`Limits::max_request`] bytes, and every
//! connection carries one request (`Connection: close`). A hand-written
//! responder rather than an HTTP framework: one route, one method, and no
//! body to read.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bounds on what clients of the endpoint may cost.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections served at once.
    pub clients: usize,
    /// Time for a request head to arrive, and for the answer to be taken.
    pub timeout: Duration,
    /// The longest request head read.
    pub max_request: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            clients: 16,
            timeout: Duration::from_secs(2),
            max_request: 8192,
        }
    }
}

/// A running endpoint; it stops when dropped.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// The address it listens on (the port chosen when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The metrics text, made when a scrape asks for it.
pub type Source = Arc<dyn Fn() -> String + Send + Sync>;

/// Listens on `addr` and answers `GET /metrics` with what `source`
/// returns.
pub fn serve(addr: SocketAddr, limits: Limits, source: Source) -> std::io::Result<Server> {
    let listener = TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let busy = Arc::new(AtomicUsize::new(0));
    let s = stop.clone();
    let thread = std::thread::Builder::new()
        .name("bricks-metrics".into())
        .spawn(move || accept_loop(listener, limits, source, busy, s))?;
    Ok(Server {
        addr,
        stop,
        thread: Some(thread),
    })
}

fn accept_loop(
    listener: TcpListener,
    limits: Limits,
    source: Source,
    busy: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) {
    while !stop.load(Ordering::Relaxed) {
        let conn = match listener.accept() {
            Ok((c, _)) => c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(_) => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        let _ = conn.set_nonblocking(false);
        let _ = conn.set_write_timeout(Some(limits.timeout));
        if busy.fetch_add(1, Ordering::AcqRel) >= limits.clients {
            busy.fetch_sub(1, Ordering::AcqRel);
            let _ = respond(&conn, 503, "text/plain", "too many clients\n");
            continue;
        }
        let source = source.clone();
        let b = busy.clone();
        let spawned = std::thread::Builder::new()
            .name("bricks-metrics-conn".into())
            .spawn(move || {
                let _ = answer(conn, limits, &source);
                b.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            busy.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Reads one request head and answers it.
fn answer(mut conn: TcpStream, limits: Limits, source: &Source) -> std::io::Result<()> {
    let deadline = Instant::now() + limits.timeout;
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return respond(&conn, 408, "text/plain", "request timeout\n");
        }
        conn.set_read_timeout(Some(left))?;
        let n = match conn.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return respond(&conn, 408, "text/plain", "request timeout\n");
            }
            Err(e) => return Err(e),
        };
        head.extend_from_slice(&chunk[..n]);
        if head.len() > limits.max_request {
            return respond(&conn, 431, "text/plain", "request header too large\n");
        }
    }
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let (method, target, version) = (words.next(), words.next(), words.next());
    if !version.is_some_and(|v| v.starts_with("HTTP/1.")) {
        return respond(&conn, 400, "text/plain", "bad request\n");
    }
    if method != Some("GET") && method != Some("HEAD") {
        return respond(&conn, 405, "text/plain", "only GET\n");
    }
    let path = target.unwrap_or("/").split('?').next().unwrap_or("/");
    match path {
        "/metrics" => respond(
            &conn,
            200,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            &source(),
        ),
        "/" => respond(
            &conn,
            200,
            "text/plain",
            "bricks: the metrics are at /metrics\n",
        ),
        _ => respond(
            &conn,
            404,
            "text/plain",
            "not found; the metrics are at /metrics\n",
        ),
    }
}

fn respond(mut conn: &TcpStream, code: u16, ty: &str, body: &str) -> std::io::Result<()> {
    let reason = match code {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        _ => "Service Unavailable",
    };
    let head = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {ty}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    conn.write_all(head.as_bytes())?;
    conn.write_all(body.as_bytes())?;
    conn.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(addr: SocketAddr, request: &[u8]) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(request).unwrap();
        let mut out = String::new();
        let _ = c.read_to_string(&mut out);
        out
    }

    fn server(limits: Limits) -> Server {
        serve(
            "127.0.0.1:0".parse().unwrap(),
            limits,
            Arc::new(|| "bricks_up 1\n# EOF\n".to_string()),
        )
        .unwrap()
    }

    #[test]
    fn answers_get_metrics_and_refuses_the_rest() {
        let s = server(Limits::default());
        let a = s.local_addr();
        let ok = get(a, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.ends_with("\r\n\r\nbricks_up 1\n# EOF\n"), "{ok}");
        assert!(get(a, b"GET /nope HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(get(a, b"POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(get(a, b"garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
        let huge = vec![b'a'; 20_000];
        assert!(get(a, &huge).starts_with("HTTP/1.1 431"));
    }

    #[test]
    fn a_silent_client_is_timed_out_and_others_are_still_served() {
        let s = server(Limits {
            timeout: Duration::from_millis(300),
            ..Limits::default()
        });
        let a = s.local_addr();
        let mut silent = TcpStream::connect(a).unwrap();
        silent
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let ok = get(a, b"GET /metrics HTTP/1.0\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        let mut out = String::new();
        let _ = silent.read_to_string(&mut out);
        assert!(out.starts_with("HTTP/1.1 408"), "{out}");
    }

    #[test]
    fn clients_beyond_the_limit_are_turned_away() {
        let s = server(Limits {
            clients: 1,
            timeout: Duration::from_secs(3),
            ..Limits::default()
        });
        let a = s.local_addr();
        let _first = TcpStream::connect(a).unwrap();
        // The first holds the only slot until it times out.
        std::thread::sleep(Duration::from_millis(200));
        let second = get(a, b"GET /metrics HTTP/1.1\r\n\r\n");
        assert!(second.starts_with("HTTP/1.1 503"), "{second}");
    }
}
