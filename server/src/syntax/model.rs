//! The `KernelModel`: what cutune knows about one CUDA source file.
//!
//! Plain data, no protocol types. Every item carries a [`Span`] so that later stages (templatize,
//! the editor) can point at exactly the text they talk about.

use serde::{Serialize, Serializer};

/// A 0-based line and a 0-based column counted in UTF-8 bytes, as tree-sitter reports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Point {
    pub line: u32,
    pub column: u32,
}

impl From<tree_sitter::Point> for Point {
    fn from(p: tree_sitter::Point) -> Self {
        Point { line: p.row as u32, column: p.column as u32 }
    }
}

/// A region of the source: byte offsets plus the matching points.
///
/// Serialised as `"L:C-L:C"`, 1-based with byte columns, the form a person reads in a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub start_byte: usize,
    pub end_byte: usize,
    pub start: Point,
    pub end: Point,
}

impl Span {
    pub fn of(node: tree_sitter::Node) -> Span {
        Span {
            start_byte: node.start_byte(),
            end_byte: node.end_byte(),
            start: node.start_position().into(),
            end: node.end_position().into(),
        }
    }

    /// From the start of `first` to the end of `last`.
    pub fn covering(first: tree_sitter::Node, last: tree_sitter::Node) -> Span {
        Span {
            start_byte: first.start_byte(),
            end_byte: last.end_byte(),
            start: first.start_position().into(),
            end: last.end_position().into(),
        }
    }

    pub fn contains_offset(&self, offset: usize) -> bool {
        self.start_byte <= offset && offset <= self.end_byte
    }

    pub fn contains(&self, other: &Span) -> bool {
        self.start_byte <= other.start_byte && other.end_byte <= self.end_byte
    }
}

impl std::fmt::Display for Span {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}-{}:{}",
            self.start.line + 1,
            self.start.column + 1,
            self.end.line + 1,
            self.end.column + 1
        )
    }
}

impl Serialize for Span {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// Everything found in one file. Built by [`super::analyze`]; never fails, even on broken input.
#[derive(Clone, Debug, Default, Serialize)]
pub struct KernelModel {
    pub kernels: Vec<Kernel>,
    pub device_functions: Vec<DeviceFunction>,
    pub launches: Vec<LaunchSite>,
    pub defines: Vec<Define>,
    pub tunables: Vec<TunableSite>,
    pub syntax_errors: Vec<SyntaxError>,
}

impl KernelModel {
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        // A definition wins over a prototype of the same kernel.
        self.kernels
            .iter()
            .find(|k| k.name == name && k.is_definition)
            .or_else(|| self.kernels.iter().find(|k| k.name == name))
    }

    pub fn launches_of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a LaunchSite> + 'a {
        self.launches.iter().filter(move |l| l.kernel == name)
    }

    pub fn tunables_of<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a TunableSite> + 'a {
        self.tunables.iter().filter(move |t| t.kernel.as_deref() == Some(name))
    }
}

/// A `__global__` function: a definition, or a prototype whose body lives elsewhere.
#[derive(Clone, Debug, Serialize)]
pub struct Kernel {
    pub name: String,
    /// The whole item, including a `template <...>` prefix and `extern "C"`.
    pub span: Span,
    pub name_span: Span,
    /// The declaration up to the body, whitespace folded.
    pub signature: String,
    pub is_definition: bool,
    pub extern_c: bool,
    pub template_params: Vec<TemplateParam>,
    pub params: Vec<Param>,
    pub launch_bounds: Option<LaunchBounds>,
    pub shared: Vec<SharedDecl>,
}

impl Kernel {
    /// Whether it is an explicit specialization of a kernel template (`template <> __global__
    /// void k<at::Half>(…)`): one instantiation of that kernel, written out, not a kernel of its
    /// own.
    pub fn is_explicit_specialization(&self) -> bool {
        self.signature.strip_prefix("template").is_some_and(|rest| rest.trim_start().starts_with("<>"))
    }

    /// Bytes of static (non-`extern`) shared memory, when every declaration has a constant size.
    pub fn static_shared_bytes(&self) -> Option<u64> {
        self.shared.iter().filter(|s| !s.is_extern).map(|s| s.bytes).sum()
    }
}

/// A `__device__` (or `__host__ __device__`) function.
#[derive(Clone, Debug, Serialize)]
pub struct DeviceFunction {
    pub name: String,
    pub span: Span,
    pub name_span: Span,
    pub signature: String,
    pub is_definition: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct TemplateParam {
    pub name: String,
    /// `typename`/`class`, or the value parameter's type (`int`, `unsigned`, ...).
    pub kind: TemplateParamKind,
    pub default: Option<String>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TemplateParamKind {
    Type,
    Value { ty: String, integer: bool },
}

#[derive(Clone, Debug, Serialize)]
pub struct Param {
    pub name: String,
    /// The declared type without the name, whitespace folded: `const float* __restrict__`.
    pub ty: String,
    /// The type with qualifiers and pointers stripped: `float`.
    pub base_type: String,
    pub pointer_depth: u8,
    /// `const` on the pointee (or on the value, for a non-pointer).
    pub is_const: bool,
    pub is_restrict: bool,
    pub span: Span,
}

#[derive(Clone, Debug, Serialize)]
pub struct LaunchBounds {
    pub max_threads: Expr,
    pub min_blocks: Option<Expr>,
    pub span: Span,
}

/// An expression kept as text, with its integer value when it is a compile-time constant.
#[derive(Clone, Debug, Serialize)]
pub struct Expr {
    pub text: String,
    pub span: Span,
    pub value: Option<i64>,
}

/// A `__shared__` declaration inside a kernel.
#[derive(Clone, Debug, Serialize)]
pub struct SharedDecl {
    pub name: String,
    pub element_type: String,
    /// Array dimensions, outermost first; empty for a scalar or an `extern` array.
    pub dims: Vec<Expr>,
    pub is_extern: bool,
    /// Total bytes, when the element size and every dimension are known.
    pub bytes: Option<u64>,
    pub span: Span,
}

/// `k<<<grid, block, smem, stream>>>(args)`.
#[derive(Clone, Debug, Serialize)]
pub struct LaunchSite {
    /// The kernel's name as written at the call, without template arguments.
    pub kernel: String,
    /// Whether that kernel is declared in this file; launches of kernels from other files are kept.
    pub resolved: bool,
    pub span: Span,
    pub callee_span: Span,
    pub template_args: Vec<Expr>,
    pub grid: LaunchDim,
    pub block: LaunchDim,
    pub shared_bytes: Option<Expr>,
    pub stream: Option<Expr>,
    pub args: Vec<String>,
    /// The host function the launch sits in.
    pub enclosing_function: Option<String>,
    /// The kernel's `__launch_bounds__` thread limit for this launch, with the launch's template
    /// arguments in place of the kernel's template parameters; `None` when unknown or unbounded.
    pub max_threads: Option<i64>,
}

/// A grid or block argument, with its extent when it is constant.
#[derive(Clone, Debug, Serialize)]
pub struct LaunchDim {
    pub text: String,
    pub span: Span,
    pub extent: Option<Dim3>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Dim3 {
    pub x: u64,
    pub y: u64,
    pub z: u64,
}

impl Dim3 {
    pub fn total(&self) -> u64 {
        self.x.saturating_mul(self.y).saturating_mul(self.z)
    }
}

impl std::fmt::Display for Dim3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.y, self.z) {
            (1, 1) => write!(f, "{}", self.x),
            (_, 1) => write!(f, "{}×{}", self.x, self.y),
            _ => write!(f, "{}×{}×{}", self.x, self.y, self.z),
        }
    }
}

/// An object-like `#define NAME value`.
#[derive(Clone, Debug, Serialize)]
pub struct Define {
    pub name: String,
    pub value_text: String,
    pub value: Option<i64>,
    pub span: Span,
    pub value_span: Option<Span>,
}

/// A place in the source whose value is an execution choice that tuning may change.
#[derive(Clone, Debug, Serialize)]
pub struct TunableSite {
    pub kind: TunableKind,
    /// The kernel this choice belongs to; `None` for a launch of a kernel from another file.
    pub kernel: Option<String>,
    pub span: Span,
    pub text: String,
    pub value: Option<i64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TunableKind {
    /// A literal or named constant in a launch's block argument.
    LaunchBlock,
    /// A literal in a launch's grid argument that follows the block size (`(n + 255) / 256`).
    GridFromBlock,
    /// An integer template argument at a launch: `k<256><<<...>>>`.
    LaunchTemplateArg,
    LaunchBoundsMaxThreads,
    LaunchBoundsMinBlocks,
    /// A `blockDim.x/y/z` read inside the kernel: the block size decided at runtime.
    BlockDim,
    /// A literal or named constant stride of a loop inside the kernel (`i += 256`).
    LoopStride,
    PragmaUnroll,
    /// A dimension of a `__shared__` array.
    SharedArrayDim,
    /// An integer (non-type) template parameter of the kernel.
    TemplateParam,
    /// An object-like `#define` with an integer value that the kernel or its launches use.
    Define,
}

impl TunableKind {
    pub fn describe(self) -> &'static str {
        match self {
            TunableKind::LaunchBlock => "block size at launch",
            TunableKind::GridFromBlock => "grid follows block size",
            TunableKind::LaunchTemplateArg => "template argument at launch",
            TunableKind::LaunchBoundsMaxThreads => "`__launch_bounds__` max threads",
            TunableKind::LaunchBoundsMinBlocks => "`__launch_bounds__` min blocks per SM",
            TunableKind::BlockDim => "`blockDim` use",
            TunableKind::LoopStride => "loop stride",
            TunableKind::PragmaUnroll => "`#pragma unroll`",
            TunableKind::SharedArrayDim => "shared array dimension",
            TunableKind::TemplateParam => "integer template parameter",
            TunableKind::Define => "`#define` constant",
        }
    }
}

/// A place where tree-sitter is certain the text does not parse.
#[derive(Clone, Debug, Serialize)]
pub struct SyntaxError {
    pub span: Span,
    pub message: String,
}
