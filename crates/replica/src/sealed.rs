//! Small files of the coding state: crc-checked text files (`DIR/CODED`, `DIR/LINEAGE`: a
//! header line, one line per fact, and a last line with the crc32c of everything before
//! it), and offload stubs (parity shards and coded tables in the cold tier).

/// `text` (lines, each ending in a newline) followed by its crc32c line.
pub fn seal(mut text: String) -> Vec<u8> {
    let crc = crc32c::crc32c(text.as_bytes());
    text.push_str(&format!("crc {crc:08x}\n"));
    text.into_bytes()
}

/// The lines after the `header` line of a [`seal`]ed file, once its checksum matched.
pub fn unseal<'a>(bytes: &'a [u8], header: &str) -> std::result::Result<&'a str, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8")?;
    let body_end = text
        .trim_end_matches('\n')
        .rfind('\n')
        .map(|i| i + 1)
        .ok_or("no checksum line")?;
    let (body, crc_line) = text.split_at(body_end);
    let crc = crc_line
        .trim()
        .strip_prefix("crc ")
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or("bad checksum line")?;
    if crc32c::crc32c(body.as_bytes()) != crc {
        return Err("checksum mismatch".into());
    }
    body.strip_prefix(header)
        .and_then(|rest| rest.strip_prefix('\n'))
        .ok_or_else(|| "unknown format".into())
}

pub fn hex(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "-".to_owned();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if text == "-" {
        return Some(Vec::new());
    }
    if !text.len().is_multiple_of(2) || !text.is_ascii() {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// An offload stub: the cold-tier object holding a file's bytes (`location`) and their
/// length. Written atomically, it stands for the local file it replaces.
pub fn stub(location: &str, len: u64) -> Vec<u8> {
    format!("{location}\n{len}\n").into_bytes()
}

/// The bytes of `path`, `None` when it does not exist.
pub fn read_optional(
    fs: &dyn mosaic_lsm::Fs,
    path: &std::path::Path,
) -> mosaic_lsm::Result<Option<Vec<u8>>> {
    if !fs.exists(path) {
        return Ok(None);
    }
    fs.read_all(path)
        .map(Some)
        .map_err(|e| mosaic_lsm::Error::io("reading", path, e))
}

/// The [`stub`] at `path`, `None` when there is none.
pub fn read_stub(
    fs: &dyn mosaic_lsm::Fs,
    path: &std::path::Path,
) -> mosaic_lsm::Result<Option<(String, u64)>> {
    let Some(bytes) = read_optional(fs, path)? else {
        return Ok(None);
    };
    parse_stub(&bytes)
        .map(Some)
        .map_err(|why| mosaic_lsm::Error::corruption(path, 0, why))
}

/// `(location, length)` of a [`stub`].
pub fn parse_stub(bytes: &[u8]) -> std::result::Result<(String, u64), String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8")?;
    let mut lines = text.lines();
    let location = lines.next().unwrap_or_default().to_owned();
    match lines.next().and_then(|l| l.parse().ok()) {
        Some(len) if !location.is_empty() => Ok((location, len)),
        _ => Err("not an offload stub".into()),
    }
}
