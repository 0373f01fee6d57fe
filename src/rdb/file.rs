//! Whole RDB files (SAVE, BGSAVE, the load at start): Redis's file layout around the value
//! encodings of this module, so a `dump.rdb` moves between stmd and Redis 7.0 / 7.2 both ways.
//!
//! A file is `REDIS` and a 4-digit version, auxiliary fields, the function libraries, then per
//! database a `SELECTDB` opcode and its keys (`[EXPIRETIME_MS <8 bytes LE>] <type> <key> <value>`),
//! then `EOF` and the CRC64 of every byte before it (8 bytes LE; 0 means "not computed").

use super::decode::{read_value, RdbReader};
use super::encode::{encode_value_into, put_len, put_string};
use super::RDB_VERSION;
use crate::store::encoding::Limits;
use crate::store::Value;
use bytes::Bytes;
use crc::{Crc, Digest, CRC_64_REDIS};
use std::io::Write;

/// Redis's opcodes between the keys of a file.
mod opcode {
    /// Redis 7.4's per-slot key counts (cluster mode), a hint we do without.
    pub const SLOT_INFO: u8 = 0xF4;
    pub const FUNCTION_PRE_GA: u8 = 0xF6;
    pub const FUNCTION2: u8 = 0xF5;
    pub const MODULE_AUX: u8 = 0xF7;
    pub const IDLE: u8 = 0xF8;
    pub const FREQ: u8 = 0xF9;
    pub const AUX: u8 = 0xFA;
    pub const RESIZEDB: u8 = 0xFB;
    pub const EXPIRETIME_MS: u8 = 0xFC;
    pub const EXPIRETIME: u8 = 0xFD;
    pub const SELECTDB: u8 = 0xFE;
    pub const EOF: u8 = 0xFF;
}

/// The first version with a checksum after `EOF`.
const FIRST_CHECKSUMMED_VERSION: u16 = 5;

static FILE_CRC: Crc<u64> = Crc::<u64>::new(&CRC_64_REDIS);

/// Writes one file. Every call appends to a buffer; [`FileWriter::flush`] hands the buffer to the
/// output, so a caller can encode a shard under its lock and write it after letting go.
pub struct FileWriter<W: Write> {
    out: W,
    digest: Digest<'static, u64>,
    buffer: Vec<u8>,
    /// One key's value before it goes in, reused.
    value: Vec<u8>,
}

impl<W: Write> FileWriter<W> {
    /// Starts a file with the header and the auxiliary fields `aux` (name, value).
    pub fn new(out: W, aux: &[(&str, String)]) -> FileWriter<W> {
        let mut writer = FileWriter {
            out,
            digest: FILE_CRC.digest(),
            buffer: Vec::with_capacity(64 * 1024),
            value: Vec::new(),
        };
        writer
            .buffer
            .extend_from_slice(format!("REDIS{RDB_VERSION:04}").as_bytes());
        for (name, value) in aux {
            writer.buffer.push(opcode::AUX);
            put_string(&mut writer.buffer, name.as_bytes());
            put_string(&mut writer.buffer, value.as_bytes());
        }
        writer
    }

    /// One more auxiliary field with a binary value (before the functions and the keys).
    pub fn aux(&mut self, name: &str, value: &[u8]) {
        self.buffer.push(opcode::AUX);
        put_string(&mut self.buffer, name.as_bytes());
        put_string(&mut self.buffer, value);
    }

    /// A function library's code, as FUNCTION DUMP writes it.
    pub fn function(&mut self, code: &[u8]) {
        self.buffer.push(opcode::FUNCTION2);
        put_string(&mut self.buffer, code);
    }

    /// The keys that follow belong to database `db`.
    pub fn select_db(&mut self, db: usize) {
        self.buffer.push(opcode::SELECTDB);
        put_len(&mut self.buffer, db as u64);
    }

    /// One key: its expiry (Unix ms, 0 for none), then type, name and value.
    pub fn key(&mut self, name: &[u8], value: &Value, expire_at: u64) {
        if expire_at != 0 {
            self.buffer.push(opcode::EXPIRETIME_MS);
            self.buffer.extend_from_slice(&expire_at.to_le_bytes());
        }
        // The type byte comes before the name, the rest of the encoding after it.
        self.value.clear();
        encode_value_into(&mut self.value, value);
        let Some((kind, body)) = self.value.split_first() else {
            return;
        };
        self.buffer.push(*kind);
        put_string(&mut self.buffer, name);
        self.buffer.extend_from_slice(body);
    }

    /// Writes what the buffer holds.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.digest.update(&self.buffer);
        self.out.write_all(&self.buffer)?;
        self.buffer.clear();
        Ok(())
    }

    /// Ends the file (`EOF` and the checksum) and returns the output, flushed.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.buffer.push(opcode::EOF);
        self.flush()?;
        let crc = self.digest.finalize();
        self.out.write_all(&crc.to_le_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A list of byte strings as one auxiliary field's value: the count, then each string, in the
/// file's own length and string encodings.
pub fn encode_words(words: &[Bytes]) -> Vec<u8> {
    let mut out = Vec::new();
    put_len(&mut out, words.len() as u64);
    for word in words {
        put_string(&mut out, word);
    }
    out
}

/// The list [`encode_words`] wrote, or None when `value` is not one.
pub fn decode_words(value: &[u8]) -> Option<Vec<Bytes>> {
    let mut r = RdbReader::new(value);
    let count = r.len().ok()?;
    let mut words = Vec::new();
    for _ in 0..count {
        words.push(r.string().ok()?);
    }
    r.is_empty().then_some(words)
}

/// What a file holds, handed over as it is read.
pub trait FileSink {
    /// A key of database `db`, expiring at `expire_at` (Unix ms, 0 for never). An error stops
    /// the load with that message.
    fn key(&mut self, db: usize, name: Bytes, value: Value, expire_at: u64) -> Result<(), String>;
    /// A function library's code.
    fn function(&mut self, code: Bytes);
    /// An auxiliary field (Redis's own are ignored; Redis ignores the ones it does not know). An
    /// error stops the load with that message.
    fn aux(&mut self, _name: &[u8], _value: Bytes) -> Result<(), String> {
        Ok(())
    }
}

/// Reads a whole file into `sink`. The error says what is wrong and at which byte.
pub fn read_file(bytes: &[u8], limits: &Limits, sink: &mut impl FileSink) -> Result<(), String> {
    let header = bytes
        .get(..9)
        .filter(|h| h.starts_with(b"REDIS"))
        .ok_or("Wrong signature trying to load DB from file")?;
    let version: u16 = std::str::from_utf8(&header[5..])
        .ok()
        .and_then(|v| v.parse().ok())
        .ok_or("Wrong signature trying to load DB from file")?;
    if !(1..=super::MAX_READ_VERSION).contains(&version) {
        return Err(format!("Can't handle RDB format version {version}"));
    }
    let mut r = RdbReader::new(&bytes[9..]);
    let short = |r: &RdbReader<'_>| format!("Short read or bad data at byte {}", 9 + r.position());
    let (mut db, mut expire_at) = (0usize, 0u64);
    loop {
        let kind = r.byte().map_err(|_| short(&r))?;
        match kind {
            opcode::EOF => break,
            opcode::AUX => {
                let name = r.string().map_err(|_| short(&r))?;
                let value = r.string().map_err(|_| short(&r))?;
                sink.aux(&name, value)?;
            }
            opcode::RESIZEDB => {
                r.len().map_err(|_| short(&r))?;
                r.len().map_err(|_| short(&r))?;
            }
            opcode::SLOT_INFO => {
                for _ in 0..3 {
                    r.len().map_err(|_| short(&r))?;
                }
            }
            opcode::SELECTDB => {
                db = usize::try_from(r.len().map_err(|_| short(&r))?).unwrap_or(usize::MAX);
            }
            opcode::EXPIRETIME_MS => {
                let at = r.take(8).map_err(|_| short(&r))?;
                expire_at = u64::from_le_bytes(at.try_into().map_err(|_| short(&r))?);
            }
            opcode::EXPIRETIME => {
                let at = r.take(4).map_err(|_| short(&r))?;
                let secs = u32::from_le_bytes(at.try_into().map_err(|_| short(&r))?);
                expire_at = u64::from(secs) * 1000;
            }
            opcode::IDLE => {
                r.len().map_err(|_| short(&r))?;
            }
            opcode::FREQ => {
                r.byte().map_err(|_| short(&r))?;
            }
            opcode::FUNCTION2 => sink.function(r.string().map_err(|_| short(&r))?),
            opcode::FUNCTION_PRE_GA | opcode::MODULE_AUX => {
                return Err(format!(
                    "Unsupported record (opcode {kind}) at byte {}: modules and pre-release function records cannot be loaded",
                    8 + r.position()
                ));
            }
            _ => {
                let at = 8 + r.position();
                let name = r.string().map_err(|_| short(&r))?;
                let value = read_value(&mut r, kind, limits)
                    .map_err(|_| format!("Bad data format in the value of the key at byte {at}"))?;
                sink.key(db, name, value, std::mem::take(&mut expire_at))?;
            }
        }
    }
    if version >= FIRST_CHECKSUMMED_VERSION {
        let end = 9 + r.position();
        let stored = bytes
            .get(end..end + 8)
            .ok_or("Short read: the file ends before its checksum")?;
        let stored = u64::from_le_bytes(stored.try_into().map_err(|_| "Short read")?);
        if stored != 0 && !super::skip_checksum() && stored != FILE_CRC.checksum(&bytes[..end]) {
            return Err("Wrong RDB checksum. Aborting now.".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::CompactBytes;

    #[derive(Default)]
    struct Collected {
        keys: Vec<(usize, Bytes, Value, u64)>,
        functions: Vec<Bytes>,
    }

    impl FileSink for Collected {
        fn key(&mut self, db: usize, name: Bytes, value: Value, at: u64) -> Result<(), String> {
            self.keys.push((db, name, value, at));
            Ok(())
        }
        fn function(&mut self, code: Bytes) {
            self.functions.push(code);
        }
    }

    fn string(s: &str) -> Value {
        Value::Str(CompactBytes::from_vec(s.as_bytes().to_vec()))
    }

    fn file() -> Vec<u8> {
        let mut w = FileWriter::new(Vec::new(), &[("redis-ver", "7.2.4".into())]);
        w.function(b"#!lua name=lib\nredis.register_function('f', function() return 1 end)");
        w.select_db(0);
        w.key(b"plain", &string("v"), 0);
        w.flush().expect("to a vec");
        w.select_db(3);
        w.key(b"expiring", &string("12345"), 1_900_000_000_000);
        w.finish().expect("to a vec")
    }

    #[test]
    fn a_written_file_reads_back() {
        let bytes = file();
        assert!(bytes.starts_with(b"REDIS0010\xfa"));
        let mut got = Collected::default();
        read_file(&bytes, &Limits::default(), &mut got).expect("reads");
        assert_eq!(got.functions.len(), 1);
        let keys: Vec<_> = got
            .keys
            .iter()
            .map(|(db, name, value, at)| (*db, name.clone(), format!("{value:?}"), *at))
            .collect();
        assert_eq!(
            keys,
            vec![
                (0, Bytes::from("plain"), format!("{:?}", string("v")), 0),
                (
                    3,
                    Bytes::from("expiring"),
                    format!("{:?}", string("12345")),
                    1_900_000_000_000
                ),
            ]
        );
    }

    #[test]
    fn damage_is_refused_with_where() {
        let bytes = file();
        let mut flipped = bytes.clone();
        let at = flipped.len() - 12;
        flipped[at] ^= 0x20;
        let refused = read_file(&flipped, &Limits::default(), &mut Collected::default());
        assert!(refused.is_err(), "a changed byte is caught");
        let cut = read_file(
            &bytes[..bytes.len() - 20],
            &Limits::default(),
            &mut Collected::default(),
        );
        assert!(cut.expect_err("truncated").starts_with("Short read"));
        let mut newer = bytes.clone();
        newer[5..9].copy_from_slice(b"0013");
        assert_eq!(
            read_file(&newer, &Limits::default(), &mut Collected::default()),
            Err("Can't handle RDB format version 13".into())
        );
        assert!(read_file(b"NOTRDB", &Limits::default(), &mut Collected::default()).is_err());
    }

    #[test]
    fn a_zero_checksum_is_not_checked() {
        let mut bytes = file();
        let len = bytes.len();
        bytes[len - 8..].fill(0);
        read_file(&bytes, &Limits::default(), &mut Collected::default()).expect("rdbchecksum no");
    }
}
