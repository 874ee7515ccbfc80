//! Host-side data: checking the spec's distributions, scalars packed as kernel parameters, and
//! reading elements back. No CUDA here, so all of it is tested on machines without a GPU.

use half::{bf16, f16};

use crate::spec::{Dtype, Init};

/// Bytes per element, as the kernel sees them.
pub fn element_bytes(dtype: Dtype) -> usize {
    match dtype {
        Dtype::Fp8e4m3 | Dtype::Fp8e5m2 | Dtype::I8 | Dtype::U8 => 1,
        Dtype::F16 | Dtype::Bf16 | Dtype::I16 | Dtype::U16 => 2,
        Dtype::F32 | Dtype::I32 | Dtype::U32 => 4,
        Dtype::F64 | Dtype::I64 | Dtype::U64 => 8,
    }
}

/// Checks that `init` describes a distribution, in words a spec author understands. The device
/// draws the data (see `gpu/harness.cu`).
pub fn check_init(init: &Init) -> Result<(), String> {
    match *init {
        Init::Uniform { low, high } if !(low.is_finite() && high.is_finite() && low <= high) => {
            Err(format!("uniform init needs finite low ≤ high, got low={low} high={high}"))
        }
        Init::Normal { mean, std } if !(mean.is_finite() && std.is_finite() && std >= 0.0) => {
            Err(format!("normal init needs a finite mean and std ≥ 0, got mean={mean} std={std}"))
        }
        Init::Integers { low, high } if low >= high => Err(format!("integers init draws from [low, high), so it needs low < high, got low={low} high={high}")),
        Init::Mixed { large, small } if !(large.is_finite() && small.is_finite()) => Err(format!("mixed init needs finite scales, got large={large} small={small}")),
        _ => Ok(()),
    }
}

/// Appends `value` as one element of `dtype`: floats round to nearest (fp8 saturates at its
/// largest finite value, as CUDA's `__NV_SATFINITE` conversions do), integers round to nearest
/// and saturate at the type's range.
pub fn encode(dtype: Dtype, value: f64, out: &mut Vec<u8>) {
    match dtype {
        Dtype::F16 => out.extend(f16::from_f64(value).to_le_bytes()),
        Dtype::Bf16 => out.extend(bf16::from_f64(value).to_le_bytes()),
        Dtype::F32 => out.extend((value as f32).to_le_bytes()),
        Dtype::F64 => out.extend(value.to_le_bytes()),
        Dtype::Fp8e4m3 => out.push(E4M3.encode(value)),
        Dtype::Fp8e5m2 => out.push(E5M2.encode(value)),
        // `as` from f64 saturates at the target's range (NaN becomes 0).
        Dtype::I8 => out.extend((value.round() as i8).to_le_bytes()),
        Dtype::I16 => out.extend((value.round() as i16).to_le_bytes()),
        Dtype::I32 => out.extend((value.round() as i32).to_le_bytes()),
        Dtype::I64 => out.extend((value.round() as i64).to_le_bytes()),
        Dtype::U8 => out.push(value.round() as u8),
        Dtype::U16 => out.extend((value.round() as u16).to_le_bytes()),
        Dtype::U32 => out.extend((value.round() as u32).to_le_bytes()),
        Dtype::U64 => out.extend((value.round() as u64).to_le_bytes()),
    }
}

/// One element of `dtype` from the start of `bytes` (which holds at least one element).
pub fn decode(dtype: Dtype, bytes: &[u8]) -> Element {
    fn take<const N: usize>(bytes: &[u8]) -> [u8; N] {
        let mut array = [0; N];
        array.copy_from_slice(&bytes[..N]);
        array
    }
    match dtype {
        Dtype::F16 => Element::Float(f16::from_le_bytes(take(bytes)).to_f64()),
        Dtype::Bf16 => Element::Float(bf16::from_le_bytes(take(bytes)).to_f64()),
        Dtype::F32 => Element::Float(f32::from_le_bytes(take(bytes)) as f64),
        Dtype::F64 => Element::Float(f64::from_le_bytes(take(bytes))),
        Dtype::Fp8e4m3 => Element::Float(E4M3.decode(bytes[0])),
        Dtype::Fp8e5m2 => Element::Float(E5M2.decode(bytes[0])),
        Dtype::I8 => Element::Int(i8::from_le_bytes(take(bytes)) as i128),
        Dtype::I16 => Element::Int(i16::from_le_bytes(take(bytes)) as i128),
        Dtype::I32 => Element::Int(i32::from_le_bytes(take(bytes)) as i128),
        Dtype::I64 => Element::Int(i64::from_le_bytes(take(bytes)) as i128),
        Dtype::U8 => Element::Int(bytes[0] as i128),
        Dtype::U16 => Element::Int(u16::from_le_bytes(take(bytes)) as i128),
        Dtype::U32 => Element::Int(u32::from_le_bytes(take(bytes)) as i128),
        Dtype::U64 => Element::Int(u64::from_le_bytes(take(bytes)) as i128),
    }
}

/// An element read back: integers stay exact for comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Element {
    Float(f64),
    Int(i128),
}

impl Element {
    pub fn as_f64(self) -> f64 {
        match self {
            Element::Float(x) => x,
            Element::Int(i) => i as f64,
        }
    }
}

/// A scalar kernel argument as the bytes of one parameter slot (little-endian, zero-padded to
/// 8 bytes; the driver reads as many bytes as the kernel's parameter has). Integers must be
/// whole and in range, so that the kernel sees exactly the value the spec gave.
pub fn pack_scalar(name: &str, dtype: Dtype, value: f64) -> Result<u64, String> {
    if !dtype.is_float() {
        let (min, max) = integer_range(dtype);
        if value.fract() != 0.0 || !(min..=max).contains(&value) {
            return Err(format!("scalar `{name}` is {value}, which is not a whole number in the range of {dtype:?}"));
        }
    }
    let mut bytes = Vec::with_capacity(8);
    encode(dtype, value, &mut bytes);
    let mut slot = [0u8; 8];
    for (slot_byte, byte) in slot.iter_mut().zip(bytes) {
        *slot_byte = byte;
    }
    Ok(u64::from_le_bytes(slot))
}

fn integer_range(dtype: Dtype) -> (f64, f64) {
    match dtype {
        Dtype::I8 => (i8::MIN as f64, i8::MAX as f64),
        Dtype::I16 => (i16::MIN as f64, i16::MAX as f64),
        Dtype::I32 => (i32::MIN as f64, i32::MAX as f64),
        Dtype::I64 => (i64::MIN as f64, i64::MAX as f64),
        Dtype::U8 => (0.0, u8::MAX as f64),
        Dtype::U16 => (0.0, u16::MAX as f64),
        Dtype::U32 => (0.0, u32::MAX as f64),
        Dtype::U64 => (0.0, u64::MAX as f64),
        _ => (f64::NEG_INFINITY, f64::INFINITY),
    }
}

/// An 8-bit float layout: 1 sign bit, `exponent_bits`, `mantissa_bits`.
struct Minifloat {
    exponent_bits: u32,
    mantissa_bits: u32,
    bias: i32,
    /// E5M2 reserves its top exponent for infinities and NaNs as IEEE does; E4M3 ("FN") has no
    /// infinities and only `S.1111.111` is NaN, which buys it one more binade of finite values.
    ieee_specials: bool,
}

/// `__nv_fp8_e4m3`: largest finite value 448.
const E4M3: Minifloat = Minifloat { exponent_bits: 4, mantissa_bits: 3, bias: 7, ieee_specials: false };
/// `__nv_fp8_e5m2`: largest finite value 57344.
const E5M2: Minifloat = Minifloat { exponent_bits: 5, mantissa_bits: 2, bias: 15, ieee_specials: true };

impl Minifloat {
    const NAN: u8 = 0x7F;

    /// The code of the largest finite magnitude, without the sign bit.
    fn max_code(&self) -> u8 {
        let top_exponent = (1u8 << self.exponent_bits) - 1;
        if self.ieee_specials {
            ((top_exponent - 1) << self.mantissa_bits) | ((1 << self.mantissa_bits) - 1)
        } else {
            (top_exponent << self.mantissa_bits) | ((1 << self.mantissa_bits) - 2)
        }
    }

    fn decode(&self, code: u8) -> f64 {
        let sign = if code & 0x80 != 0 { -1.0 } else { 1.0 };
        let exponent = ((code & 0x7F) >> self.mantissa_bits) as i32;
        let mantissa = (code & ((1 << self.mantissa_bits) - 1)) as i32;
        let top_exponent = (1 << self.exponent_bits) - 1;
        if self.ieee_specials && exponent == top_exponent {
            return if mantissa == 0 { sign * f64::INFINITY } else { f64::NAN };
        }
        if !self.ieee_specials && code & 0x7F == 0x7F {
            return f64::NAN;
        }
        let step = 1 << self.mantissa_bits;
        let magnitude = if exponent == 0 {
            mantissa as f64 * 2f64.powi(1 - self.bias - self.mantissa_bits as i32)
        } else {
            (step + mantissa) as f64 * 2f64.powi(exponent - self.bias - self.mantissa_bits as i32)
        };
        sign * magnitude
    }

    /// Round to nearest, ties to even; magnitudes above the largest finite value saturate.
    fn encode(&self, value: f64) -> u8 {
        if value.is_nan() {
            return Self::NAN;
        }
        let sign = if value.is_sign_negative() { 0x80 } else { 0 };
        let magnitude = value.abs();
        let max_code = self.max_code();
        if magnitude >= self.decode(max_code) {
            return sign | max_code;
        }
        let min_normal_exponent = 1 - self.bias;
        // The binade of `magnitude`, read from its f64 exponent bits (exact, unlike log2).
        let binade = ((magnitude.to_bits() >> 52) & 0x7FF) as i32 - 1023;
        let exponent = binade.max(min_normal_exponent);
        let quantum = 2f64.powi(exponent - self.mantissa_bits as i32);
        // Scaling by a power of two is exact, so this rounds `magnitude` once.
        let steps = (magnitude / quantum).round_ties_even() as u32;
        let step = 1u32 << self.mantissa_bits;
        let code = if steps < step {
            // Subnormal (or zero): only reachable in the lowest binade.
            steps
        } else {
            // `steps` may have rounded up to 2 * step: that is the next binade's first value,
            // and the arithmetic below lands on its code exactly.
            (((exponent - min_normal_exponent + 1) as u32) << self.mantissa_bits) + (steps - step)
        };
        sign | (code.min(max_code as u32) as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_distributions_are_refused_in_words() {
        assert!(check_init(&Init::Integers { low: 3, high: 3 }).unwrap_err().contains("low < high"));
        assert!(check_init(&Init::Uniform { low: 1.0, high: 0.0 }).unwrap_err().contains("low ≤ high"));
        assert!(check_init(&Init::Uniform { low: 0.0, high: f64::INFINITY }).unwrap_err().contains("finite"));
        assert!(check_init(&Init::Normal { mean: 0.0, std: -1.0 }).unwrap_err().contains("std ≥ 0"));
        assert!(check_init(&Init::Uniform { low: 1.0, high: 1.0 }).is_ok());
        assert!(check_init(&Init::Integers { low: -2, high: 2 }).is_ok());
    }

    fn round_trip(dtype: Dtype, value: f64) -> f64 {
        let mut bytes = Vec::new();
        encode(dtype, value, &mut bytes);
        assert_eq!(bytes.len(), element_bytes(dtype));
        decode(dtype, &bytes).as_f64()
    }

    #[test]
    fn half_formats_round_trip_known_values() {
        assert_eq!(round_trip(Dtype::F16, 1.5), 1.5);
        assert_eq!(round_trip(Dtype::F16, 65504.0), 65504.0);
        assert_eq!(round_trip(Dtype::F16, 1.0 + 1.0 / 4096.0), 1.0); // below half an f16 step
        assert_eq!(round_trip(Dtype::Bf16, -2.0), -2.0);
        assert_eq!(round_trip(Dtype::Bf16, 1.0 + 1.0 / 256.0), 1.0); // ties to even
        assert_eq!(round_trip(Dtype::Bf16, std::f64::consts::PI), 3.140625);
    }

    #[test]
    fn fp8_e4m3_matches_the_cuda_format() {
        let code = |v: f64| {
            let mut bytes = Vec::new();
            encode(Dtype::Fp8e4m3, v, &mut bytes);
            bytes[0]
        };
        assert_eq!(code(1.0), 0x38);
        assert_eq!(code(-2.0), 0xC0);
        assert_eq!(code(448.0), 0x7E);
        assert_eq!(code(1.0e6), 0x7E); // saturates, never NaN
        assert_eq!(code(-1.0e6), 0xFE);
        assert_eq!(code(2f64.powi(-9)), 0x01); // smallest subnormal
        assert_eq!(code(2f64.powi(-6)), 0x08); // smallest normal
        assert_eq!(code(1.0625), 0x38); // halfway between 1 and 1.125: ties to even
        assert_eq!(code(1.1875), 0x3A); // halfway between 1.125 and 1.25: ties to even
        assert_eq!(code(0.0), 0x00);
        assert_eq!(code(f64::NAN), 0x7F);
        assert!(decode(Dtype::Fp8e4m3, &[0x7F]).as_f64().is_nan());
        assert!(decode(Dtype::Fp8e4m3, &[0xFF]).as_f64().is_nan());
        assert_eq!(decode(Dtype::Fp8e4m3, &[0x7E]).as_f64(), 448.0);
        // Every finite code survives a round trip.
        for byte in 0..=255u8 {
            let value = decode(Dtype::Fp8e4m3, &[byte]).as_f64();
            if !value.is_nan() {
                assert_eq!(code(value), byte, "code {byte:#04x} = {value}");
            }
        }
    }

    #[test]
    fn fp8_e5m2_matches_the_cuda_format() {
        let code = |v: f64| {
            let mut bytes = Vec::new();
            encode(Dtype::Fp8e5m2, v, &mut bytes);
            bytes[0]
        };
        assert_eq!(code(1.0), 0x3C);
        assert_eq!(code(57344.0), 0x7B);
        assert_eq!(code(f64::INFINITY), 0x7B); // saturates
        assert_eq!(code(2f64.powi(-16)), 0x01);
        assert_eq!(code(1.125), 0x3C); // halfway between 1 and 1.25: ties to even
        assert_eq!(decode(Dtype::Fp8e5m2, &[0x7C]).as_f64(), f64::INFINITY);
        assert!(decode(Dtype::Fp8e5m2, &[0xFF]).as_f64().is_nan());
        for byte in 0..=255u8 {
            let value = decode(Dtype::Fp8e5m2, &[byte]).as_f64();
            if value.is_finite() {
                assert_eq!(code(value), byte, "code {byte:#04x} = {value}");
            }
        }
    }

    #[test]
    fn scalars_are_packed_exactly_or_refused() {
        assert_eq!(pack_scalar("n", Dtype::I32, -1.0).unwrap(), 0xFFFF_FFFF);
        assert_eq!(pack_scalar("n", Dtype::U64, 4096.0).unwrap(), 4096);
        assert_eq!(pack_scalar("eps", Dtype::F32, 1.0).unwrap(), 1.0f32.to_bits() as u64);
        assert_eq!(pack_scalar("eps", Dtype::F16, 1.0).unwrap(), 0x3C00);
        assert!(pack_scalar("n", Dtype::I32, 1.5).unwrap_err().contains("`n` is 1.5"));
        assert!(pack_scalar("n", Dtype::U8, 256.0).is_err());
        assert!(pack_scalar("n", Dtype::U32, -1.0).is_err());
    }
}
