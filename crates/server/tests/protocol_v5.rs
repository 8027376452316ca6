//! Protocol v5 against a real `mosaic server`, spoken raw: the handshake unsegmented, then
//! every frame in checksummed segments both ways (plain and LZ4), several frames in one
//! segment, frames larger than a segment, per-query keyspaces, result metadata ids,
//! events, and damaged segments refused with a protocol error before the connection closes.
//!
//! Segments are built and checked here with bitwise CRCs written from the spec (not the
//! server's table-driven ones), and LZ4 payloads with the hand-written codec of `common`.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

mod common;

use std::io::Read;

use common::{lz4_decompress, lz4_literals, put_string, startup_body, Frame, Node, Reader};
use mosaic_cql::frame::{error_code, Opcode};

/// Cassandra's CRC24 (`Crc.crc24`), bit by bit.
fn crc24(bytes: &[u8]) -> u32 {
    let mut crc: u32 = 0x87_5060;
    for &b in bytes {
        crc ^= u32::from(b) << 16;
        for _ in 0..8 {
            crc <<= 1;
            if crc & 0x100_0000 != 0 {
                crc ^= 0x197_4F0B;
            }
        }
    }
    crc
}

/// CRC-32 (IEEE, reflected), bit by bit, of Cassandra's seed bytes then `bytes`.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in [0xFA, 0x2D, 0x55, 0xCA].iter().chain(bytes) {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// One segment around `payload`: LZ4 (as literals) when `lz4`.
fn segment(payload: &[u8], self_contained: bool, lz4: bool) -> Vec<u8> {
    let (header_len, header, sent) = if lz4 {
        let block = lz4_literals(payload)[4..].to_vec();
        let mut h = block.len() as u64 | ((payload.len() as u64) << 17);
        if self_contained {
            h |= 1 << 34;
        }
        (5, h, block)
    } else {
        let mut h = payload.len() as u64;
        if self_contained {
            h |= 1 << 17;
        }
        (3, h, payload.to_vec())
    };
    let mut out = header.to_le_bytes()[..header_len].to_vec();
    let crc = crc24(&out);
    out.extend_from_slice(&crc.to_le_bytes()[..3]);
    out.extend_from_slice(&sent);
    out.extend_from_slice(&crc32(&sent).to_le_bytes());
    out
}

/// A v5 request frame.
fn frame(stream: i16, opcode: Opcode, body: &[u8]) -> Vec<u8> {
    let mut f = vec![0x05, 0x00];
    f.extend_from_slice(&stream.to_be_bytes());
    f.push(opcode.byte());
    f.extend_from_slice(&(body.len() as u32).to_be_bytes());
    f.extend_from_slice(body);
    f
}

/// A v5 QUERY body at ONE: `[int]` flags, with a keyspace (0x80) if given.
fn query_body(cql: &str, keyspace: Option<&str>) -> Vec<u8> {
    let mut b = (cql.len() as u32).to_be_bytes().to_vec();
    b.extend_from_slice(cql.as_bytes());
    b.extend_from_slice(&1u16.to_be_bytes());
    b.extend_from_slice(&(if keyspace.is_some() { 0x80u32 } else { 0 }).to_be_bytes());
    if let Some(k) = keyspace {
        put_string(&mut b, k);
    }
    b
}

/// A v5 connection past its handshake.
struct V5 {
    c: common::Conn,
    lz4: bool,
    /// Frame bytes received in segments and not yet returned.
    frames: Vec<u8>,
}

impl V5 {
    /// OPTIONS and STARTUP in plain v5 frames; READY comes back unsegmented.
    fn connect(node: &Node, lz4: bool) -> V5 {
        let mut c = node.connect();
        c.send_raw(&frame(1, Opcode::Options, &[]));
        let f = c.recv();
        assert_eq!((f.version, f.opcode, f.stream), (0x85, 0x06, 1));
        let mut options = vec![("CQL_VERSION", "3.0.0")];
        if lz4 {
            options.push(("COMPRESSION", "lz4"));
        }
        c.send_raw(&frame(2, Opcode::Startup, &startup_body(&options)));
        let f = c.recv();
        assert_eq!((f.version, f.opcode, f.stream), (0x85, 0x02, 2));
        V5 {
            c,
            lz4,
            frames: Vec::new(),
        }
    }

    fn read_exact(&mut self, n: usize) -> Vec<u8> {
        let mut buf = vec![0u8; n];
        let mut stream = Raw(&mut self.c);
        stream.read_exact(&mut buf).unwrap();
        buf
    }

    /// The next segment's payload and self-contained flag, checksums verified.
    fn recv_segment(&mut self) -> (Vec<u8>, bool) {
        let header_len = if self.lz4 { 5 } else { 3 };
        let header = self.read_exact(header_len + 3);
        let mut h = [0u8; 8];
        h[..header_len].copy_from_slice(&header[..header_len]);
        let h = u64::from_le_bytes(h);
        let mut crc = [0u8; 4];
        crc[..3].copy_from_slice(&header[header_len..]);
        assert_eq!(
            u32::from_le_bytes(crc),
            crc24(&header[..header_len]),
            "header CRC24"
        );
        let len = (h & 0x1_FFFF) as usize;
        let payload = self.read_exact(len);
        let trailer = self.read_exact(4);
        assert_eq!(
            u32::from_le_bytes(trailer.try_into().unwrap()),
            crc32(&payload),
            "payload CRC32"
        );
        if self.lz4 {
            let uncompressed = ((h >> 17) & 0x1_FFFF) as usize;
            let payload = if uncompressed == 0 {
                payload
            } else {
                let mut framed = (uncompressed as u32).to_be_bytes().to_vec();
                framed.extend_from_slice(&payload);
                lz4_decompress(&framed)
            };
            (payload, h & (1 << 34) != 0)
        } else {
            (payload, h & (1 << 17) != 0)
        }
    }

    /// The next frame, out of one or more segments.
    fn recv(&mut self) -> Frame {
        loop {
            if self.frames.len() >= 9 {
                let len = u32::from_be_bytes(self.frames[5..9].try_into().unwrap()) as usize;
                if self.frames.len() >= 9 + len {
                    let rest = self.frames.split_off(9 + len);
                    let f = std::mem::replace(&mut self.frames, rest);
                    assert_eq!(f[0], 0x85, "a v5 response");
                    assert_eq!(f[1] & 0x01, 0, "v5 frames are never compressed themselves");
                    return Frame {
                        version: f[0],
                        flags: f[1],
                        stream: i16::from_be_bytes([f[2], f[3]]),
                        opcode: f[4],
                        body: f[9..].to_vec(),
                    };
                }
            }
            let (payload, self_contained) = self.recv_segment();
            if self_contained {
                assert!(self.frames.is_empty(), "a self-contained segment mid-frame");
            }
            self.frames.extend_from_slice(&payload);
        }
    }

    /// Sends frames, all in one self-contained segment.
    fn send(&mut self, frames: &[Vec<u8>]) {
        let payload = frames.concat();
        self.c.send_raw(&segment(&payload, true, self.lz4));
    }

    fn query(&mut self, stream: i16, cql: &str, keyspace: Option<&str>) -> Frame {
        self.send(&[frame(stream, Opcode::Query, &query_body(cql, keyspace))]);
        let f = self.recv();
        assert_eq!(f.stream, stream, "{}", f.describe());
        f
    }

    fn exec(&mut self, cql: &str) {
        let f = self.query(1, cql, None);
        assert_eq!(f.opcode, 0x08, "{cql}: {}", f.describe());
    }
}

/// The raw socket of a connection.
struct Raw<'a>(&'a mut common::Conn);

impl Read for Raw<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read_raw(buf)
    }
}

/// PREPARE with a keyspace (flag 0x01): the statement id and result metadata id.
fn prepare(c: &mut V5, stream: i16, cql: &str, keyspace: &str) -> (Vec<u8>, Vec<u8>) {
    let mut body = (cql.len() as u32).to_be_bytes().to_vec();
    body.extend_from_slice(cql.as_bytes());
    body.extend_from_slice(&1u32.to_be_bytes());
    put_string(&mut body, keyspace);
    c.send(&[frame(stream, Opcode::Prepare, &body)]);
    let f = c.recv();
    assert_eq!(f.result_kind(), 4, "{}", f.describe());
    let mut r = Reader(&f.body[4..]);
    let n = r.short() as usize;
    let id = r.0[..n].to_vec();
    r.0 = &r.0[n..];
    let n = r.short() as usize;
    let metadata_id = r.0[..n].to_vec();
    (id, metadata_id)
}

/// EXECUTE of `id` with `metadata_id`, Skip_metadata set, no values.
fn execute(c: &mut V5, stream: i16, id: &[u8], metadata_id: &[u8]) -> Frame {
    let mut body = (id.len() as u16).to_be_bytes().to_vec();
    body.extend_from_slice(id);
    body.extend_from_slice(&(metadata_id.len() as u16).to_be_bytes());
    body.extend_from_slice(metadata_id);
    body.extend_from_slice(&1u16.to_be_bytes());
    body.extend_from_slice(&0x02u32.to_be_bytes());
    c.send(&[frame(stream, Opcode::Execute, &body)]);
    c.recv()
}

#[test]
fn v5_segments_carry_every_frame_after_the_handshake() {
    let node = Node::start("");
    let mut c = V5::connect(&node, false);
    c.exec("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    // A per-query keyspace resolves the unqualified table; the connection has none.
    let f = c.query(2, "CREATE TABLE t (k int PRIMARY KEY, v text)", Some("ks"));
    assert_eq!(f.result_kind(), 5, "{}", f.describe());
    let f = c.query(3, "INSERT INTO t (k, v) VALUES (1, 'one')", Some("ks"));
    assert_eq!(f.result_kind(), 1, "{}", f.describe());
    let f = c.query(4, "SELECT v FROM t WHERE k = 1", None);
    assert_eq!(
        f.error().0,
        error_code::INVALID,
        "no keyspace without the flag"
    );

    // Three requests in one segment: three answers, each on its stream.
    c.send(&[
        frame(
            5,
            Opcode::Query,
            &query_body("SELECT v FROM t WHERE k = 1", Some("ks")),
        ),
        frame(6, Opcode::Options, &[]),
        frame(
            7,
            Opcode::Query,
            &query_body("SELECT v FROM ks.t WHERE k = 2", None),
        ),
    ]);
    let mut answers: Vec<Frame> = (0..3).map(|_| c.recv()).collect();
    answers.sort_by_key(|f| f.stream);
    assert_eq!(answers[0].rows(), vec![vec![Some(b"one".to_vec())]]);
    assert_eq!(answers[1].opcode, 0x06);
    assert!(answers[2].rows().is_empty());

    // A prepared SELECT: a stale result metadata id gets Metadata_changed, the new id and
    // the columns; the current one honours Skip_metadata.
    let (id, metadata_id) = prepare(&mut c, 8, "SELECT v FROM t WHERE k = 1", "ks");
    assert_eq!(metadata_id.len(), 16);
    let f = execute(&mut c, 9, &id, &[0xEE; 16]);
    let mut r = Reader(&f.body[4..]);
    let flags = r.int();
    assert_eq!(
        flags & 0x0C,
        0x08,
        "Metadata_changed, not No_metadata: {flags:#x}"
    );
    assert_eq!(r.int(), 1);
    let n = r.short() as usize;
    assert_eq!(&r.0[..n], &metadata_id[..], "the id PREPARED gave");
    let f = execute(&mut c, 10, &id, &metadata_id);
    let mut r = Reader(&f.body[4..]);
    assert_eq!(r.int() & 0x0C, 0x04, "No_metadata");

    // Events come in segments too.
    c.send(&[frame(
        11,
        Opcode::Register,
        &common::register_body(&["SCHEMA_CHANGE"]),
    )]);
    assert_eq!(c.recv().opcode, 0x02);
    let mut other = V5::connect(&node, false);
    other.exec("CREATE TABLE ks.u (k int PRIMARY KEY)");
    let event = c.recv();
    assert_eq!(
        (event.opcode, event.stream),
        (0x0C, -1),
        "{}",
        event.describe()
    );
    let mut r = Reader(&event.body);
    assert_eq!(
        (r.string(), r.string(), r.string(), r.string(), r.string()),
        (
            "SCHEMA_CHANGE".into(),
            "CREATED".into(),
            "TABLE".into(),
            "ks".into(),
            "u".into()
        )
    );
}

#[test]
fn v5_frames_larger_than_a_segment_span_several_plain_and_lz4() {
    let node = Node::start("");
    for lz4 in [false, true] {
        let mut c = V5::connect(&node, lz4);
        let ks = if lz4 { "big_lz4" } else { "big" };
        c.exec(&format!(
            "CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}"
        ));
        c.exec(&format!("CREATE TABLE {ks}.t (k int PRIMARY KEY, v text)"));
        // A 300 KB INSERT cut into segments that are not self-contained.
        let value = "abcdefghij".repeat(30_000);
        let insert = frame(
            2,
            Opcode::Query,
            &query_body(
                &format!("INSERT INTO {ks}.t (k, v) VALUES (1, '{value}')"),
                None,
            ),
        );
        for chunk in insert.chunks(100_000) {
            c.c.send_raw(&segment(chunk, false, lz4));
        }
        let f = c.recv();
        assert_eq!((f.stream, f.result_kind()), (2, 1), "{}", f.describe());
        // Small requests go on in self-contained segments, and the 300 KB answer comes back
        // in several segments (LZ4 compresses each one).
        let f = c.query(3, &format!("SELECT v FROM {ks}.t WHERE k = 1"), None);
        assert_eq!(f.rows(), vec![vec![Some(value.clone().into_bytes())]]);
    }
}

#[test]
fn v5_damaged_segments_close_the_connection_with_a_protocol_error() {
    let node = Node::start("");
    let good = frame(3, Opcode::Options, &[]);
    for (what, damage) in [
        ("header CRC24", 4usize),
        ("payload", 8),
        ("payload CRC32", 6 + good.len() + 1),
    ] {
        let mut c = V5::connect(&node, false);
        let mut bytes = segment(&good, true, false);
        bytes[damage] ^= 0x40;
        c.c.send_raw(&bytes);
        let f = c.recv();
        assert_eq!(f.stream, 0, "{what}: {}", f.describe());
        let (code, message) = f.error();
        assert_eq!(code, error_code::PROTOCOL, "{what}");
        assert!(message.contains("CRC mismatch"), "{what}: {message}");
        assert!(c.c.is_closed(), "{what}: closed after the error");
    }
    // A self-contained segment that ends inside a frame.
    let mut c = V5::connect(&node, false);
    c.c.send_raw(&segment(&good[..5], true, false));
    let (code, message) = c.recv().error();
    assert_eq!(code, error_code::PROTOCOL);
    assert!(message.contains("ends inside a message"), "{message}");
    assert!(c.c.is_closed());
    // The node still serves v5 clients.
    let mut ok = V5::connect(&node, true);
    ok.send(&[good]);
    assert_eq!(ok.recv().opcode, 0x06);
}
