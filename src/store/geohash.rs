//! Geohashes as Redis computes them (its `geohash.c` and `geohash_helper.c`): a point's 52-bit
//! interleaved hash, used as its sorted-set score, the decoding back to the cell's centre, the
//! eight neighbours of a cell, the haversine distance, and the choice of the (up to) nine cells a
//! radius or box search scans. Pure arithmetic, kept operation for operation as Redis does it so
//! that scores, distances and the order of unsorted results agree to the printed digit.

pub const STEP_MAX: u8 = 26;
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;

const DEG_TO_RAD: f64 = 0.017_453_292_519_943_295;
pub const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;

/// A cell: `step` bits of each coordinate interleaved in `bits`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashBits {
    pub bits: u64,
    pub step: u8,
}

impl HashBits {
    fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    pub min: f64,
    pub max: f64,
}

/// A decoded cell's extent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Area {
    pub longitude: Range,
    pub latitude: Range,
}

const LONG_RANGE: Range = Range {
    min: LONG_MIN,
    max: LONG_MAX,
};
const LAT_RANGE: Range = Range {
    min: LAT_MIN,
    max: LAT_MAX,
};

fn interleave64(xlo: u32, ylo: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let (mut x, mut y) = (u64::from(xlo), u64::from(ylo));
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

fn deinterleave64(interleaved: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
        0x00000000FFFFFFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let mut x = interleaved;
    let mut y = interleaved >> 1;
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

/// Redis's `geohashEncode`: None outside the WGS84 limits or the given ranges.
pub fn encode(
    long_range: Range,
    lat_range: Range,
    longitude: f64,
    latitude: f64,
    step: u8,
) -> Option<HashBits> {
    if step > 32 || step == 0 {
        return None;
    }
    if !(LONG_MIN..=LONG_MAX).contains(&longitude) || !(LAT_MIN..=LAT_MAX).contains(&latitude) {
        return None;
    }
    if latitude < lat_range.min
        || latitude > lat_range.max
        || longitude < long_range.min
        || longitude > long_range.max
    {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (latitude - lat_range.min) / (lat_range.max - lat_range.min) * scale;
    let long_offset = (longitude - long_range.min) / (long_range.max - long_range.min) * scale;
    Some(HashBits {
        bits: interleave64(lat_offset as u32, long_offset as u32),
        step,
    })
}

/// The WGS84 hash of a point at full precision.
pub fn encode_wgs84(longitude: f64, latitude: f64, step: u8) -> Option<HashBits> {
    encode(LONG_RANGE, LAT_RANGE, longitude, latitude, step)
}

/// The 52-bit score of a point (None outside the limits).
pub fn score_of(longitude: f64, latitude: f64) -> Option<u64> {
    encode_wgs84(longitude, latitude, STEP_MAX).map(align52)
}

/// Redis's `geohashAlign52Bits`.
pub fn align52(hash: HashBits) -> u64 {
    hash.bits << (52 - u32::from(hash.step) * 2)
}

/// Redis's `geohashDecode`.
pub fn decode(long_range: Range, lat_range: Range, hash: HashBits) -> Option<Area> {
    if hash.is_zero() {
        return None;
    }
    let sep = deinterleave64(hash.bits);
    let lat_scale = lat_range.max - lat_range.min;
    let long_scale = long_range.max - long_range.min;
    let ilato = sep as u32;
    let ilono = (sep >> 32) as u32;
    let div = (1u64 << hash.step) as f64;
    Some(Area {
        latitude: Range {
            min: lat_range.min + (f64::from(ilato) / div) * lat_scale,
            max: lat_range.min + (f64::from(ilato.wrapping_add(1)) / div) * lat_scale,
        },
        longitude: Range {
            min: long_range.min + (f64::from(ilono) / div) * long_scale,
            max: long_range.min + (f64::from(ilono.wrapping_add(1)) / div) * long_scale,
        },
    })
}

/// A cell's centre, clamped to the limits (`geohashDecodeAreaToLongLat`).
fn area_centre(area: &Area) -> (f64, f64) {
    let lon = ((area.longitude.min + area.longitude.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.latitude.min + area.latitude.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// C's `(uint64_t)score` as Redis (built for x86-64) computes it: below 2^63 a signed truncation
/// (out of range: 2^63), else the truncation of `score - 2^63` with the top bit flipped. So a
/// score that is no geohash (negative, above 2^64, infinite) decodes as Redis decodes it, where
/// Rust's saturating `as u64` would give other bits.
fn c_score_bits(score: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    let truncate = |v: f64| {
        if v.is_nan() || !(-TWO_63..TWO_63).contains(&v) {
            1u64 << 63
        } else {
            v as i64 as u64
        }
    };
    if score.is_nan() || score < TWO_63 {
        truncate(score)
    } else {
        truncate(score - TWO_63) ^ (1u64 << 63)
    }
}

/// A score back to `(longitude, latitude)` as Redis's `decodeGeohash` does.
pub fn decode_score(score: f64) -> Option<(f64, f64)> {
    let hash = HashBits {
        bits: c_score_bits(score),
        step: STEP_MAX,
    };
    decode(LONG_RANGE, LAT_RANGE, hash).map(|area| area_centre(&area))
}

/// GEOHASH's 11-character standard geohash of a stored score.
pub fn standard_geohash(score: f64) -> Option<[u8; 11]> {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = decode_score(score)?;
    let hash = encode(
        Range {
            min: -180.0,
            max: 180.0,
        },
        Range {
            min: -90.0,
            max: 90.0,
        },
        lon,
        lat,
        26,
    )
    .unwrap_or_default();
    let mut out = [b'0'; 11];
    for (i, slot) in out.iter_mut().enumerate().take(10) {
        let idx = (hash.bits >> (52 - (i + 1) * 5)) & 0x1f;
        *slot = ALPHABET[idx as usize];
    }
    Some(out)
}

fn move_x(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - u32::from(hash.step) * 2;
    let mut x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let y = hash.bits & 0x5555555555555555;
    let zz = 0x5555555555555555u64 >> shift;
    if d > 0 {
        x = x.wrapping_add(zz + 1);
    } else {
        x |= zz;
        x = x.wrapping_sub(zz + 1);
    }
    x &= 0xaaaaaaaaaaaaaaaau64 >> shift;
    hash.bits = x | y;
}

fn move_y(hash: &mut HashBits, d: i8) {
    if d == 0 {
        return;
    }
    let shift = 64 - u32::from(hash.step) * 2;
    let x = hash.bits & 0xaaaaaaaaaaaaaaaa;
    let mut y = hash.bits & 0x5555555555555555;
    let zz = 0xaaaaaaaaaaaaaaaau64 >> shift;
    if d > 0 {
        y = y.wrapping_add(zz + 1);
    } else {
        y |= zz;
        y = y.wrapping_sub(zz + 1);
    }
    y &= 0x5555555555555555u64 >> shift;
    hash.bits = x | y;
}

/// A cell's neighbours, each `None` once excluded from a search.
#[derive(Clone, Copy, Debug, Default)]
pub struct Neighbors {
    pub north: HashBits,
    pub east: HashBits,
    pub west: HashBits,
    pub south: HashBits,
    pub north_east: HashBits,
    pub south_east: HashBits,
    pub north_west: HashBits,
    pub south_west: HashBits,
}

/// Redis's `geohashNeighbors` (step must be at least 1).
pub fn neighbors(hash: HashBits) -> Neighbors {
    let at = |dx: i8, dy: i8| {
        let mut h = hash;
        move_x(&mut h, dx);
        move_y(&mut h, dy);
        h
    };
    Neighbors {
        east: at(1, 0),
        west: at(-1, 0),
        south: at(0, -1),
        north: at(0, 1),
        north_west: at(-1, 1),
        south_west: at(-1, -1),
        north_east: at(1, 1),
        south_east: at(1, -1),
    }
}

fn deg_rad(angle: f64) -> f64 {
    angle * DEG_TO_RAD
}

fn rad_deg(angle: f64) -> f64 {
    angle / DEG_TO_RAD
}

/// The search step for a radius (`geohashEstimateStepsByRadius`).
pub fn estimate_steps_by_radius(range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut range = range_meters;
    let mut step: i32 = 1;
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// The distance in meters between two latitudes on one meridian.
pub fn lat_distance(lat1d: f64, lat2d: f64) -> f64 {
    EARTH_RADIUS_IN_METERS * (deg_rad(lat2d) - deg_rad(lat1d)).abs()
}

/// The haversine distance in meters (`geohashGetDistance`, Redis 7.2).
pub fn distance(lon1d: f64, lat1d: f64, lon2d: f64, lat2d: f64) -> f64 {
    let lon1r = deg_rad(lon1d);
    let lon2r = deg_rad(lon2d);
    let v = ((lon2r - lon1r) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1d, lat2d);
    }
    let lat1r = deg_rad(lat1d);
    let lat2r = deg_rad(lat2d);
    let u = ((lat2r - lat1r) / 2.0).sin();
    let a = u * u + lat1r.cos() * lat2r.cos() * v * v;
    2.0 * EARTH_RADIUS_IN_METERS * a.sqrt().asin()
}

/// A search shape: its centre, and a radius or a box, with the unit's meters per unit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ShapeKind {
    Radius(f64),
    Box { width: f64, height: f64 },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub lon: f64,
    pub lat: f64,
    pub kind: ShapeKind,
    /// Meters per unit.
    pub conversion: f64,
}

impl Shape {
    /// The distance in meters from the centre to `(lon, lat)` when the point is inside.
    pub fn distance_if_within(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.kind {
            ShapeKind::Radius(radius) => {
                let d = distance(self.lon, self.lat, lon, lat);
                (d <= radius * self.conversion).then_some(d)
            }
            ShapeKind::Box { width, height } => {
                let (width_m, height_m) = (width * self.conversion, height * self.conversion);
                if lat_distance(lat, self.lat) > height_m / 2.0 {
                    return None;
                }
                if distance(lon, lat, self.lon, lat) > width_m / 2.0 {
                    return None;
                }
                Some(distance(self.lon, self.lat, lon, lat))
            }
        }
    }

    /// `[min_lon, min_lat, max_lon, max_lat]` (`geohashBoundingBox`).
    fn bounding_box(&self) -> [f64; 4] {
        let (half_h, half_w) = match self.kind {
            ShapeKind::Radius(r) => (r, r),
            ShapeKind::Box { width, height } => (height / 2.0, width / 2.0),
        };
        let height = self.conversion * half_h;
        let width = self.conversion * half_w;
        let lat_delta = rad_deg(height / EARTH_RADIUS_IN_METERS);
        let long_delta_top =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.lat + lat_delta).cos());
        let long_delta_bottom =
            rad_deg(width / EARTH_RADIUS_IN_METERS / deg_rad(self.lat - lat_delta).cos());
        let southern = self.lat < 0.0;
        let delta = if southern {
            long_delta_bottom
        } else {
            long_delta_top
        };
        [
            self.lon - delta,
            self.lat - lat_delta,
            self.lon + delta,
            self.lat + lat_delta,
        ]
    }

    /// The cells to scan, in Redis's order (centre, N, S, E, W, NE, NW, SE, SW), with the ones
    /// Redis excludes or skips left out (`geohashCalculateAreasByShapeWGS84` and
    /// `membersOfAllNeighbors`).
    pub fn cells(&self) -> Vec<HashBits> {
        let [min_lon, min_lat, max_lon, max_lat] = self.bounding_box();
        let radius_meters = match self.kind {
            ShapeKind::Radius(r) => r,
            ShapeKind::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.conversion;
        let mut steps = estimate_steps_by_radius(radius_meters, self.lat);
        let centre = |steps: u8| {
            let hash = encode_wgs84(self.lon, self.lat, steps).unwrap_or_default();
            let area = decode(LONG_RANGE, LAT_RANGE, hash);
            (hash, neighbors(hash), area)
        };
        let (mut hash, mut nb, mut area) = centre(steps);
        let dec = |h: HashBits| decode(LONG_RANGE, LAT_RANGE, h);
        let decrease = match (dec(nb.north), dec(nb.south), dec(nb.east), dec(nb.west)) {
            (Some(n), Some(s), Some(e), Some(w)) => {
                n.latitude.max < max_lat
                    || s.latitude.min > min_lat
                    || e.longitude.max < max_lon
                    || w.longitude.min > min_lon
            }
            _ => false,
        };
        if steps > 1 && decrease {
            steps -= 1;
            (hash, nb, area) = centre(steps);
        }
        if steps >= 2 {
            if let Some(area) = area {
                let zero = HashBits::default();
                if area.latitude.min < min_lat {
                    (nb.south, nb.south_west, nb.south_east) = (zero, zero, zero);
                }
                if area.latitude.max > max_lat {
                    (nb.north, nb.north_east, nb.north_west) = (zero, zero, zero);
                }
                if area.longitude.min < min_lon {
                    (nb.west, nb.south_west, nb.north_west) = (zero, zero, zero);
                }
                if area.longitude.max > max_lon {
                    (nb.east, nb.south_east, nb.north_east) = (zero, zero, zero);
                }
            }
        }
        let all = [
            hash,
            nb.north,
            nb.south,
            nb.east,
            nb.west,
            nb.north_east,
            nb.north_west,
            nb.south_east,
            nb.south_west,
        ];
        let mut out = Vec::with_capacity(9);
        let mut last_processed = 0usize;
        for (i, cell) in all.iter().enumerate() {
            if cell.is_zero() {
                continue;
            }
            if last_processed != 0 && *cell == all[last_processed] {
                continue;
            }
            out.push(*cell);
            last_processed = i;
        }
        out
    }
}

/// The score interval `[min, max)` of a cell (`scoresOfGeoHashBox`).
pub fn cell_scores(hash: HashBits) -> (u64, u64) {
    let min = align52(hash);
    let max = align52(HashBits {
        bits: hash.bits.wrapping_add(1),
        step: hash.step,
    });
    (min, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palermo_scores_and_decodes_as_redis() {
        // GEOADD Sicily 13.361389 38.115556 "Palermo" → ZSCORE 3479099956230698.
        assert_eq!(score_of(13.361389, 38.115556), Some(3479099956230698));
        let (lon, lat) = decode_score(3479099956230698.0).expect("decodes");
        assert_eq!(format!("{lon:.17}"), "13.36138933897018433");
        assert_eq!(format!("{lat:.17}"), "38.11555639549629859");
        assert_eq!(
            &standard_geohash(3479099956230698.0).expect("hash"),
            b"sqc8b49rny0"
        );
    }

    #[test]
    fn palermo_catania_distance() {
        let (a, b) = (
            decode_score(3479099956230698.0).expect("a"),
            decode_score(3479447370796909.0).expect("b"),
        );
        assert_eq!(
            format!("{:.4}", distance(a.0, a.1, b.0, b.1)),
            "166274.1516"
        );
    }

    #[test]
    fn out_of_range_scores_convert_as_x86_64_c() {
        assert_eq!(c_score_bits(f64::INFINITY), 0);
        assert_eq!(c_score_bits(f64::NEG_INFINITY), 1 << 63);
        assert_eq!(c_score_bits(-1.0), u64::MAX);
        assert_eq!(c_score_bits(1e30), 0);
        assert_eq!(c_score_bits(-1e30), 1 << 63);
        assert_eq!(c_score_bits(3.0), 3);
        assert_eq!(c_score_bits(9_223_372_036_854_775_808.0), 1 << 63);
    }

    #[test]
    fn limits_are_refused() {
        assert_eq!(score_of(1.0, 100.0), None);
        assert_eq!(score_of(181.0, 0.0), None);
        assert!(score_of(180.0, LAT_MAX).is_some());
    }

    #[test]
    fn neighbours_move_one_cell() {
        let h = encode_wgs84(0.0, 0.0, 4).expect("hash");
        let n = neighbors(h);
        assert_ne!(n.north, h);
        let back = {
            let mut x = n.north;
            move_y(&mut x, -1);
            x
        };
        assert_eq!(back, h);
    }
}
