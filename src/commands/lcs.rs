//! LCS: the longest common subsequence of two string values, with Redis 7's options (LEN, IDX,
//! MINMATCHLEN, WITHMATCHLEN), reply shapes and errors. Missing keys count as empty strings.

use super::args::{int, is};
use super::{err, CmdResult, Ctx};
use crate::protocol::Reply;
use crate::store::Value;
use bytes::Bytes;

const NOT_STRINGS: &str = "ERR The specified keys must contain string values";
const LEN_AND_IDX: &str = "ERR If you want both the length and indexes, please just use IDX.";
const TOO_BIG: &str =
    "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len";
const NO_MEMORY: &str = "ERR Insufficient memory, failed allocating transient memory for LCS";

pub fn lcs(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let max_bulk = ctx.shared.config.read().proto_max_bulk_len;
    // The values first (Redis checks the types before the options); the lock is not held
    // while the table is built.
    let (a, b) = {
        let mut locked = ctx.lock(&args[1..3]);
        let mut string_at = |key: &[u8]| match locked.get(key).map(|e| &e.value) {
            None => Some(Bytes::new()),
            Some(Value::Str(s)) => Some(s.to_bytes()),
            Some(_) => None,
        };
        let a = string_at(args[1]);
        let b = string_at(args[2]);
        match (a, b) {
            (Some(a), Some(b)) => (a, b),
            _ => return Err(Reply::error(NOT_STRINGS)),
        }
    };
    let (mut get_len, mut get_idx, mut with_match_len) = (false, false, false);
    let mut min_match_len: i64 = 0;
    let mut j = 3;
    while j < args.len() {
        let opt = args[j];
        if is(opt, "idx") {
            get_idx = true;
        } else if is(opt, "len") {
            get_len = true;
        } else if is(opt, "withmatchlen") {
            with_match_len = true;
        } else if is(opt, "minmatchlen") && j + 1 < args.len() {
            min_match_len = int(args[j + 1])?.max(0);
            j += 1;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
        j += 1;
    }
    if get_idx && get_len {
        return Err(Reply::error(LEN_AND_IDX));
    }
    if a.len() >= u32::MAX as usize - 1 || b.len() >= u32::MAX as usize - 1 {
        return Err(Reply::error("ERR String too long for LCS"));
    }
    let (alen, blen) = (a.len(), b.len());
    let cells = (alen as u64 + 1) * (blen as u64 + 1);
    if cells.saturating_mul(4) > max_bulk {
        return Err(Reply::error(TOO_BIG));
    }
    let cells = usize::try_from(cells).map_err(|_| Reply::error(NO_MEMORY))?;
    let mut dp: Vec<u32> = Vec::new();
    dp.try_reserve_exact(cells)
        .map_err(|_| Reply::error(NO_MEMORY))?;
    dp.resize(cells, 0);
    let width = blen + 1;
    let at = |i: usize, j: usize| i * width + j;
    for i in 1..=alen {
        for j in 1..=blen {
            dp[at(i, j)] = if a[i - 1] == b[j - 1] {
                dp[at(i - 1, j - 1)] + 1
            } else {
                dp[at(i - 1, j)].max(dp[at(i, j - 1)])
            };
        }
    }
    let total = dp[at(alen, blen)];
    if get_len {
        return Ok(Reply::Int(total as i64));
    }

    // Walk back from the end, collecting the subsequence and (for IDX) the ranges of matches,
    // last ones first, as Redis does.
    let mut result = vec![0u8; total as usize];
    let mut idx = total as usize;
    let mut matches: Vec<Reply> = Vec::new();
    // `None` when no range is open; else (a_start, a_end, b_start, b_end).
    let mut range: Option<(usize, usize, usize, usize)> = None;
    let (mut i, mut j) = (alen, blen);
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            match range {
                None => range = Some((i - 1, i - 1, j - 1, j - 1)),
                // Contiguous with the open range: extend it backwards.
                Some((a0, a1, b0, b1)) if a0 == i && b0 == j => {
                    range = Some((a0 - 1, a1, b0 - 1, b1));
                }
                Some(_) => emit = true,
            }
            if range.is_some_and(|r| r.0 == 0 || r.2 == 0) {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if dp[at(i - 1, j)] > dp[at(i, j - 1)] {
                i -= 1;
            } else {
                j -= 1;
            }
            emit = range.is_some();
        }
        if emit {
            if let Some((a0, a1, b0, b1)) = range.take() {
                let match_len = (a1 - a0 + 1) as i64;
                if get_idx && (min_match_len == 0 || match_len >= min_match_len) {
                    let mut entry = vec![
                        Reply::Array(vec![Reply::Int(a0 as i64), Reply::Int(a1 as i64)]),
                        Reply::Array(vec![Reply::Int(b0 as i64), Reply::Int(b1 as i64)]),
                    ];
                    if with_match_len {
                        entry.push(Reply::Int(match_len));
                    }
                    matches.push(Reply::Array(entry));
                }
            }
        }
    }
    if get_idx {
        return Ok(Reply::Map(vec![
            (Reply::bulk_str("matches"), Reply::Array(matches)),
            (Reply::bulk_str("len"), Reply::Int(total as i64)),
        ]));
    }
    Ok(Reply::bulk(result))
}
