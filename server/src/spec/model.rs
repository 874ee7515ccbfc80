//! The tuning spec as plain data: what `cutune templatize` writes beside a `.cu` file and what
//! the tuner reads. The TOML layout is these types through serde; `docs/spec.md` documents it.
//!
//! Expressions (grid, block, lengths, restrictions, SOL) are kept as text here. They are
//! parsed and checked by the spec validator, which reports positions inside the TOML file.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A value that templatize could not infer. Validation reports every place that still holds it.
pub const UNKNOWN: &str = "?";

/// One spec file: every tuned kernel of one `.cu` file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecFile {
    /// Layout version; this is version 1.
    pub version: u32,
    /// The `.cu` file, relative to the spec file.
    pub source: String,
    pub kernels: Vec<KernelSpec>,
}

/// How to run, check and bound one kernel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelSpec {
    pub name: String,
    /// C++ template arguments of the instantiation to tune; may name parameters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub template_args: Vec<String>,
    /// Grid and block extents, 1 to 3 expressions over sizes and parameters.
    pub grid: Vec<String>,
    pub block: Vec<String>,
    /// Dynamic shared memory in bytes, an expression.
    #[serde(default = "zero")]
    pub shared_bytes: String,
    /// Launched as a cooperative grid (`cuLaunchCooperativeKernel`): the kernel synchronises
    /// its whole grid (`this_grid().sync()`), so all its blocks must be resident at once.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cooperative: bool,
    /// NVRTC options every configuration gets (e.g. `-std=c++17`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compiler_options: Vec<String>,
    /// Problem sizes: each shape names every size variable.
    pub shapes: Vec<Shape>,
    /// Sizes the program works out from others (`pairs = input.size(1) / 2`), each an
    /// expression over the shape's sizes: every shape, and every shape verification makes,
    /// gets its value from its own sizes, so the two never disagree. A shape that gives the
    /// size keeps its number (a captured launch's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub derived: BTreeMap<String, String>,
    /// What the spec has no number for yet, each with where the program makes it: sizes the
    /// expressions name that no shape gives (`x.numel()` in a PyTorch op), arguments whose
    /// value or length is `?`, and `grid` or `block` where an extent is `?`. `templatize` writes them, `check` says the reason with the error,
    /// and a shape or value that gives the number makes the entry moot.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: BTreeMap<String, String>,
    /// Sizes templatize chose because no program gives them (a kernel nothing launches yet),
    /// each with why. The shapes hold them, so the kernel tunes; `check` warns of each until the
    /// entry is deleted, once the shapes hold the sizes the program runs.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub chosen: BTreeMap<String, String>,
    /// The kernel's parameters, in signature order.
    pub args: Vec<ArgSpec>,
    /// Tuning parameters, in the order the search enumerates them.
    pub params: Vec<ParamSpec>,
    /// Boolean expressions over parameters and sizes; a configuration must satisfy all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub restrictions: Vec<String>,
    #[serde(default)]
    pub verify: VerifySpec,
    #[serde(default)]
    pub sol: SolSpec,
    /// Launches captured from the running program (`cutune profile`): each is measured and
    /// checked on the program's own data, besides the shapes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub captures: Vec<CaptureSpec>,
    pub baseline: Baseline,
}

impl KernelSpec {
    /// The buffers, scalars and textures the kernel is given, a struct's fields in its place.
    pub fn leaf_args(&self) -> impl Iterator<Item = &ArgSpec> {
        leaves(&self.args)
    }

    /// The parameters that choose how the kernel runs, not only how it is compiled: all but
    /// the compiler options, those with more than one value.
    pub fn execution_params(&self) -> impl Iterator<Item = &ParamSpec> {
        self.params.iter().filter(|p| !matches!(p.kind, ParamKind::FastMath | ParamKind::MaxRegisters) && p.values.len() > 1)
    }

    /// The shapes of the problems the kernel is measured on, in their order: the spec's
    /// shapes, then each captured launch's.
    pub fn problem_shapes(&self) -> impl Iterator<Item = &Shape> {
        self.shapes.iter().chain(self.captures.iter().map(|c| &c.shape))
    }
}

/// A captured launch: the file holding its arguments and buffers, relative to the spec, and
/// the sizes it ran with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaptureSpec {
    pub file: String,
    pub shape: Shape,
}

fn zero() -> String {
    "0".to_string()
}

/// Size variable name to value, e.g. `{ rows = 8192, hidden = 4096 }`.
pub type Shape = BTreeMap<String, i64>;

/// Sizes that are properties of the GPU, for programs that size their grid or their arguments
/// by it (`blocks = sm_count * threads_per_sm / block_size`, a spin of `ms * clock_khz`
/// cycles). A shape holds the H100 SXM's values, for checks made without a GPU; tuning sets the
/// measuring GPU's own ([`with_device_sizes`]).
pub const DEVICE_SIZES: [(&str, i64); 5] = [("sm_count", 132), ("threads_per_sm", 2048), ("shared_bytes_per_block_optin", 232_448), ("clock_khz", 1_980_000), ("l2_bytes", 52_428_800)];

/// A size of each configuration rather than of the problem: how many blocks of the
/// configuration one SM holds at once, as the occupancy calculator
/// (`cudaOccupancyMaxActiveBlocksPerMultiprocessor`) says for the compiled kernel, its block and
/// its dynamic shared memory. Programs size persistent and cooperative grids by it
/// (`blocks_per_sm * sm_count`). Before a configuration is compiled it stands at the most any
/// GPU allows for its block ([`blocks_per_sm_bound`]), so buffers it sizes are long enough.
pub const BLOCKS_PER_SM: &str = "blocks_per_sm";

/// Blocks per SM no GPU exceeds (every architecture since Maxwell).
const MOST_BLOCKS_PER_SM: i64 = 32;

/// The most blocks of `threads` threads an SM of `threads_per_sm` holds, whatever their
/// registers and shared memory: [`BLOCKS_PER_SM`] before the configuration is compiled.
pub fn blocks_per_sm_bound(threads: i64, threads_per_sm: i64) -> i64 {
    let warps = (threads.max(1) + 31) / 32;
    (threads_per_sm / 32 / warps).clamp(1, MOST_BLOCKS_PER_SM)
}

/// `kernel` with the [`DEVICE_SIZES`] its shapes name set to the given GPU's `sizes`; a size
/// of 0 (one the device did not report) leaves the shape's value.
pub fn with_device_sizes(kernel: &KernelSpec, sizes: &[(&str, i64)]) -> KernelSpec {
    let mut kernel = kernel.clone();
    for shape in &mut kernel.shapes {
        for &(name, value) in sizes {
            if let (Some(size), true) = (shape.get_mut(name), value > 0) {
                *size = value;
            }
        }
    }
    kernel
}

/// One kernel argument: a device buffer, a scalar passed by value, a texture, or a struct
/// passed by value whose members are buffers and scalars.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ArgSpec {
    pub name: String,
    /// Every argument but a struct has one ([`ArgSpec::dtype`]).
    #[serde(default, rename = "dtype", skip_serializing_if = "Option::is_none")]
    pub element: Option<Dtype>,
    /// Buffers: element count, an expression over sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<String>,
    /// Buffers: whether the kernel reads, writes or does both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// Buffers: how inputs are filled. Never zeros by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<Init>,
    /// Integer inputs whose values index an extent (`N0`, an expression over the sizes): on
    /// each shape they are drawn from `[0, extent)`, in place of `init`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub indexes: Option<String>,
    /// Scalars: the value, an expression over sizes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Outputs: how a candidate's output is compared with the original's; element by element
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compare: Option<Compare>,
    /// Texture objects (`cudaTextureObject_t`): the texture the tuner makes and passes, read
    /// only, filled as `init` says; `dtype` is the type of one channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub texture: Option<TextureSpec>,
    /// A struct passed by value (`ConvParams params`): its C++ type as the kernel's signature
    /// names it. Its members are laid out as the compiler lays them out; those `fields` does
    /// not name are zero.
    #[serde(default, rename = "struct", skip_serializing_if = "Option::is_none")]
    pub struct_type: Option<String>,
    /// A struct's members the kernel reads, each a buffer or a scalar named by its member
    /// (`x_ptr`, `shape.rows`, `strides[1]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<ArgSpec>,
    /// A struct's layout, from compiling the source ([`crate::tune::with_struct_layouts`]):
    /// not in the file, since the compiler decides it.
    #[serde(skip)]
    pub layout: Option<StructLayout>,
}

/// Where a struct's members lie, as the compiler lays them out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StructLayout {
    /// `sizeof` the struct.
    pub bytes: u64,
    /// Each field's offset and size in bytes, in the order of [`ArgSpec::fields`].
    pub fields: Vec<(u64, u64)>,
}

/// A texture object's data and how the kernel samples it, as the program sets it up
/// (`cudaMallocArray`, `cudaResourceDesc`, `cudaTextureDesc`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextureSpec {
    /// Texels along x, y, z: 1 to 3 expressions over the sizes. A layered texture's last
    /// extent is its number of layers; a cube map has 6 square faces (`[w, w, 6]`).
    pub extent: Vec<String>,
    #[serde(default)]
    pub layout: TextureLayout,
    /// Channels per texel: 1, 2 or 4 (`float4` is 4 channels of `f32`).
    #[serde(default = "one")]
    pub channels: u32,
    #[serde(default)]
    pub filter: TextureFilter,
    #[serde(default)]
    pub address: TextureAddress,
    /// Coordinates in [0, 1) rather than texels.
    #[serde(default)]
    pub normalized_coords: bool,
    #[serde(default)]
    pub read: TextureRead,
}

fn one() -> u32 {
    1
}

/// What holds a texture's texels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextureLayout {
    /// A CUDA array of 1 to 3 dimensions (`tex1D`, `tex2D`, `tex3D`).
    #[default]
    Array,
    /// A layered array: `tex1DLayered`, `tex2DLayered`; the last extent counts the layers.
    Layered,
    /// A cube map array of 6 faces (`texCubemap`).
    Cubemap,
    /// Plain device memory read with `tex1Dfetch`.
    Linear,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextureFilter {
    #[default]
    Point,
    Linear,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextureAddress {
    #[default]
    Clamp,
    Wrap,
    Mirror,
    Border,
}

/// Whether integer texels read as they are or as floats in [0, 1] (or [-1, 1] when signed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextureRead {
    #[default]
    Element,
    NormalizedFloat,
}

/// How an output is compared with the original kernel's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Compare {
    /// Element by element, each within the tolerance.
    #[default]
    Elements,
    /// By the sum of the elements written: per-block partial results (`out[blockIdx.x]`),
    /// which another block size partitions differently, though their sum is the same.
    Sum,
}

impl ArgSpec {
    /// The element type; a struct, which has none, counts as bytes.
    pub fn dtype(&self) -> Dtype {
        self.element.unwrap_or(Dtype::U8)
    }

    pub fn is_struct(&self) -> bool {
        self.struct_type.is_some()
    }

    pub fn is_buffer(&self) -> bool {
        self.length.is_some()
    }

    pub fn is_texture(&self) -> bool {
        self.texture.is_some()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    F16,
    Bf16,
    F32,
    F64,
    Fp8e4m3,
    Fp8e5m2,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
}

impl Dtype {
    /// The spec's name of the type (`f16`, `u8`), as written in a spec.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
            Dtype::F32 => "f32",
            Dtype::F64 => "f64",
            Dtype::Fp8e4m3 => "fp8e4m3",
            Dtype::Fp8e5m2 => "fp8e5m2",
            Dtype::I8 => "i8",
            Dtype::I16 => "i16",
            Dtype::I32 => "i32",
            Dtype::I64 => "i64",
            Dtype::U8 => "u8",
            Dtype::U16 => "u16",
            Dtype::U32 => "u32",
            Dtype::U64 => "u64",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Dtype::F16 | Dtype::Bf16 | Dtype::F32 | Dtype::F64 | Dtype::Fp8e4m3 | Dtype::Fp8e5m2)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Input,
    Output,
    InOut,
}

/// Seeded random initial data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
pub enum Init {
    Uniform { low: f64, high: f64 },
    Normal { mean: f64, std: f64 },
    /// Integers drawn from `[low, high)`, e.g. indices.
    Integers { low: i64, high: i64 },
    /// Mixed scales: uniform in `[-1, 1)` times `large` for a random half of the elements and
    /// times `small` for the other half (verification's adversarial inputs use it).
    Mixed { large: f64, small: f64 },
}

/// A tuning parameter and the values the search may give it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamSpec {
    pub name: String,
    pub kind: ParamKind,
    /// The original value: the default instantiation is the original kernel.
    pub default: i64,
    pub values: Vec<i64>,
    /// What the parameter was lifted from, for people reading the spec.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub origin: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ParamKind {
    /// `#ifndef NAME / #define NAME default / #endif` in the source; set with `-DNAME=value`.
    Define,
    /// An integer template parameter of the kernel, set through `template_args`.
    Template,
    /// `--use_fast_math` when 1.
    FastMath,
    /// `--maxrregcount=N` when N > 0.
    MaxRegisters,
    /// A value the host program chooses at run time (a block size passed down from `main`): it
    /// appears only in the spec's launch expressions, so changing it needs no recompile.
    Launch,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifySpec {
    /// Per-dtype overrides of the default tolerances.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerances: Vec<Tolerance>,
    /// False for kernels whose result order varies (float atomics): runs must then agree
    /// within tolerance instead of bitwise.
    #[serde(default = "yes")]
    pub deterministic: bool,
    /// The size variable along the contiguous dimension, which verification's generated shapes
    /// vary (1023, 4097, 50257, tails). Unset: the last size the kernel is given in the length
    /// of the largest buffer that names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contiguous: Option<String>,
}

fn yes() -> bool {
    true
}

impl Default for VerifySpec {
    fn default() -> Self {
        VerifySpec { tolerances: Vec::new(), deterministic: true, contiguous: None }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tolerance {
    pub dtype: Dtype,
    pub atol: f64,
    pub rtol: f64,
}

impl Dtype {
    /// The tolerance used when `verify.tolerances` does not name this dtype: an element passes
    /// when |got - want| <= atol + rtol * |want|. Looser for narrower formats (AutoKernel's
    /// per-dtype tolerances); integers must match exactly.
    pub fn default_tolerance(self) -> Tolerance {
        let (atol, rtol) = match self {
            Dtype::F16 => (1e-2, 1e-2),
            Dtype::Bf16 => (2e-2, 2e-2),
            Dtype::Fp8e4m3 | Dtype::Fp8e5m2 => (1e-1, 1e-1),
            Dtype::F32 => (1e-4, 1e-5),
            Dtype::F64 => (1e-8, 1e-8),
            Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64 | Dtype::U8 | Dtype::U16 | Dtype::U32 | Dtype::U64 => (0.0, 0.0),
        };
        Tolerance { dtype: self, atol, rtol }
    }
}

impl VerifySpec {
    /// The tolerance for `dtype`: the last override naming it, else the default.
    pub fn tolerance(&self, dtype: Dtype) -> Tolerance {
        self.tolerances.iter().rev().find(|t| t.dtype == dtype).cloned().unwrap_or_else(|| dtype.default_tolerance())
    }
}

/// The work of one launch, for the speed-of-light bound (see `docs/sol.md`). Missing bytes
/// mean every buffer moved once; missing flops mean none.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flops: Option<String>,
    /// Which arithmetic rate bounds `flops`; FP32 when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute: Option<SolCompute>,
}

/// The arithmetic a kernel's flops are done in, which picks the device's rate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SolCompute {
    /// Scalar `float` FMA.
    #[default]
    Fp32,
    /// Packed `half2` FMA.
    Fp16,
}

impl SolCompute {
    pub fn as_str(self) -> &'static str {
        match self {
            SolCompute::Fp32 => "fp32",
            SolCompute::Fp16 => "fp16",
        }
    }
}

/// The original kernel, kept as the verification baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    /// SHA-256 of `source`, hex.
    pub sha256: String,
    /// The original device slice: compiles on its own with NVRTC.
    pub source: String,
}

/// The buffers, scalars and textures of `args`, a struct's fields in its place.
pub fn leaves(args: &[ArgSpec]) -> impl Iterator<Item = &ArgSpec> {
    args.iter().flat_map(|arg| if arg.is_struct() { arg.fields.as_slice() } else { std::slice::from_ref(arg) })
}

/// [`leaves`], to change them.
pub fn leaves_mut(args: &mut [ArgSpec]) -> impl Iterator<Item = &mut ArgSpec> {
    args.iter_mut().flat_map(|arg| if arg.is_struct() { arg.fields.iter_mut() } else { std::slice::from_mut(arg).iter_mut() })
}
