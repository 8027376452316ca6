//! Generated client sessions for fuzzing a live CQL listener (the server's
//! `tests/listener_fuzz.rs` drives a real `mosaic server` with them, over TCP and TLS).
//!
//! A [`Script`] is a few connections and an interleaving of their actions: bytes to send,
//! pauses to read what came back, closes. Each connection starts as a client would —
//! OPTIONS, STARTUP (v3, v4 or v5, maybe LZ4), the SASL PLAIN exchange — then sends
//! QUERY / PREPARE / EXECUTE / BATCH / REGISTER / OPTIONS requests; any frame may be
//! mutated (bit flips, truncation, a wrong stream id, opcode, version or flags, a length
//! that lies, a compression flag without compression, an LZ4 length that lies, trailing
//! bytes, a frame sent twice or in pieces), steps may be skipped (a QUERY before STARTUP,
//! no authentication), SASL tokens may be anything (random bytes, empty, null, huge, extra
//! NULs, a length that lies), and some connections send no CQL at all (random bytes, a
//! damaged TLS ClientHello, HTTP). On a v5 connection the frames after STARTUP travel in
//! segments, themselves maybe damaged; on a TLS connection a record may be damaged after
//! encryption ([`Action::SendDamaged`]).
//!
//! Generation is pure: one seed and one [`Context`] give the same script, so a failing
//! sequence replays from its seed. The generator knows nothing of the node's answers.

use bytes::BytesMut;
use mosaic_cql::frame::{
    encode_request_frame, encode_segment, Compression, FrameFlags, Opcode, ProtocolVersion,
    SEGMENT_PAYLOAD_MAX,
};
use mosaic_env::SplitMix64;

/// What a script may refer to on the node under test.
#[derive(Clone, Debug)]
pub struct Context {
    /// A role that may log in.
    pub user: String,
    /// Its password.
    pub password: String,
    /// Ids of statements prepared on the node, in the order of [`PREPARED`].
    pub prepared: Vec<Vec<u8>>,
    /// The first bytes a TLS client sends (its ClientHello), damaged into plaintext
    /// connections' bytes.
    pub client_hello: Vec<u8>,
}

/// The statements a harness prepares for [`Context::prepared`]: a write and a read of
/// `fuzz.t (k int PRIMARY KEY, v blob)`.
pub const PREPARED: [&str; 2] = [
    "INSERT INTO fuzz.t (k, v) VALUES (?, ?)",
    "SELECT k, v FROM fuzz.t WHERE k = ?",
];

/// Statements sent in QUERY, PREPARE and BATCH frames: reads and writes the fuzzing role
/// may do, and things it must be refused (writes to `checked`, DDL, role changes).
const STATEMENTS: [&str; 24] = [
    "SELECT release_version FROM system.local",
    "SELECT * FROM system.peers",
    "SELECT * FROM system_schema.tables",
    "SELECT k, v FROM fuzz.t WHERE k = ?",
    "INSERT INTO fuzz.t (k, v) VALUES (?, ?)",
    "INSERT INTO fuzz.t (k, v) VALUES (1, 0xff) USING TTL 100",
    "UPDATE fuzz.t SET v = ? WHERE k = ?",
    "DELETE FROM fuzz.t WHERE k = ?",
    "SELECT * FROM fuzz.t",
    "SELECT * FROM fuzz.t WHERE k IN (1, 2, 3, 4, 5)",
    "SELECT count(*) FROM fuzz.t",
    "INSERT INTO fuzz.t (k, v) VALUES (7, 0x00) IF NOT EXISTS",
    "USE fuzz",
    "SELECT * FROM checked.t",
    "INSERT INTO checked.t (k, v) VALUES (-1, 'forged')",
    "DELETE FROM checked.t WHERE k = 0",
    "TRUNCATE checked.t",
    "DROP KEYSPACE checked",
    "DROP TABLE fuzz.t",
    "CREATE TABLE fuzz.u (k int PRIMARY KEY)",
    "CREATE ROLE eve WITH PASSWORD = 'x' AND LOGIN = true AND SUPERUSER = true",
    "GRANT ALL PERMISSIONS ON KEYSPACE checked TO fuzzer",
    "LIST ROLES",
    "BEGIN BATCH INSERT INTO fuzz.t (k, v) VALUES (2, 0x01); INSERT INTO checked.t (k, v) VALUES (-2, 'x'); APPLY BATCH",
];

/// Words random CQL text is made of.
const WORDS: [&str; 24] = [
    "SELECT",
    "INSERT",
    "INTO",
    "FROM",
    "WHERE",
    "fuzz.t",
    "checked.t",
    "k",
    "v",
    "=",
    "?",
    "(",
    ")",
    ",",
    "'",
    "0x",
    "IN",
    "VALUES",
    "BATCH",
    "ROLE",
    "*",
    ";",
    "--",
    "token(k)",
];

/// One thing a script does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Bytes for the connection (inside TLS on a TLS connection).
    Send(Vec<u8>),
    /// Bytes whose TLS record is damaged after encryption: the bit at this position
    /// (modulo the record's length) is flipped. Sent as they are on a plaintext connection.
    SendDamaged(Vec<u8>, u64),
    /// Read what the node has sent, briefly.
    Drain,
    /// Close the connection; its later actions are skipped.
    Close,
}

/// How a connection reaches the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Plain TCP.
    Plain,
    /// TLS (the node's `[client_encryption]`).
    Tls,
}

/// Connections and the interleaving of their actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Script {
    /// Each connection's transport; actions name connections by index.
    pub transports: Vec<Transport>,
    /// The actions, in order: (connection, action).
    pub steps: Vec<(usize, Action)>,
}

/// At most this many connections per script.
const CONNECTIONS_MAX: u64 = 4;
/// At most this many requests per connection after its handshake.
const REQUESTS_MAX: u64 = 24;
/// How often (per million) a handshake frame is damaged: seldom, so that most
/// connections get past it and their requests reach the statement layer.
const HANDSHAKE_DAMAGE_PPM: u32 = 60_000;
/// How often (per million) a request frame is damaged.
const REQUEST_DAMAGE_PPM: u32 = 200_000;

/// The script of `seed`.
pub fn script(seed: u64, cx: &Context) -> Script {
    let mut rng = SplitMix64::new(seed);
    let count = rng.between(1, CONNECTIONS_MAX) as usize;
    let mut transports = Vec::with_capacity(count);
    let mut queues = Vec::with_capacity(count);
    for i in 0..count {
        let mut conn_rng = rng.fork(i as u64);
        let transport = if conn_rng.chance(400_000) {
            Transport::Tls
        } else {
            Transport::Plain
        };
        let actions = match conn_rng.below(10) {
            0 => not_cql(&mut conn_rng, cx),
            _ => Client::new(&mut conn_rng).session(&mut conn_rng, cx),
        };
        transports.push(transport);
        queues.push(actions.into_iter());
    }
    // Interleave: any connection's next action, each connection's actions in order.
    let mut steps = Vec::new();
    let mut queues: Vec<_> = queues.into_iter().map(Iterator::peekable).collect();
    loop {
        let live: Vec<usize> = (0..queues.len())
            .filter(|&i| queues.get_mut(i).is_some_and(|q| q.peek().is_some()))
            .collect();
        let Some(i) = rng.pick(&live) else { break };
        if let Some(action) = queues.get_mut(i).and_then(Iterator::next) {
            steps.push((i, action));
        }
    }
    Script { transports, steps }
}

/// `n` random bytes.
fn random_bytes(rng: &mut SplitMix64, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next_u64() as u8).collect()
}

/// A connection that sends no CQL: random bytes, a damaged ClientHello, HTTP, half a
/// header.
fn not_cql(rng: &mut SplitMix64, cx: &Context) -> Vec<Action> {
    let bytes = match rng.below(4) {
        0 => {
            let n = rng.below(4096) as usize;
            random_bytes(rng, n)
        }
        1 => {
            let mut hello = cx.client_hello.clone();
            flip_bits(rng, &mut hello);
            if rng.chance(300_000) {
                hello.truncate(rng.index(hello.len() + 1));
            }
            hello
        }
        2 => b"POST /flush HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n".to_vec(),
        _ => vec![0x04, 0x00, 0x00],
    };
    vec![Action::Send(bytes), Action::Drain, Action::Close]
}

/// Flips 1 to 8 random bits of `data`.
fn flip_bits(rng: &mut SplitMix64, data: &mut [u8]) {
    for _ in 0..rng.between(1, 8) {
        let i = rng.index(data.len());
        if let Some(b) = data.get_mut(i) {
            *b ^= 1 << rng.below(8);
        }
    }
}

/// What the generator believes of one connection.
struct Client {
    version: ProtocolVersion,
    /// LZ4 was asked for at STARTUP: v3/v4 bodies are compressed, v5 segments are.
    lz4: bool,
    /// Frames go in v5 segments (a v5 STARTUP went out undamaged).
    segments: bool,
    next_stream: i16,
    actions: Vec<Action>,
}

impl Client {
    fn new(rng: &mut SplitMix64) -> Client {
        let version = match rng.below(10) {
            0 => ProtocolVersion::V3,
            1..=6 => ProtocolVersion::V4,
            _ => ProtocolVersion::V5,
        };
        Client {
            version,
            lz4: false,
            segments: false,
            next_stream: 0,
            actions: Vec::new(),
        }
    }

    fn session(mut self, rng: &mut SplitMix64, cx: &Context) -> Vec<Action> {
        if rng.chance(300_000) {
            self.request(rng, Opcode::Options, Vec::new(), HANDSHAKE_DAMAGE_PPM);
        }
        if rng.chance(950_000) {
            self.startup(rng);
        }
        // The SASL exchange: zero or more hostile tokens, then (usually) the right one.
        for _ in 0..rng.below(3) {
            let token = hostile_token(rng, cx);
            self.request(rng, Opcode::AuthResponse, token, HANDSHAKE_DAMAGE_PPM);
        }
        if rng.chance(900_000) {
            let token = bytes_value(&format!("\0{}\0{}", cx.user, cx.password).into_bytes());
            self.request(rng, Opcode::AuthResponse, token, HANDSHAKE_DAMAGE_PPM);
        }
        for _ in 0..rng.below(REQUESTS_MAX + 1) {
            let (opcode, body) = self.any_request(rng, cx);
            self.request(rng, opcode, body, REQUEST_DAMAGE_PPM);
        }
        if rng.chance(500_000) {
            self.actions.push(Action::Drain);
        }
        if rng.chance(800_000) {
            self.actions.push(Action::Close);
        }
        self.actions
    }

    fn startup(&mut self, rng: &mut SplitMix64) {
        let mut options = vec![("CQL_VERSION", "3.0.0")];
        match rng.below(16) {
            0..=4 => options.push(("COMPRESSION", "lz4")),
            5 => options.push(("COMPRESSION", "snappy")),
            6 => options.push(("COMPRESSION", "zstd\0")),
            7 | 8 => options.push(("DRIVER_NAME", "mosaic-listener-fuzz")),
            _ => {}
        }
        let body = string_map(&options);
        let damaged = self.request(rng, Opcode::Startup, body, HANDSHAKE_DAMAGE_PPM);
        if !damaged {
            self.lz4 = options.contains(&("COMPRESSION", "lz4"));
            self.segments = self.version == ProtocolVersion::V5;
        }
    }

    /// Encodes, damages with probability `damage_ppm` (per million), and queues one
    /// request; whether it was damaged.
    fn request(
        &mut self,
        rng: &mut SplitMix64,
        opcode: Opcode,
        body: Vec<u8>,
        damage_ppm: u32,
    ) -> bool {
        let stream = self.next_stream;
        self.next_stream = self.next_stream.wrapping_add(1).max(0);
        // v3/v4 compress frame bodies; v5 compresses segments instead.
        let compress = self.lz4 && !self.segments && !body.is_empty();
        let body = if compress { lz4_body(&body) } else { body };
        let flags = FrameFlags(if compress { FrameFlags::COMPRESSION } else { 0 });
        let mut frame = BytesMut::new();
        if encode_request_frame(&mut frame, self.version, flags, stream, opcode, &body).is_err() {
            return true;
        }
        let mut frame = frame.to_vec();
        let damaged = rng.chance(damage_ppm);
        if damaged {
            damage_frame(rng, &mut frame, self.lz4);
        }
        let mut bytes = if self.segments {
            segments(&frame, self.lz4.then_some(Compression::Lz4))
        } else {
            frame
        };
        if self.segments && rng.chance(50_000) {
            flip_bits(rng, &mut bytes);
        }
        match rng.below(20) {
            // In two pieces, the node reading in between.
            0 => {
                let tail = bytes.split_off(rng.index(bytes.len() + 1));
                self.actions.push(Action::Send(bytes));
                self.actions.push(Action::Drain);
                self.actions.push(Action::Send(tail));
            }
            1 => {
                self.actions.push(Action::Send(bytes.clone()));
                self.actions.push(Action::Send(bytes));
            }
            2 => self
                .actions
                .push(Action::SendDamaged(bytes, rng.next_u64())),
            _ => self.actions.push(Action::Send(bytes)),
        }
        if rng.chance(200_000) {
            self.actions.push(Action::Drain);
        }
        damaged
    }

    fn any_request(&self, rng: &mut SplitMix64, cx: &Context) -> (Opcode, Vec<u8>) {
        let v5 = self.version == ProtocolVersion::V5;
        match rng.below(16) {
            0..=4 => {
                let mut body = long_string(&statement(rng));
                body.extend(query_parameters(rng, v5));
                (Opcode::Query, body)
            }
            5 | 6 => {
                let mut body = long_string(&statement(rng));
                if v5 {
                    body.extend(0u32.to_be_bytes());
                }
                (Opcode::Prepare, body)
            }
            7..=10 => {
                let known = cx.prepared.get(rng.index(cx.prepared.len())).cloned();
                let id = match known {
                    Some(id) if rng.chance(900_000) => id,
                    _ => random_bytes(rng, 16),
                };
                let mut body = short_bytes(&id);
                if v5 {
                    body.extend(short_bytes(&random_bytes(rng, 16)));
                }
                body.extend(query_parameters(rng, v5));
                (Opcode::Execute, body)
            }
            11 | 12 => (Opcode::Batch, batch(rng, cx, v5)),
            13 => {
                let events = [
                    "TOPOLOGY_CHANGE",
                    "STATUS_CHANGE",
                    "SCHEMA_CHANGE",
                    "NO_SUCH_EVENT",
                ];
                let chosen: Vec<(&str, &str)> = (0..rng.between(0, 3))
                    .filter_map(|_| rng.pick(&events))
                    .map(|e| (e, ""))
                    .collect();
                let mut body = (chosen.len() as u16).to_be_bytes().to_vec();
                for (e, _) in chosen {
                    body.extend(short_string(e));
                }
                (Opcode::Register, body)
            }
            14 => (Opcode::Options, Vec::new()),
            _ => {
                let token = hostile_token(rng, cx);
                (Opcode::AuthResponse, token)
            }
        }
    }
}

/// A statement of [`STATEMENTS`], or random CQL-ish text.
fn statement(rng: &mut SplitMix64) -> String {
    if rng.chance(850_000) {
        return rng.pick(&STATEMENTS).unwrap_or_default().to_owned();
    }
    (0..rng.between(1, 12))
        .filter_map(|_| rng.pick(&WORDS))
        .collect::<Vec<_>>()
        .join(" ")
}

/// QUERY/EXECUTE parameters: a consistency, flags and what they announce (v5: 4-byte flags).
fn query_parameters(rng: &mut SplitMix64, v5: bool) -> Vec<u8> {
    let mut out = Vec::new();
    let consistency: u16 = if rng.chance(900_000) {
        rng.below(11) as u16
    } else {
        rng.next_u64() as u16
    };
    out.extend(consistency.to_be_bytes());
    let mut flags = (rng.next_u64() & if v5 { 0x1ff } else { 0x7f }) as u32;
    if rng.chance(300_000) {
        flags &= 0x01;
    }
    if v5 {
        out.extend(flags.to_be_bytes());
    } else {
        out.push(flags as u8);
    }
    if flags & 0x01 != 0 {
        let n = rng.below(4) as u16;
        out.extend(n.to_be_bytes());
        for i in 0..n {
            if flags & 0x40 != 0 {
                out.extend(short_string(
                    ["k", "v", "x"].get(i as usize % 3).unwrap_or(&"k"),
                ));
            }
            out.extend(value(rng));
        }
    }
    if flags & 0x04 != 0 {
        let page: i32 = *[1, 2, 100, 5000, 0, -1, i32::MAX]
            .get(rng.index(7))
            .unwrap_or(&100);
        out.extend(page.to_be_bytes());
    }
    if flags & 0x08 != 0 {
        let n = rng.below(40) as usize;
        out.extend(bytes_value(&random_bytes(rng, n)));
    }
    if flags & 0x10 != 0 {
        out.extend([0x00, if rng.chance(500_000) { 0x08 } else { 0x09 }]);
    }
    if flags & 0x20 != 0 {
        out.extend((rng.next_u64() as i64).to_be_bytes());
    }
    if v5 && flags & 0x80 != 0 {
        out.extend(short_string("fuzz"));
    }
    if v5 && flags & 0x100 != 0 {
        out.extend((rng.next_u64() as i32).to_be_bytes());
    }
    out
}

/// A bound value: an int key, a blob, null, unset, or a length that lies.
fn value(rng: &mut SplitMix64) -> Vec<u8> {
    match rng.below(8) {
        0..=2 => bytes_value(&(rng.below(64) as i32).to_be_bytes()),
        3 => {
            let n = if rng.chance(50_000) {
                1 << 20
            } else {
                rng.below(200) as usize
            };
            bytes_value(&random_bytes(rng, n))
        }
        4 => (-1i32).to_be_bytes().to_vec(),
        5 => (-2i32).to_be_bytes().to_vec(),
        6 => {
            let mut v = (rng.between(5, 1 << 30) as i32).to_be_bytes().to_vec();
            v.extend([1, 2, 3]);
            v
        }
        _ => bytes_value(&random_bytes(rng, 3)),
    }
}

/// A BATCH body: a type, statements as text or prepared ids, parameters.
fn batch(rng: &mut SplitMix64, cx: &Context, v5: bool) -> Vec<u8> {
    let kind = if rng.chance(900_000) {
        rng.below(3) as u8
    } else {
        rng.next_u64() as u8
    };
    let n = if rng.chance(20_000) {
        2_000
    } else {
        rng.below(6) as u16
    };
    let mut out = vec![kind];
    out.extend(n.to_be_bytes());
    for _ in 0..n {
        let prepared = cx.prepared.get(rng.index(cx.prepared.len()));
        match prepared.filter(|_| rng.chance(500_000)) {
            Some(id) => {
                out.push(1);
                out.extend(short_bytes(id));
            }
            None => {
                out.push(0);
                out.extend(long_string(&statement(rng)));
            }
        }
        let values = rng.below(3) as u16;
        out.extend(values.to_be_bytes());
        for _ in 0..values {
            out.extend(value(rng));
        }
    }
    let mut params = query_parameters(rng, v5);
    // A batch's parameters have no values, page size or paging state; drop the flags
    // byte's meaning only sometimes, so both shapes reach the decoder.
    if rng.chance(700_000) {
        params.truncate(if v5 { 6 } else { 3 });
        if let Some(last) = params.last_mut() {
            *last &= 0x30;
        }
    }
    out.extend(params);
    out
}

/// A SASL token (an AUTH_RESPONSE body) that is not the right credentials, or is them
/// badly framed, or names a user made to forge log lines.
fn hostile_token(rng: &mut SplitMix64, cx: &Context) -> Vec<u8> {
    let (user, password) = (cx.user.as_bytes(), cx.password.as_bytes());
    let token: Vec<u8> = match rng.below(12) {
        0 => [b"\0", user, b"\0wrong-password"].concat(),
        1 => [b"\0cassandra\0", password].concat(),
        2 => Vec::new(),
        3 => return (-1i32).to_be_bytes().to_vec(),
        4 => {
            let n = rng.below(64) as usize;
            random_bytes(rng, n)
        }
        5 => vec![b'A'; rng.between(1 << 16, 3 << 20) as usize],
        6 => [b"\0\0", user, b"\0", password].concat(),
        7 => [b"\0", user, b"\0", password, b"\0"].concat(),
        8 => [user, b"\0", user, b"\0", password].concat(),
        9 => [b"\0\xff\xfe\0", password].concat(),
        // A user name that would write a line of its own into a log that printed it raw.
        10 => [b"\0", user, b"\nFORGED login of cassandra\r\0", password].concat(),
        _ => {
            // A length that claims more than follows.
            let mut t = (rng.between(1, i32::MAX as u64) as i32)
                .to_be_bytes()
                .to_vec();
            t.extend([b"\0", user, b"\0", password].concat());
            return t;
        }
    };
    bytes_value(&token)
}

/// Damages an encoded v3/v4/v5 frame (9-byte header, then the body).
fn damage_frame(rng: &mut SplitMix64, frame: &mut Vec<u8>, lz4: bool) {
    let set_len = |frame: &mut Vec<u8>, len: u32| {
        if let Some(h) = frame.get_mut(5..9) {
            h.copy_from_slice(&len.to_be_bytes());
        }
    };
    let set = |frame: &mut Vec<u8>, at: usize, b: u8| {
        if let Some(x) = frame.get_mut(at) {
            *x = b;
        }
    };
    match rng.below(11) {
        0 | 1 => flip_bits(rng, frame),
        2 => frame.truncate(rng.index(frame.len() + 1)),
        3 => {
            let stream = *[-1i16, i16::MIN, i16::MAX, 0]
                .get(rng.index(4))
                .unwrap_or(&-1);
            if let Some(s) = frame.get_mut(2..4) {
                s.copy_from_slice(&stream.to_be_bytes());
            }
        }
        4 => set(frame, 4, rng.next_u64() as u8),
        5 => {
            let len = frame.len().saturating_sub(9) as u64;
            let lie = match rng.below(4) {
                0 => len + rng.between(1, 64),
                1 => len.saturating_sub(rng.between(1, 8)),
                2 => u64::from(u32::MAX),
                _ => rng.between(1 << 20, 1 << 31),
            };
            set_len(frame, lie as u32);
        }
        6 => {
            let flags = frame.get(1).copied().unwrap_or(0);
            set(frame, 1, flags | FrameFlags::COMPRESSION);
        }
        7 if lz4 => {
            // A compressed body whose LZ4 length lies (up to 4 GiB), its block garbage.
            let mut body = (rng.next_u64() as u32).to_be_bytes().to_vec();
            let n = rng.below(64) as usize;
            body.extend(random_bytes(rng, n));
            frame.truncate(9);
            frame.extend(&body);
            set_len(frame, body.len() as u32);
        }
        8 => set(frame, 0, rng.next_u64() as u8),
        9 => set(frame, 1, rng.next_u64() as u8),
        _ => {
            let n = rng.between(1, 32) as usize;
            frame.extend(random_bytes(rng, n));
            let len = frame.len().saturating_sub(9);
            set_len(frame, len as u32);
        }
    }
}

/// `frame` in v5 segments: one self-contained segment, or pieces of a larger frame.
fn segments(frame: &[u8], compression: Option<Compression>) -> Vec<u8> {
    let mut out = BytesMut::new();
    let self_contained = frame.len() <= SEGMENT_PAYLOAD_MAX;
    for piece in frame.chunks(SEGMENT_PAYLOAD_MAX) {
        encode_segment(&mut out, piece, self_contained, compression);
    }
    if frame.is_empty() {
        encode_segment(&mut out, frame, true, compression);
    }
    out.to_vec()
}

/// A v3/v4 body compressed as Cassandra frames LZ4: the uncompressed length (big-endian),
/// then the block.
fn lz4_body(body: &[u8]) -> Vec<u8> {
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend(lz4_flex::block::compress(body));
    out
}

/// `[string map]`.
fn string_map(pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut out = (pairs.len() as u16).to_be_bytes().to_vec();
    for (k, v) in pairs {
        out.extend(short_string(k));
        out.extend(short_string(v));
    }
    out
}

/// `[string]`.
fn short_string(s: &str) -> Vec<u8> {
    short_bytes(s.as_bytes())
}

/// `[short bytes]`.
fn short_bytes(b: &[u8]) -> Vec<u8> {
    let mut out = (b.len() as u16).to_be_bytes().to_vec();
    out.extend(b);
    out
}

/// `[long string]`.
fn long_string(s: &str) -> Vec<u8> {
    bytes_value(s.as_bytes())
}

/// `[bytes]`.
fn bytes_value(b: &[u8]) -> Vec<u8> {
    let mut out = (b.len() as u32).to_be_bytes().to_vec();
    out.extend(b);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cx() -> Context {
        Context {
            user: "fuzzer".to_owned(),
            password: "pw".to_owned(),
            prepared: vec![vec![1; 16], vec![2; 16]],
            client_hello: vec![0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5],
        }
    }

    #[test]
    fn a_seed_gives_the_same_script_and_seeds_differ() {
        let cx = cx();
        assert_eq!(script(7, &cx), script(7, &cx));
        assert_ne!(script(7, &cx), script(8, &cx));
    }

    #[test]
    fn scripts_cover_tls_v5_damage_and_the_sasl_exchange() {
        let cx = cx();
        let (mut tls, mut damaged, mut auth, mut v5) = (0, 0, 0, 0);
        for seed in 0..100 {
            let s = script(seed, &cx);
            tls += s
                .transports
                .iter()
                .filter(|t| **t == Transport::Tls)
                .count();
            for (_, action) in &s.steps {
                match action {
                    Action::SendDamaged(..) => damaged += 1,
                    Action::Send(b) if b.get(4) == Some(&0x0F) => auth += 1,
                    Action::Send(b) if b.first() == Some(&0x05) => v5 += 1,
                    _ => {}
                }
            }
        }
        assert!(
            tls > 50 && damaged > 50 && auth > 100 && v5 > 20,
            "{tls} {damaged} {auth} {v5}"
        );
    }
}
