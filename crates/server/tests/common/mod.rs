//! Shared helpers of the server's process tests: a `mosaic server` child process that is
//! always stopped (a Drop guard), and a raw native-protocol connection with just enough
//! encoding and decoding to check frames byte by byte.
//!
//! Requests are built with `mosaic_cql::frame::encode_request_frame`; responses are
//! decoded here by hand (including LZ4 blocks), so the tests do not trust the server's
//! own encoder to check itself.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, dead_code)]
#![allow(clippy::disallowed_methods)] // Tests run real threads and measure real time; the seam binds the code under test.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use mosaic_cql::frame::{encode_request_frame, FrameFlags, Opcode, ProtocolVersion};

pub mod cluster;
pub mod tls;

/// How long any wait in these tests may take before it fails.
pub const WAIT: Duration = Duration::from_secs(60);
/// Pause between two checks of a polled condition.
const POLL: Duration = Duration::from_millis(20);

/// Polls `f` until it returns `Some`, failing the test after [`WAIT`].
pub fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(POLL);
    }
}

/// Runs the `mosaic` binary with `args`.
pub fn run_mosaic(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mosaic"))
        .args(args)
        .output()
        .unwrap()
}

/// A command's exit status and output, for assertion messages.
pub fn output_text(o: &Output) -> String {
    format!(
        "status {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Sends one HTTP/1.1 request (with `Connection: close`) and returns the whole answer:
/// status line, headers and body.
pub fn http_answer(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nConnection: close\r\nContent-Length: 0\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
}

/// Sends one HTTP/1.1 request and returns the status code and the body.
pub fn http(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let answer = http_answer(addr, method, path, headers);
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer}"));
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

/// An AUTH_RESPONSE body: a SASL PLAIN token for `user` and `password`.
pub fn plain(user: &str, password: &str) -> Vec<u8> {
    let token = format!("\0{user}\0{password}");
    let mut body = (token.len() as i32).to_be_bytes().to_vec();
    body.extend_from_slice(token.as_bytes());
    body
}

/// A port that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Sends `signal` to `pid`.
pub fn signal(pid: u32, signal: i32) {
    // SAFETY: kill has no memory-safety requirements.
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// Whether `path` (a LOCK file) can be locked right now, i.e. no process holds it.
pub fn lock_is_free(path: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    // SAFETY: flock on an owned descriptor; the lock is released when `f` closes.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// A `mosaic server` process on a free port with its own data directory; killed (SIGKILL)
/// when dropped if it is still running.
pub struct Node {
    pub child: Child,
    pub dir: PathBuf,
    pub config: PathBuf,
    pub addr: SocketAddr,
    _tmp: Option<tempfile::TempDir>,
}

impl Node {
    /// A node with default settings plus `extra` TOML (top-level keys or tables).
    pub fn start(extra: &str) -> Node {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let mut node = Node::start_in(&dir, extra);
        node._tmp = Some(tmp);
        node
    }

    /// A node whose config, data and log live in `dir` (reused if present).
    pub fn start_in(dir: &Path, extra: &str) -> Node {
        Node::start_probed(dir, extra, options_answered)
    }

    /// Like [`Node::start_in`], the node being up once `up(addr)` says so (a TLS-only
    /// node does not answer a plaintext OPTIONS).
    pub fn start_probed(dir: &Path, extra: &str, up: fn(SocketAddr) -> bool) -> Node {
        let config = dir.join("mosaic.toml");
        // A port that was free may be taken by the time the node binds it: try again.
        for _ in 0..5 {
            let port = free_port();
            std::fs::write(
                &config,
                format!(
                    "native_port = {port}\ndata_dir = \"data\"\nshutdown_timeout_ms = 20000\n{extra}\n"
                ),
            )
            .unwrap();
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("log"))
                .unwrap();
            let child = Command::new(env!("CARGO_BIN_EXE_mosaic"))
                .arg("server")
                .arg("--config")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap();
            let mut node = Node {
                child,
                dir: dir.to_path_buf(),
                config: config.clone(),
                addr: SocketAddr::from(([127, 0, 0, 1], port)),
                _tmp: None,
            };
            let up = wait_for("the node to answer OPTIONS or exit", || {
                if let Some(status) = node.child.try_wait().unwrap() {
                    return Some(Err(status));
                }
                up(node.addr).then_some(Ok(()))
            });
            match up {
                Ok(()) => return node,
                Err(status) if node.log().contains("binding the CQL port") => {
                    eprintln!("port {port} was taken ({status}); trying another");
                }
                Err(status) => panic!("node exited at start ({status}):\n{}", node.log()),
            }
        }
        panic!("no free port found");
    }

    /// The node's data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The node's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }

    /// A new connection to the node.
    pub fn connect(&self) -> Conn {
        Conn::connect(self.addr)
    }

    /// A new connection that has done STARTUP.
    pub fn ready(&self) -> Conn {
        let mut c = self.connect();
        c.startup(None);
        c
    }

    /// Waits (bounded) for the process to exit.
    pub fn wait_exit(&mut self) -> ExitStatus {
        wait_for("the node to exit", || self.child.try_wait().unwrap())
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A `mosaic cluster up` cluster in `dir`, stopped however the test ends: `cluster down`,
/// then SIGKILL to any node whose pid file is left.
pub struct LocalCluster {
    pub dir: PathBuf,
}

impl LocalCluster {
    /// `mosaic cluster up --nodes N` with these CQL, internode and admin ports and `extra`
    /// arguments.
    pub fn up(
        &self,
        nodes: u32,
        (port, storage, admin): (u16, u16, u16),
        extra: &[&str],
    ) -> Output {
        let (n, p, s, a) = (
            nodes.to_string(),
            port.to_string(),
            storage.to_string(),
            admin.to_string(),
        );
        let dir = self.dir.to_string_lossy().into_owned();
        let args = [
            "cluster",
            "up",
            "--nodes",
            &n,
            "--port",
            &p,
            "--storage-port",
            &s,
            "--admin-port",
            &a,
            "--dir",
            &dir,
        ];
        run_mosaic(&[&args[..], extra].concat())
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        let pid_files: Vec<PathBuf> = (1..=5)
            .map(|i| self.dir.join(format!("node{i}/pid")))
            .collect();
        let pids: Vec<Option<String>> = pid_files
            .iter()
            .map(|f| std::fs::read_to_string(f).ok())
            .collect();
        let dir = self.dir.to_string_lossy().into_owned();
        let _ = run_mosaic(&["cluster", "down", "--dir", &dir]);
        for (file, pid) in pid_files.iter().zip(pids) {
            if let Some(pid) = pid.and_then(|p| p.trim().parse::<u32>().ok()) {
                if file.exists() {
                    signal(pid, libc::SIGKILL);
                }
            }
        }
    }
}

/// Whether a node on `addr` answers OPTIONS with SUPPORTED.
pub fn options_answered(addr: SocketAddr) -> bool {
    let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) else {
        return false;
    };
    let mut c = Conn::from_stream(s);
    c.try_send(0, Opcode::Options, &[]).is_ok()
        && matches!(c.try_recv(), Ok(Some(f)) if f.opcode == Opcode::Supported.byte())
}

/// A response frame, body decompressed.
#[derive(Clone, Debug)]
pub struct Frame {
    pub version: u8,
    pub flags: u8,
    pub stream: i16,
    pub opcode: u8,
    pub body: Vec<u8>,
}

impl Frame {
    /// The code and message of an ERROR frame.
    pub fn error(&self) -> (i32, String) {
        assert_eq!(self.opcode, 0x00, "not an ERROR frame: {self:?}");
        let mut r = Reader(&self.body);
        (r.int(), r.string())
    }

    /// The RESULT kind.
    pub fn result_kind(&self) -> i32 {
        assert_eq!(
            self.opcode,
            0x08,
            "not a RESULT frame: {:?}",
            self.describe()
        );
        Reader(&self.body).int()
    }

    /// The rows of a Rows RESULT, each cell as bytes.
    pub fn rows(&self) -> Vec<Vec<Option<Vec<u8>>>> {
        assert_eq!(self.result_kind(), 2, "not Rows: {:?}", self.describe());
        let mut r = Reader(&self.body[4..]);
        let flags = r.int();
        let columns = r.int() as usize;
        if flags & 0x02 != 0 {
            r.bytes();
        }
        if flags & 0x04 == 0 {
            if flags & 0x01 != 0 {
                r.string();
                r.string();
            }
            for _ in 0..columns {
                if flags & 0x01 == 0 {
                    r.string();
                    r.string();
                }
                r.string();
                let ty = r.short();
                assert!(ty < 0x20, "only simple column types are decoded here");
            }
        }
        let count = r.int();
        (0..count)
            .map(|_| (0..columns).map(|_| r.bytes()).collect())
            .collect()
    }

    /// A readable summary, for assertion messages.
    pub fn describe(&self) -> String {
        if self.opcode == 0 {
            format!("ERROR on stream {}: {:?}", self.stream, self.error())
        } else {
            format!(
                "opcode {:#04x} on stream {} ({} body bytes)",
                self.opcode,
                self.stream,
                self.body.len()
            )
        }
    }
}

/// A cursor over a response body.
pub struct Reader<'a>(pub &'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
    pub fn int(&mut self) -> i32 {
        i32::from_be_bytes(self.take(4).try_into().unwrap())
    }
    pub fn short(&mut self) -> u16 {
        u16::from_be_bytes(self.take(2).try_into().unwrap())
    }
    pub fn string(&mut self) -> String {
        let n = self.short() as usize;
        String::from_utf8(self.take(n).to_vec()).unwrap()
    }
    pub fn string_list(&mut self) -> Vec<String> {
        let n = self.short();
        (0..n).map(|_| self.string()).collect()
    }
    pub fn string_multimap(&mut self) -> Vec<(String, Vec<String>)> {
        let n = self.short();
        (0..n)
            .map(|_| (self.string(), self.string_list()))
            .collect()
    }
    pub fn bytes(&mut self) -> Option<Vec<u8>> {
        let n = self.int();
        (n >= 0).then(|| self.take(n as usize).to_vec())
    }
}

/// `[string]`.
pub fn put_string(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// A STARTUP body.
pub fn startup_body(options: &[(&str, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&(options.len() as u16).to_be_bytes());
    for (k, v) in options {
        put_string(&mut b, k);
        put_string(&mut b, v);
    }
    b
}

/// A QUERY body at consistency ONE, no values.
pub fn query_body(cql: &str) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&(cql.len() as u32).to_be_bytes());
    b.extend_from_slice(cql.as_bytes());
    b.extend_from_slice(&1u16.to_be_bytes());
    b.push(0);
    b
}

/// A REGISTER body.
pub fn register_body(events: &[&str]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&(events.len() as u16).to_be_bytes());
    for e in events {
        put_string(&mut b, e);
    }
    b
}

/// An LZ4 block holding `data` as literals only (valid LZ4, no matches), in Cassandra's
/// framing: the uncompressed length, big-endian, first.
pub fn lz4_literals(data: &[u8]) -> Vec<u8> {
    let mut out = (data.len() as u32).to_be_bytes().to_vec();
    if data.len() < 15 {
        out.push((data.len() as u8) << 4);
    } else {
        out.push(0xF0);
        let mut rest = data.len() - 15;
        while rest >= 255 {
            out.push(255);
            rest -= 255;
        }
        out.push(rest as u8);
    }
    out.extend_from_slice(data);
    out
}

/// Decodes an LZ4 block in Cassandra's framing.
pub fn lz4_decompress(body: &[u8]) -> Vec<u8> {
    let len = u32::from_be_bytes(body[..4].try_into().unwrap()) as usize;
    let src = &body[4..];
    let mut out: Vec<u8> = Vec::with_capacity(len);
    let mut i = 0;
    let length = |src: &[u8], i: &mut usize, mut n: usize| {
        if n == 15 {
            loop {
                let b = src[*i];
                *i += 1;
                n += b as usize;
                if b != 255 {
                    break;
                }
            }
        }
        n
    };
    while i < src.len() {
        let token = src[i];
        i += 1;
        let lit = length(src, &mut i, (token >> 4) as usize);
        out.extend_from_slice(&src[i..i + lit]);
        i += lit;
        if i >= src.len() {
            break;
        }
        let offset = u16::from_le_bytes([src[i], src[i + 1]]) as usize;
        i += 2;
        let matched = length(src, &mut i, (token & 15) as usize) + 4;
        let start = out.len() - offset;
        for k in 0..matched {
            let b = out[start + k];
            out.push(b);
        }
    }
    assert_eq!(out.len(), len, "LZ4 block decompressed to the wrong length");
    out
}

/// A byte stream a [`Conn`] runs over: a TCP socket, or a TLS session on one.
pub trait Stream: Read + Write + Send {}

impl<T: Read + Write + Send> Stream for T {}

/// A raw native-protocol connection (v4 unless a test writes bytes itself).
pub struct Conn {
    s: Box<dyn Stream>,
    /// Whether LZ4 was negotiated: request bodies are compressed, responses decompressed.
    pub lz4: bool,
}

impl Conn {
    pub fn connect(addr: SocketAddr) -> Conn {
        Conn::from_stream(TcpStream::connect(addr).unwrap())
    }

    fn from_stream(s: TcpStream) -> Conn {
        s.set_read_timeout(Some(WAIT)).unwrap();
        s.set_nodelay(true).unwrap();
        Conn::over(s)
    }

    /// A connection over `s` (set up by the caller: a TLS session, say).
    pub fn over(s: impl Stream + 'static) -> Conn {
        Conn {
            s: Box::new(s),
            lz4: false,
        }
    }

    /// The bytes of a v4 request frame (compressed if LZ4 is on and the body not empty).
    pub fn frame(&self, stream: i16, opcode: Opcode, body: &[u8]) -> Vec<u8> {
        let mut out = BytesMut::new();
        let (flags, body) = if self.lz4 && !body.is_empty() {
            (FrameFlags(FrameFlags::COMPRESSION), lz4_literals(body))
        } else {
            (FrameFlags::default(), body.to_vec())
        };
        encode_request_frame(&mut out, ProtocolVersion::V4, flags, stream, opcode, &body).unwrap();
        out.to_vec()
    }

    pub fn send(&mut self, stream: i16, opcode: Opcode, body: &[u8]) {
        let f = self.frame(stream, opcode, body);
        self.send_raw(&f);
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).unwrap();
    }

    /// Sends a request, reporting a failed write instead of panicking.
    pub fn try_send(&mut self, stream: i16, opcode: Opcode, body: &[u8]) -> std::io::Result<()> {
        let f = self.frame(stream, opcode, body);
        self.s.write_all(&f)
    }

    /// Reads raw bytes (for frames in other header layouts).
    pub fn read_raw(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.s.read(buf)
    }

    /// The next frame; `Ok(None)` at a clean end of stream.
    pub fn try_recv(&mut self) -> std::io::Result<Option<Frame>> {
        let mut header = [0u8; 9];
        match self.s.read_exact(&mut header) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        let len = u32::from_be_bytes(header[5..9].try_into().unwrap()) as usize;
        let mut body = vec![0u8; len];
        self.s.read_exact(&mut body)?;
        let flags = header[1];
        if flags & 0x01 != 0 {
            assert!(
                self.lz4,
                "compressed frame on a connection without compression"
            );
            body = lz4_decompress(&body);
        }
        Ok(Some(Frame {
            version: header[0],
            flags,
            stream: i16::from_be_bytes([header[2], header[3]]),
            opcode: header[4],
            body,
        }))
    }

    pub fn recv(&mut self) -> Frame {
        self.try_recv().unwrap().expect("connection closed")
    }

    /// Whether the server closed the connection (end of stream or reset) without sending
    /// anything more.
    pub fn is_closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        match self.s.read(&mut b) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() == ErrorKind::ConnectionReset,
        }
    }

    /// STARTUP (with `COMPRESSION` if given); asserts READY.
    pub fn startup(&mut self, compression: Option<&str>) {
        let mut options = vec![("CQL_VERSION", "3.0.0")];
        if let Some(c) = compression {
            options.push(("COMPRESSION", c));
        }
        self.send(0, Opcode::Startup, &startup_body(&options));
        let f = self.recv();
        assert_eq!(f.opcode, Opcode::Ready.byte(), "{}", f.describe());
        assert_eq!(f.stream, 0);
        if compression.is_some() {
            self.lz4 = true;
        }
    }

    /// QUERY on `stream`; the response.
    pub fn query(&mut self, stream: i16, cql: &str) -> Frame {
        self.send(stream, Opcode::Query, &query_body(cql));
        let f = self.recv();
        assert_eq!(f.stream, stream, "{}", f.describe());
        f
    }

    /// QUERY that must succeed (any RESULT).
    pub fn exec(&mut self, cql: &str) -> Frame {
        let f = self.query(1, cql);
        assert_eq!(f.opcode, 0x08, "{cql}: {}", f.describe());
        f
    }
}
