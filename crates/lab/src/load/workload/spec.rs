//! Workload definitions by name (the built-ins) and from TOML files (key-value
//! mixes). Owns parsing and validation, with errors that say which field is
//! wrong and what it accepts; must not generate operations.

use serde::Deserialize;

use super::keys::KeyDist;
use super::mix::{KvParams, RangeLen, Ratios};
use super::values::ValueSize;
use super::zipfian::DEFAULT_THETA;

/// Every built-in workload name.
pub const BUILTIN_NAMES: [&str; 12] = [
    "put",
    "get",
    "mixed",
    "ycsb-a",
    "ycsb-b",
    "ycsb-c",
    "ycsb-d",
    "ycsb-e",
    "ycsb-f",
    "libri",
    "highload-upsert",
    "highload-get",
];

/// The `put`, `get` and `mixed` built-ins: uniform keys, fixed values.
pub fn simple_kv(name: &str, keys: u64, value_size: usize) -> Option<KvParams> {
    let r = Ratios::default();
    let (ratios, preload) = match name {
        "put" => (Ratios { put: 1.0, ..r }, false),
        "get" => (Ratios { get: 1.0, ..r }, true),
        "mixed" => (
            Ratios {
                get: 0.5,
                put: 0.5,
                ..r
            },
            true,
        ),
        _ => return None,
    };
    Some(KvParams {
        name: name.to_string(),
        ratios,
        key: KeyDist::Uniform,
        records: keys,
        value: ValueSize::Fixed(value_size),
        range: RangeLen::Fixed(10),
        key_prefix: String::new(),
        preload,
    })
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    name: Option<String>,
    #[serde(default = "default_keys")]
    keys: u64,
    #[serde(default)]
    key_prefix: String,
    preload: Option<bool>,
    mix: MixToml,
    #[serde(default)]
    key: KeyToml,
    value: Option<ValueToml>,
    range: Option<RangeToml>,
}

fn default_keys() -> u64 {
    1_000_000
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct MixToml {
    #[serde(default)]
    get: f64,
    #[serde(default)]
    put: f64,
    #[serde(default)]
    insert: f64,
    #[serde(default)]
    delete: f64,
    #[serde(default)]
    range: f64,
    #[serde(default)]
    rmw: f64,
}

#[derive(Deserialize, Debug, Default)]
#[serde(deny_unknown_fields)]
struct KeyToml {
    distribution: Option<String>,
    theta: Option<f64>,
    scrambled: Option<bool>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct ValueToml {
    size: String,
    bytes: Option<usize>,
    min: Option<usize>,
    max: Option<usize>,
    shape: Option<f64>,
    scale: Option<f64>,
}

#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct RangeToml {
    length: Option<u64>,
    min: Option<u64>,
    max: Option<u64>,
}

fn need<T>(v: Option<T>, what: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("{what} is required"))
}

fn key_dist(k: &KeyToml) -> Result<KeyDist, String> {
    let d = k.distribution.as_deref().unwrap_or("uniform");
    let theta = k.theta.unwrap_or(DEFAULT_THETA);
    let dist = match d {
        "uniform" | "sequential" => {
            if k.theta.is_some() || k.scrambled.is_some() {
                return Err(format!(
                    "[key]: `theta` and `scrambled` apply to zipfian and latest, not {d}"
                ));
            }
            if d == "uniform" {
                KeyDist::Uniform
            } else {
                KeyDist::Sequential
            }
        }
        "zipfian" => KeyDist::Zipfian {
            theta,
            scrambled: k.scrambled.unwrap_or(true),
        },
        "latest" => {
            if k.scrambled.is_some() {
                return Err("[key]: `scrambled` applies to zipfian, not latest".into());
            }
            KeyDist::Latest { theta }
        }
        other => {
            return Err(format!(
                "[key] distribution = {other:?}: expected \"uniform\", \"zipfian\", \"latest\" or \"sequential\""
            ))
        }
    };
    if let KeyDist::Zipfian { theta, .. } | KeyDist::Latest { theta } = dist {
        super::zipfian::check_theta(theta).map_err(|e| format!("[key]: {e}"))?;
    }
    Ok(dist)
}

fn value_size(v: &Option<ValueToml>) -> Result<ValueSize, String> {
    let Some(v) = v else {
        return Ok(ValueSize::Fixed(100));
    };
    let unused = |fields: &[(&str, bool)]| -> Result<(), String> {
        for (name, set) in fields {
            if *set {
                return Err(format!(
                    "[value]: `{name}` does not apply to size = {:?}",
                    v.size
                ));
            }
        }
        Ok(())
    };
    match v.size.as_str() {
        "fixed" => {
            unused(&[
                ("min", v.min.is_some()),
                ("max", v.max.is_some()),
                ("shape", v.shape.is_some()),
                ("scale", v.scale.is_some()),
            ])?;
            Ok(ValueSize::Fixed(need(
                v.bytes,
                "[value] size = \"fixed\": `bytes`",
            )?))
        }
        "uniform" => {
            unused(&[
                ("bytes", v.bytes.is_some()),
                ("shape", v.shape.is_some()),
                ("scale", v.scale.is_some()),
            ])?;
            ValueSize::uniform(
                need(v.min, "[value] size = \"uniform\": `min`")?,
                need(v.max, "[value] size = \"uniform\": `max`")?,
            )
            .map_err(|e| format!("[value]: {e}"))
        }
        "gamma" => {
            unused(&[
                ("bytes", v.bytes.is_some()),
                ("min", v.min.is_some()),
                ("max", v.max.is_some()),
            ])?;
            ValueSize::gamma(
                need(v.shape, "[value] size = \"gamma\": `shape`")?,
                need(v.scale, "[value] size = \"gamma\": `scale` (bytes)")?,
            )
            .map_err(|e| format!("[value]: {e}"))
        }
        other => Err(format!(
            "[value] size = {other:?}: expected \"fixed\", \"uniform\" or \"gamma\""
        )),
    }
}

fn range_len(r: &Option<RangeToml>) -> Result<RangeLen, String> {
    match r {
        None => Ok(RangeLen::Fixed(10)),
        Some(RangeToml {
            length: Some(n),
            min: None,
            max: None,
        }) => Ok(RangeLen::Fixed(*n)),
        Some(RangeToml {
            length: None,
            min: Some(a),
            max: Some(b),
        }) => Ok(RangeLen::Uniform { min: *a, max: *b }),
        Some(_) => Err(
            "[range]: give either `length = N` or both `min` and `max` (uniform lengths)".into(),
        ),
    }
}

/// Parse a TOML key-value mix.
pub fn parse_toml(s: &str) -> Result<KvParams, String> {
    let f: FileSpec = toml::from_str(s).map_err(|e| format!("workload TOML: {e}"))?;
    let ratios = Ratios {
        get: f.mix.get,
        put: f.mix.put,
        insert: f.mix.insert,
        delete: f.mix.delete,
        range: f.mix.range,
        rmw: f.mix.rmw,
    };
    let reads = ratios.get + ratios.range + ratios.rmw + ratios.delete > 0.0;
    Ok(KvParams {
        name: f.name.unwrap_or_else(|| "toml mix".into()),
        ratios,
        key: key_dist(&f.key)?,
        records: f.keys,
        value: value_size(&f.value)?,
        range: range_len(&f.range)?,
        key_prefix: f.key_prefix,
        preload: f.preload.unwrap_or(reads),
    })
}
