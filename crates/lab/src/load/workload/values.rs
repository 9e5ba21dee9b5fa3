//! Value sizes: fixed, uniform, or gamma-distributed byte counts for PUTs.
//! Owns only the size of a value; must not build value bytes (the driver
//! sends bytes of that length) nor choose keys or operations.

use rand::Rng;
use rand_distr::{Distribution, Gamma};

/// How many bytes a written value has.
#[derive(Clone, Debug)]
pub enum ValueSize {
    Fixed(usize),
    /// Uniform over `[min, max]`, both inclusive.
    Uniform {
        min: usize,
        max: usize,
    },
    /// Gamma with this shape and scale, in bytes (mean shape × scale,
    /// variance shape × scale²), rounded to the nearest byte.
    Gamma {
        shape: f64,
        scale: f64,
        dist: Gamma<f64>,
    },
}

impl ValueSize {
    pub fn uniform(min: usize, max: usize) -> Result<ValueSize, String> {
        if min > max {
            return Err(format!("value size uniform: min {min} > max {max}"));
        }
        Ok(ValueSize::Uniform { min, max })
    }

    pub fn gamma(shape: f64, scale: f64) -> Result<ValueSize, String> {
        if !(shape > 0.0 && scale > 0.0 && shape.is_finite() && scale.is_finite()) {
            return Err(format!(
                "value size gamma: shape and scale must be positive, got shape {shape}, scale {scale}"
            ));
        }
        let dist = Gamma::new(shape, scale).map_err(|e| format!("value size gamma: {e}"))?;
        Ok(ValueSize::Gamma { shape, scale, dist })
    }

    #[inline]
    pub fn sample<R: Rng>(&self, rng: &mut R) -> usize {
        match self {
            ValueSize::Fixed(n) => *n,
            ValueSize::Uniform { min, max } => rng.random_range(*min..=*max),
            ValueSize::Gamma { dist, .. } => dist.sample(rng).round().max(0.0) as usize,
        }
    }

    /// The expected size in bytes.
    pub fn mean(&self) -> f64 {
        match self {
            ValueSize::Fixed(n) => *n as f64,
            ValueSize::Uniform { min, max } => (*min + *max) as f64 / 2.0,
            ValueSize::Gamma { shape, scale, .. } => shape * scale,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            ValueSize::Fixed(n) => format!("{n} B"),
            ValueSize::Uniform { min, max } => format!("uniform({min}..={max}) B"),
            ValueSize::Gamma { shape, scale, .. } => {
                format!(
                    "gamma(shape {shape}, scale {scale}; mean {:.0}) B",
                    shape * scale
                )
            }
        }
    }
}
