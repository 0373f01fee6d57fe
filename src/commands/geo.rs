//! Geo commands on sorted sets: a point is a member whose score is its 52-bit geohash
//! (`crate::store::geohash`). Arguments, errors and replies follow Redis's `geo.c`.

use super::args::{int, is, parse_double};
use super::typed::zset;
use super::{err, CmdResult, Ctx};
use crate::events::class;
use crate::protocol::Reply;
use crate::store::geohash::{self, Shape, ShapeKind};
use crate::store::zset::{ScoreBound, ZSet};
use crate::store::Value;
use bytes::Bytes;

/// A coordinate as Redis prints it in RESP2 (`%.17Lf`, trailing zeros dropped) or as a RESP3
/// double with the same text.
fn human_double(value: f64, resp3: bool) -> Reply {
    let mut text = format!("{value:.17}");
    if text.contains('.') {
        let trimmed = text.trim_end_matches('0').trim_end_matches('.').len();
        text.truncate(trimmed);
    }
    if text == "-0" {
        text = "0".into();
    }
    if resp3 {
        Reply::Raw(Bytes::from(format!(",{text}\r\n")))
    } else {
        Reply::Bulk(Bytes::from(text))
    }
}

/// A distance as Redis prints it: a bulk string with 4 decimals.
fn distance_reply(d: f64) -> Reply {
    Reply::Bulk(Bytes::from(format!("{d:.4}")))
}

/// A number as Redis's `getDoubleFromObjectOrReply` reads one: overflow and underflow refused.
fn number(arg: &[u8], message: &'static str) -> Result<f64, Reply> {
    parse_double(arg).ok_or_else(|| Reply::error(message))
}

/// `longitude latitude` within Redis's limits.
fn lon_lat(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), Reply> {
    let lon = number(lon, err::NOT_FLOAT)?;
    let lat = number(lat, err::NOT_FLOAT)?;
    if !(geohash::LONG_MIN..=geohash::LONG_MAX).contains(&lon)
        || !(geohash::LAT_MIN..=geohash::LAT_MAX).contains(&lat)
    {
        return Err(Reply::error(format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        )));
    }
    Ok((lon, lat))
}

/// Meters per unit (`m`, `km`, `ft`, `mi`).
fn unit(arg: &[u8]) -> Result<f64, Reply> {
    if is(arg, "m") {
        Ok(1.0)
    } else if is(arg, "km") {
        Ok(1000.0)
    } else if is(arg, "ft") {
        Ok(0.3048)
    } else if is(arg, "mi") {
        Ok(1609.34)
    } else {
        Err(Reply::error(
            "ERR unsupported unit provided. please use M, KM, FT, MI",
        ))
    }
}

/// `radius unit`.
fn radius(args: &[&[u8]]) -> Result<(f64, f64), Reply> {
    let r = number(args[0], "ERR need numeric radius")?;
    if r < 0.0 {
        return Err(Reply::error("ERR radius cannot be negative"));
    }
    Ok((r, unit(args[1])?))
}

/// `width height unit`.
fn box_size(args: &[&[u8]]) -> Result<(f64, f64, f64), Reply> {
    let w = number(args[0], "ERR need numeric width")?;
    let h = number(args[1], "ERR need numeric height")?;
    if h < 0.0 || w < 0.0 {
        return Err(Reply::error("ERR height or width cannot be negative"));
    }
    Ok((w, h, unit(args[2])?))
}

fn member_position(z: &ZSet, member: &[u8]) -> Option<(f64, f64)> {
    z.score(member).and_then(geohash::decode_score)
}

fn not_decodable() -> Reply {
    Reply::error("ERR could not decode requested zset member")
}

/// GEOADD key [NX | XX] [CH] longitude latitude member [longitude latitude member ...]: ZADD with
/// the points' geohashes as scores.
pub fn geoadd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let (mut nx, mut xx) = (false, false);
    let mut first = 2;
    while first < args.len() {
        let opt = args[first];
        if is(opt, "nx") {
            nx = true;
        } else if is(opt, "xx") {
            xx = true;
        } else if !is(opt, "ch") {
            break;
        }
        first += 1;
    }
    let triples = &args[first..];
    if triples.len() % 3 != 0 || (xx && nx) || triples.is_empty() {
        return Err(Reply::error(err::SYNTAX));
    }
    let mut scores = Vec::with_capacity(triples.len() / 3);
    for t in triples.chunks(3) {
        let (lon, lat) = lon_lat(t[0], t[1])?;
        let score = geohash::score_of(lon, lat).unwrap_or(0);
        scores.push(score.to_string());
    }
    let mut zadd_args: Vec<&[u8]> = Vec::with_capacity(first + scores.len() * 2);
    zadd_args.push(b"zadd");
    zadd_args.extend_from_slice(&args[1..first]);
    for (t, score) in triples.chunks(3).zip(&scores) {
        zadd_args.push(score.as_bytes());
        zadd_args.push(t[2]);
    }
    super::zsets::zadd(ctx, &zadd_args)
}

/// GEODIST key member1 member2 [unit].
pub fn geodist(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let to_meter = match args.len() {
        5 => unit(args[4])?,
        4 => 1.0,
        _ => return Err(Reply::error(err::SYNTAX)),
    };
    let mut locked = ctx.lock(&args[1..2]);
    let Some(z) = zset(&mut locked, args[1])? else {
        return Ok(Reply::Nil);
    };
    match (z.score(args[2]), z.score(args[3])) {
        (Some(a), Some(b)) => match (geohash::decode_score(a), geohash::decode_score(b)) {
            (Some(a), Some(b)) => Ok(distance_reply(
                geohash::distance(a.0, a.1, b.0, b.1) / to_meter,
            )),
            _ => Ok(Reply::Nil),
        },
        _ => Ok(Reply::Nil),
    }
}

/// GEOHASH key [member ...].
pub fn geohash_cmd(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let mut locked = ctx.lock(&args[1..2]);
    let z = zset(&mut locked, args[1])?;
    Ok(Reply::Array(
        args[2..]
            .iter()
            .map(|m| {
                z.and_then(|z| z.score(m))
                    .and_then(geohash::standard_geohash)
                    .map_or(Reply::Nil, Reply::bulk)
            })
            .collect(),
    ))
}

/// GEOPOS key [member ...].
pub fn geopos(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    let resp3 = ctx.conn.resp3;
    let mut locked = ctx.lock(&args[1..2]);
    let z = zset(&mut locked, args[1])?;
    Ok(Reply::Array(
        args[2..]
            .iter()
            .map(|m| match z.and_then(|z| member_position(z, m)) {
                Some((lon, lat)) => {
                    Reply::Array(vec![human_double(lon, resp3), human_double(lat, resp3)])
                }
                None => Reply::NilArray,
            })
            .collect(),
    ))
}

/// Which command of the search family runs ([`search`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS[_RO] key longitude latitude radius unit …
    Coords,
    /// GEORADIUSBYMEMBER[_RO] key member radius unit …
    Member,
    /// GEOSEARCH key FROM… BY… …
    Search,
    /// GEOSEARCHSTORE destination source FROM… BY… …
    SearchStore,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    None,
    Asc,
    Desc,
}

/// One point found.
struct Found {
    member: Bytes,
    score: f64,
    lon: f64,
    lat: f64,
    dist: f64,
}

pub fn georadius(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Form::Coords, is(args[0], "georadius_ro"))
}

pub fn georadiusbymember(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Form::Member, is(args[0], "georadiusbymember_ro"))
}

pub fn geosearch(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Form::Search, true)
}

pub fn geosearchstore(ctx: &mut Ctx, args: &[&[u8]]) -> CmdResult {
    search(ctx, args, Form::SearchStore, false)
}

/// Redis's `georadiusGeneric`: parses in Redis's order (so that the first error is Redis's),
/// scans the cells the shape covers, sorts, then replies or stores.
fn search(ctx: &mut Ctx, args: &[&[u8]], form: Form, no_store: bool) -> CmdResult {
    let resp3 = ctx.conn.resp3;
    let src_index = if form == Form::SearchStore { 2 } else { 1 };
    // Lock the source and every argument that may name a destination.
    let mut lock_keys: Vec<&[u8]> = vec![args[src_index]];
    if form == Form::SearchStore {
        lock_keys.push(args[1]);
    } else if !no_store {
        for pair in args.windows(2) {
            if is(pair[0], "store") || is(pair[0], "storedist") {
                lock_keys.push(pair[1]);
            }
        }
    }
    let mut locked = ctx.lock(&lock_keys);
    let src = args[src_index];
    let z = zset(&mut locked, src)?;

    let mut centre: Option<(f64, f64)> = None;
    let mut kind: Option<ShapeKind> = None;
    let mut conversion = 1.0;
    let base = match form {
        Form::Coords => {
            centre = Some(lon_lat(args[2], args[3])?);
            let (r, conv) = radius(&args[4..6])?;
            kind = Some(ShapeKind::Radius(r));
            conversion = conv;
            6
        }
        Form::Member => {
            if let Some(z) = z {
                centre = Some(member_position(z, args[2]).ok_or_else(not_decodable)?);
                let (r, conv) = radius(&args[3..5])?;
                kind = Some(ShapeKind::Radius(r));
                conversion = conv;
            }
            5
        }
        Form::Search => 2,
        Form::SearchStore => 3,
    };
    let mut store: Option<&[u8]> = (form == Form::SearchStore).then_some(args[1]);
    let geosearch = matches!(form, Form::Search | Form::SearchStore);
    let (mut withdist, mut withhash, mut withcoord, mut any) = (false, false, false, false);
    let (mut frommember, mut fromloc, mut byradius, mut bybox) = (false, false, false, false);
    let mut storedist = false;
    let mut order = Order::None;
    let mut count: i64 = 0;
    let rest = &args[base..];
    let remaining = rest.len();
    let mut i = 0;
    while i < remaining {
        let arg = rest[i];
        if is(arg, "withdist") {
            withdist = true;
        } else if is(arg, "withhash") {
            withhash = true;
        } else if is(arg, "withcoord") {
            withcoord = true;
        } else if is(arg, "any") {
            any = true;
        } else if is(arg, "asc") {
            order = Order::Asc;
        } else if is(arg, "desc") {
            order = Order::Desc;
        } else if is(arg, "count") && i + 1 < remaining {
            count = int(rest[i + 1])?;
            if count <= 0 {
                return Err(Reply::error("ERR COUNT must be > 0"));
            }
            i += 1;
        } else if (is(arg, "store") || is(arg, "storedist"))
            && i + 1 < remaining
            && !no_store
            && !geosearch
        {
            store = Some(rest[i + 1]);
            storedist = is(arg, "storedist");
            i += 1;
        } else if is(arg, "storedist") && form == Form::SearchStore {
            storedist = true;
        } else if is(arg, "frommember") && i + 1 < remaining && geosearch && !fromloc {
            if let Some(z) = z {
                centre = Some(member_position(z, rest[i + 1]).ok_or_else(not_decodable)?);
            }
            frommember = true;
            i += 1;
        } else if is(arg, "fromlonlat") && i + 2 < remaining && geosearch && !frommember {
            centre = Some(lon_lat(rest[i + 1], rest[i + 2])?);
            fromloc = true;
            i += 2;
        } else if is(arg, "byradius") && i + 2 < remaining && geosearch && !bybox {
            let (r, conv) = radius(&rest[i + 1..i + 3])?;
            kind = Some(ShapeKind::Radius(r));
            conversion = conv;
            byradius = true;
            i += 2;
        } else if is(arg, "bybox") && i + 3 < remaining && geosearch && !byradius {
            let (width, height, conv) = box_size(&rest[i + 1..i + 4])?;
            kind = Some(ShapeKind::Box { width, height });
            conversion = conv;
            bybox = true;
            i += 3;
        } else {
            return Err(Reply::error(err::SYNTAX));
        }
        i += 1;
    }
    if store.is_some() && (withdist || withhash || withcoord) {
        return Err(Reply::error(if form == Form::SearchStore {
            "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        } else {
            "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        }));
    }
    let typed_name = || String::from_utf8_lossy(args[0]).into_owned();
    if geosearch && !(frommember || fromloc) {
        return Err(Reply::error(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {}",
            typed_name()
        )));
    }
    if geosearch && !(byradius || bybox) {
        return Err(Reply::error(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {}",
            typed_name()
        )));
    }
    if any && count == 0 {
        return Err(Reply::error("ERR the ANY argument requires COUNT argument"));
    }
    let (Some(z), Some((lon, lat)), Some(kind)) = (z, centre, kind) else {
        // No source key.
        return Ok(match store {
            Some(dst) => {
                locked.remove(dst);
                Reply::Int(0)
            }
            None => Reply::Array(Vec::new()),
        });
    };
    if count != 0 && order == Order::None && !any {
        order = Order::Asc;
    }
    let shape = Shape {
        lon,
        lat,
        kind,
        conversion,
    };
    let limit = if any { count as usize } else { 0 };
    let mut found: Vec<Found> = Vec::new();
    for cell in shape.cells() {
        if !found.is_empty() && limit != 0 && found.len() >= limit {
            break;
        }
        let (min, max) = geohash::cell_scores(cell);
        let range = z.range_by_score(
            ScoreBound {
                value: min as f64,
                exclusive: false,
            },
            ScoreBound {
                value: max as f64,
                exclusive: true,
            },
        );
        for (member, score) in range {
            let Some((plon, plat)) = geohash::decode_score(score) else {
                continue;
            };
            if let Some(dist) = shape.distance_if_within(plon, plat) {
                found.push(Found {
                    member: Bytes::copy_from_slice(member),
                    score,
                    lon: plon,
                    lat: plat,
                    dist,
                });
                if limit != 0 && found.len() >= limit {
                    break;
                }
            }
        }
    }
    match order {
        Order::Asc => found.sort_by(|a, b| a.dist.total_cmp(&b.dist)),
        Order::Desc => found.sort_by(|a, b| b.dist.total_cmp(&a.dist)),
        Order::None => {}
    }
    if count > 0 {
        found.truncate(count as usize);
    }
    for f in &mut found {
        f.dist /= conversion;
    }
    let Some(dst) = store else {
        let with = withdist || withhash || withcoord;
        return Ok(Reply::Array(
            found
                .into_iter()
                .map(|f| {
                    if !with {
                        return Reply::Bulk(f.member);
                    }
                    let mut item = vec![Reply::Bulk(f.member)];
                    if withdist {
                        item.push(distance_reply(f.dist));
                    }
                    if withhash {
                        item.push(Reply::Int(f.score as i64));
                    }
                    if withcoord {
                        item.push(Reply::Array(vec![
                            human_double(f.lon, resp3),
                            human_double(f.lat, resp3),
                        ]));
                    }
                    Reply::Array(item)
                })
                .collect(),
        ));
    };
    let stored = found.len();
    if stored == 0 {
        locked.remove(dst);
        return Ok(Reply::Int(0));
    }
    let limit = locked.limits().zset();
    let mut result = ZSet::default();
    for f in found {
        result.insert(f.member, if storedist { f.dist } else { f.score }, limit);
    }
    locked.set(dst, Value::ZSet(result), 0);
    locked.notify(
        class::ZSET,
        if geosearch {
            "geosearchstore"
        } else {
            "georadiusstore"
        },
        dst,
    );
    Ok(Reply::Int(stored as i64))
}
