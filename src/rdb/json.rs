//! JSON documents as Redis writes a module value (type byte [`super::types::MODULE_2`]): the
//! module id of RedisJSON's type `ReJSON-RL` at encoding version 3, then, as RedisJSON 2.x writes
//! that version, the document's JSON text as one string field, then the end-of-value opcode.
//! Every field of a `MODULE_2` value is preceded by its opcode. Redis with RedisJSON loaded reads
//! these payloads (RedisJSON still loads version 3; it writes a binary version 4 itself, which
//! stmd does not read).

use super::decode::RdbReader;
use super::encode::{put_len, put_string};
use super::RdbError;
use crate::store::json::Doc;

/// The module type's name, nine characters of Redis's module-id alphabet.
const TYPE_NAME: &[u8; 9] = b"ReJSON-RL";
/// The encoding version written: the document as its JSON text.
const ENCVER_TEXT: u64 = 3;
/// Encoding version 2: the JSON text, then an unsigned count of search-index fields (two strings
/// each when present) that old RediSearch versions kept there.
const ENCVER_TEXT_AUX: u64 = 2;
/// Redis's `RDB_MODULE_OPCODE_*`.
const OPCODE_EOF: u64 = 0;
const OPCODE_UINT: u64 = 2;
const OPCODE_STRING: u64 = 5;

/// Redis's module id: the name's characters as 6-bit indexes into its alphabet, then 10 bits of
/// encoding version.
fn module_id(encver: u64) -> u64 {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let name = TYPE_NAME.iter().fold(0u64, |id, c| {
        let index = ALPHABET.iter().position(|a| a == c).unwrap_or(0) as u64;
        (id << 6) | index
    });
    (name << 10) | encver
}

pub fn encode(out: &mut Vec<u8>, doc: &Doc) {
    put_len(out, module_id(ENCVER_TEXT));
    put_len(out, OPCODE_STRING);
    put_string(out, doc.text());
    put_len(out, OPCODE_EOF);
}

pub fn decode(r: &mut RdbReader<'_>) -> Result<Doc, RdbError> {
    let id = r.len()?;
    if id >> 10 != module_id(0) >> 10 {
        return Err(RdbError::BadData);
    }
    let encver = id & 1023;
    if encver != ENCVER_TEXT && encver != ENCVER_TEXT_AUX {
        return Err(RdbError::BadData);
    }
    let text = string_field(r)?;
    if encver == ENCVER_TEXT_AUX {
        if r.len()? != OPCODE_UINT {
            return Err(RdbError::BadData);
        }
        if r.len()? > 0 {
            string_field(r)?;
            string_field(r)?;
        }
    }
    if r.len()? != OPCODE_EOF {
        return Err(RdbError::BadData);
    }
    Doc::parse(&text).map_err(|_| RdbError::BadData)
}

fn string_field(r: &mut RdbReader<'_>) -> Result<bytes::Bytes, RdbError> {
    if r.len()? != OPCODE_STRING {
        return Err(RdbError::BadData);
    }
    r.string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_id_is_redisjsons() {
        // The id Redis computes for "ReJSON-RL" at encoding version 3 (its name part is the
        // same for every version).
        assert_eq!(module_id(3) & 1023, 3);
        assert_eq!(module_id(3) >> 10, module_id(4) >> 10);
        assert_eq!(module_id(3), 0x45e2_5238_df91_2c03);
    }

    #[test]
    fn documents_round_trip() {
        let text = r#"{"b":[1,2.5,"x",null,true],"a":{}}"#;
        // A document held as its text, and one held as a tree, write the same payload.
        let from_text = Doc::parse(text.as_bytes()).unwrap();
        let tree: crate::store::json::Json = serde_json::from_str(text).unwrap();
        let (mut out, mut out_tree) = (Vec::new(), Vec::new());
        encode(&mut out, &from_text);
        encode(&mut out_tree, &Doc::from(tree));
        assert_eq!(out, out_tree);
        let back = decode(&mut RdbReader::new(&out)).unwrap();
        assert_eq!(serde_json::to_string(back.tree()).unwrap(), text);
    }
}
