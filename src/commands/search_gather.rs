//! FT.SEARCH in cluster mode: each node indexes its own keys (a client creates an index on every
//! node, as with RediSearch's OSS cluster), and the node that receives FT.SEARCH gathers from
//! every primary, as STM.RECENT does (`crate::cluster::peers`).
//!
//! The receiving node runs the query on its own index and asks every other primary, in
//! parallel, with `CLUSTER PEER <id> FT.SEARCH <2|3> <FT.SEARCH's arguments>`. Each node answers
//! its total and its first offset + limit results, each with what orders it (the score, KNN's
//! distance or SORTBY's value) and rendered in the client's protocol with its document loaded
//! there. The receiving node merges them in that order, cuts the page (`LIMIT`) from the
//! merged list and sums the totals (KNN: at most k). A node that fails, refuses (no such index)
//! or does not answer in time makes the whole reply an error, never a partial answer. On a
//! replica the primaries answer for every document (its own copies are not counted).

use super::search::{assemble, compare_order, render_hit, search_here, Searched};
use super::{CmdResult, Ctx};
use crate::protocol::Reply;
use crate::search::index::SortValue;
use bytes::Bytes;
use redis_protocol::resp2::types::OwnedFrame;

/// One result ready to merge: what orders it, and its items of the reply.
type Row = (Option<SortValue>, Vec<Reply>);

/// FT.SEARCH on a cluster node: this node's results and every other primary's, merged.
pub fn search(
    ctx: &mut Ctx,
    cluster: &std::sync::Arc<crate::cluster::Cluster>,
    args: &[&[u8]],
) -> CmdResult {
    let found = search_here(ctx, args, true)?;
    let resp3 = ctx.conn.resp3;
    let protocol: &[u8] = if resp3 { b"3" } else { b"2" };
    let mut request: Vec<&[u8]> = vec![b"FT.SEARCH", protocol];
    request.extend_from_slice(&args[1..]);
    let frames = super::stm::ask_peers(ctx, cluster, &request)?;
    // A node without slots (a replica) holds a copy of its primary's documents, which the
    // primary answers for: its own would count twice.
    let serving = !cluster.map().ranges_of(&cluster.me.id).is_empty();
    let mut total = if serving { found.total } else { 0 };
    let mut rows: Vec<Row> = match serving {
        true => found
            .hits
            .iter()
            .map(|hit| (hit.order.clone(), render_hit(ctx, &found, hit, resp3)))
            .collect(),
        false => Vec::new(),
    };
    for frame in frames {
        let (count, theirs) = peer_rows(frame)?;
        total += count;
        rows.extend(theirs);
    }
    // Stable: equal results keep their node's order, this node's first.
    rows.sort_by(|a, b| compare_order(&a.0, &b.0, found.ascending));
    if let Some(k) = found.knn {
        total = total.min(k);
    }
    let items = rows
        .into_iter()
        .skip(found.offset())
        .take(found.limit())
        .flat_map(|(_, items)| items)
        .collect();
    Ok(assemble(resp3, total, items))
}

/// `CLUSTER PEER <me> FT.SEARCH <2|3> <FT.SEARCH's arguments>`: this node's total and first
/// offset + limit results, each `[kind, order, item…]` (kind 0: no order value, 1: a number,
/// 2: a text), its items rendered in the asking client's protocol.
pub fn search_peer(ctx: &mut Ctx, request: &[&[u8]]) -> CmdResult {
    let resp3 = match request.get(1).copied() {
        Some(b"2") => false,
        Some(b"3") => true,
        _ => return Err(Reply::error(super::err::SYNTAX)),
    };
    let mut args: Vec<&[u8]> = vec![request[0]];
    args.extend_from_slice(&request[2..]);
    let found: Searched = search_here(ctx, &args, true)?;
    let mut rows = Vec::with_capacity(found.hits.len());
    for hit in &found.hits {
        let (kind, order) = match &hit.order {
            None => (0, Bytes::new()),
            Some(SortValue::Number(n)) => (1, Bytes::from(n.to_string())),
            Some(SortValue::Text(t)) => (2, Bytes::from(t.clone())),
        };
        let mut row = vec![Reply::Int(kind), Reply::Bulk(order)];
        for item in render_hit(ctx, &found, hit, resp3) {
            let mut out = bytes::BytesMut::new();
            item.encode(resp3, &mut out);
            row.push(Reply::Bulk(out.freeze()));
        }
        rows.push(Reply::Array(row));
    }
    Ok(Reply::Array(vec![
        Reply::Int(found.total as i64),
        Reply::Array(rows),
    ]))
}

/// A peer's [`search_peer`] answer: its total and its rows.
fn peer_rows(frame: OwnedFrame) -> Result<(usize, Vec<Row>), Reply> {
    let bad = || Reply::error("ERR a cluster node answered FT.SEARCH in an unexpected form");
    let OwnedFrame::Array(parts) = frame else {
        return Err(bad());
    };
    let [OwnedFrame::Integer(total), OwnedFrame::Array(rows)] =
        <[OwnedFrame; 2]>::try_from(parts).map_err(|_| bad())?
    else {
        return Err(bad());
    };
    let rows = rows
        .into_iter()
        .map(|row| {
            let OwnedFrame::Array(parts) = row else {
                return Err(bad());
            };
            let mut parts = parts.into_iter();
            let (Some(OwnedFrame::Integer(kind)), Some(OwnedFrame::BulkString(order))) =
                (parts.next(), parts.next())
            else {
                return Err(bad());
            };
            let order = match kind {
                0 => None,
                1 => Some(SortValue::Number(
                    std::str::from_utf8(&order)
                        .ok()
                        .and_then(|n| n.parse().ok())
                        .ok_or_else(bad)?,
                )),
                2 => Some(SortValue::Text(
                    String::from_utf8_lossy(&order).into_owned(),
                )),
                _ => return Err(bad()),
            };
            let items = parts
                .map(|part| match part {
                    OwnedFrame::BulkString(body) => Ok(Reply::Raw(Bytes::from(body))),
                    _ => Err(bad()),
                })
                .collect::<Result<_, _>>()?;
            Ok((order, items))
        })
        .collect::<Result<_, _>>()?;
    Ok((usize::try_from(total).map_err(|_| bad())?, rows))
}
