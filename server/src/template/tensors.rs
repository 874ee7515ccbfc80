//! PyTorch tensors in host code: the sizes a binding reads from a tensor (`x.size(0)`,
//! `x.numel()`) and the shapes code makes tensors with (`torch::empty({n, d})`,
//! `torch::zeros_like(x)`), so that a size read from a tensor has the number its maker gave it.

use crate::syntax::is_identifier;

/// What a size read from a tensor asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SizeRead {
    /// `size(k)`, `sizes()[k]`, `shape[k]`; negative from the last.
    Dim(i64),
    Numel,
    /// `stride(k)` of a contiguous tensor.
    Stride(i64),
    /// `dim()`, `ndimension()`.
    Rank,
}

/// The dimension `k` names in a tensor of `rank` dimensions (`-1` the last), if it has it.
pub(super) fn dim_index(k: i64, rank: usize) -> Option<usize> {
    usize::try_from(if k < 0 { rank as i64 + k } else { k }).ok().filter(|&k| k < rank)
}

impl SizeRead {
    /// Its value for a tensor of `dims`.
    pub(super) fn of(self, dims: &[i64]) -> Option<i64> {
        let at = |k: i64| dim_index(k, dims.len());
        match self {
            SizeRead::Dim(k) => dims.get(at(k)?).copied(),
            SizeRead::Numel => dims.iter().try_fold(1i64, |p, d| p.checked_mul(*d)),
            SizeRead::Stride(k) => dims[at(k)? + 1..].iter().try_fold(1i64, |p, d| p.checked_mul(*d)),
            SizeRead::Rank => i64::try_from(dims.len()).ok(),
        }
    }

    /// Whether it reads the dimension `k` of a tensor of `rank` dimensions.
    pub(super) fn is_dim(self, k: usize, rank: usize) -> bool {
        matches!(self, SizeRead::Dim(d) if dim_index(d, rank) == Some(k))
    }

    /// The size name it is in a spec, for `tensor`: `x_size_0`, `x_size_m1` (the last),
    /// `x_numel`, `x_stride_0`, `x_dim`.
    pub(super) fn name(self, tensor: &str) -> String {
        let index = |k: i64| if k < 0 { format!("m{}", -k) } else { k.to_string() };
        match self {
            SizeRead::Dim(k) => format!("{tensor}_size_{}", index(k)),
            SizeRead::Numel => format!("{tensor}_numel"),
            SizeRead::Stride(k) => format!("{tensor}_stride_{}", index(k)),
            SizeRead::Rank => format!("{tensor}_dim"),
        }
    }

    /// The read as C++ writes it: `x.size(0)`, `x.numel()`, `x.stride(1)`, `x.dim()`.
    pub(super) fn call(self, tensor: &str) -> String {
        match self {
            SizeRead::Dim(k) => format!("{tensor}.size({k})"),
            SizeRead::Numel => format!("{tensor}.numel()"),
            SizeRead::Stride(k) => format!("{tensor}.stride({k})"),
            SizeRead::Rank => format!("{tensor}.dim()"),
        }
    }
}

/// The tensor and the read a size name of [`SizeRead::name`] stands for.
pub(super) fn named_read(name: &str) -> Option<(&str, SizeRead)> {
    let index = |k: &str| match k.strip_prefix('m') {
        Some(k) => k.parse::<i64>().ok().map(|k| -k),
        None => k.parse::<i64>().ok(),
    };
    let (tensor, read) = if let Some((t, k)) = name.rsplit_once("_size_") {
        (t, SizeRead::Dim(index(k)?))
    } else if let Some((t, k)) = name.rsplit_once("_stride_") {
        (t, SizeRead::Stride(index(k)?))
    } else if let Some(t) = name.strip_suffix("_numel") {
        (t, SizeRead::Numel)
    } else {
        (name.strip_suffix("_dim")?, SizeRead::Rank)
    };
    is_identifier(tensor).then_some((tensor, read))
}

/// Each size read from a tensor in `text` (`x.size(0)`, `x.sizes()[1]`, `x.shape[0]`,
/// `x.numel()`, `x.stride(-1)`, `x.dim()`) replaced by what `value` gives for it, where it
/// gives something.
pub(super) fn replace_size_reads(text: &str, value: impl Fn(&str, SizeRead) -> Option<String>) -> String {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(dot) = rest.find('.') {
        let start = rest[..dot].rfind(|c: char| !is_word(c)).map_or(0, |i| i + 1);
        let tensor = &rest[start..dot];
        let before = if start == 0 { out.as_str() } else { &rest[..start] };
        let member_of_another = before.ends_with('.') || before.ends_with("->");
        match read_after(&rest[dot + 1..]).filter(|_| is_identifier(tensor) && !member_of_another) {
            Some((read, length)) => match value(tensor, read) {
                Some(v) => {
                    out.push_str(&rest[..start]);
                    out.push_str(&v);
                    rest = &rest[dot + 1 + length..];
                }
                None => {
                    out.push_str(&rest[..dot + 1 + length]);
                    rest = &rest[dot + 1 + length..];
                }
            },
            None => {
                out.push_str(&rest[..=dot]);
                rest = &rest[dot + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The read of the whole `text`, when it is one: `x.size(0)` → (`x`, `Dim(0)`).
pub(super) fn size_read(text: &str) -> Option<(&str, SizeRead)> {
    let text = text.trim();
    let (tensor, rest) = text.split_once('.')?;
    let (read, length) = read_after(rest)?;
    (is_identifier(tensor) && rest[length..].trim().is_empty()).then_some((tensor, read))
}

/// The read at the start of `text` (what follows a tensor's dot), with the bytes it takes.
fn read_after(text: &str) -> Option<(SizeRead, usize)> {
    let method_end = text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(text.len());
    let method = &text[..method_end];
    let after = &text[method_end..];
    let spaces = after.len() - after.trim_start().len();
    let after = after.trim_start();
    let index = |s: &str| s.split_whitespace().collect::<String>().parse::<i64>().ok();
    // `(k)` or `()`, `[k]`: the argument and the bytes up to the closing bracket.
    let bracketed = |open: char, close: char| -> Option<(&str, usize)> {
        let inner = after.strip_prefix(open)?;
        let end = inner.find(close)?;
        Some((&inner[..end], method_end + spaces + end + 2))
    };
    match method {
        "size" | "stride" => {
            let (arg, length) = bracketed('(', ')')?;
            let k = index(arg)?;
            Some((if method == "size" { SizeRead::Dim(k) } else { SizeRead::Stride(k) }, length))
        }
        "numel" | "dim" | "ndimension" => {
            let (arg, length) = bracketed('(', ')')?;
            arg.trim().is_empty().then_some((if method == "numel" { SizeRead::Numel } else { SizeRead::Rank }, length))
        }
        "sizes" => {
            let (arg, called) = bracketed('(', ')')?;
            let indexed = text[called..].trim_start();
            let skipped = text[called..].len() - indexed.len();
            let inner = indexed.strip_prefix('[').filter(|_| arg.trim().is_empty())?;
            let end = inner.find(']')?;
            Some((SizeRead::Dim(index(&inner[..end])?), called + skipped + end + 2))
        }
        "shape" => {
            let (arg, length) = bracketed('[', ']')?;
            Some((SizeRead::Dim(index(arg)?), length))
        }
        _ => None,
    }
}

/// How host code makes a tensor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum MadeTensor {
    /// Of these dimensions: `torch::empty({n, d}, options)`.
    Dims(Vec<String>),
    /// Of another tensor's shape: `torch::zeros_like(x)`, `x.clone()`, `x.to(device)`.
    Like(String),
    /// The leading part of another tensor: `a.index({Slice(None, m), Slice()})` (Python's
    /// `a[:m, :]`), each sliced dimension's new extent, `None` where it is whole.
    Sliced(String, Vec<Option<String>>),
    /// Another tensor's dimensions in another order: `v.transpose(-2, -1)` swaps two, `x.t()`
    /// the two of a matrix, `q.permute({0, 2, 1, 3})` takes each from the index given;
    /// `x.unsqueeze(0)` adds one of extent 1.
    Reordered(String, Reorder),
    /// A tuple of sizes made by a script's `_pair(x)` (`_single`, `_triple`): the shape `x`
    /// is, where it is one (a tuple written as a tensor of that shape), else `x` that many times.
    Repeated(String, usize),
}

/// How [`MadeTensor::Reordered`] orders the dimensions; negative indices count from the last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Reorder {
    Swap(i64, i64),
    Permute(Vec<i64>),
    /// A dimension of extent 1 inserted at the index (of the new rank).
    Unsqueeze(i64),
    /// The dimension at the index taken away: reduced over (`x.mean(1)`) or squeezed.
    Remove(i64),
}

impl Reorder {
    /// `dims` in this order, if the indices name dimensions they have.
    pub(super) fn of(&self, mut dims: Vec<String>) -> Option<Vec<String>> {
        let rank = dims.len();
        match self {
            Reorder::Swap(a, b) => {
                dims.swap(dim_index(*a, rank)?, dim_index(*b, rank)?);
                Some(dims)
            }
            Reorder::Permute(order) if order.len() == rank => order.iter().map(|k| dims.get(dim_index(*k, rank)?).cloned()).collect(),
            Reorder::Permute(_) => None,
            Reorder::Unsqueeze(k) => {
                dims.insert(dim_index(*k, rank + 1)?, "1".to_string());
                Some(dims)
            }
            Reorder::Remove(k) => {
                dims.remove(dim_index(*k, rank)?);
                Some(dims)
            }
        }
    }
}

/// The dimensions of a tensor sliced from the start to `extents` (`None` where whole), from the
/// dimensions `whole` of the tensor it is sliced from.
pub(super) fn sliced_dims(extents: &[Option<String>], whole: Vec<String>) -> Vec<String> {
    whole.into_iter().enumerate().map(|(k, dim)| extents.get(k).cloned().flatten().unwrap_or(dim)).collect()
}

/// The factories that make a tensor of a shape given first (`torch::zeros({B, nh, N})`).
const SHAPED: [&str; 7] = ["empty", "zeros", "ones", "full", "randn", "rand", "empty_strided"];
/// Those that make one of another's shape.
const LIKE: [&str; 6] = ["empty_like", "zeros_like", "ones_like", "full_like", "randn_like", "rand_like"];
/// Methods that give a tensor of the same shape.
const SAME_SHAPE: [&str; 10] = ["clone", "contiguous", "to", "cuda", "half", "float", "bfloat16", "detach", "type", "copy"];

/// How `value` (the text a tensor variable is given) makes it, when it is one of the ways
/// cutune reads.
pub(super) fn made_tensor(value: &str) -> Option<MadeTensor> {
    let value = value.trim();
    if let Some(reordered) = reordered(value) {
        return Some(reordered);
    }
    let open = value.find('(')?;
    let callee = value[..open].trim();
    let args_text = value[open + 1..].trim_end().strip_suffix(')')?;
    let function = callee.rsplit("::").next()?;
    if let Some(times) = crate::syntax::python::TUPLE_HELPERS.iter().position(|helper| callee == *helper) {
        return Some(MadeTensor::Repeated(args_text.trim().to_string(), times + 1));
    }
    let namespaced = ["torch::", "at::"].iter().any(|ns| callee.starts_with(ns)) && callee.split("::").count() == 2;
    if namespaced && SHAPED.contains(&function) {
        // `at::empty(x.sizes(), x.options())`: the shape of `x`.
        let first = super::host::split_args(args_text).into_iter().next()?;
        if let Some(other) = first.strip_suffix("()").and_then(|f| f.trim_end().strip_suffix(".sizes")).map(str::trim).filter(|o| is_identifier(o)) {
            return Some(MadeTensor::Like(other.to_string()));
        }
        let dims = args_text.trim_start().strip_prefix('{')?;
        let end = dims.find('}')?;
        let dims: Vec<String> = super::host::split_args(&dims[..end]).into_iter().map(|d| d.trim().to_string()).filter(|d| !d.is_empty()).collect();
        return (!dims.is_empty()).then_some(MadeTensor::Dims(dims));
    }
    if namespaced && LIKE.contains(&function) {
        let first = super::host::split_args(args_text).into_iter().next()?;
        return is_identifier(first.trim()).then(|| MadeTensor::Like(first.trim().to_string()));
    }
    let (object, method) = callee.rsplit_once('.')?;
    let object = object.trim().to_string();
    if !is_identifier(&object) {
        return None;
    }
    if method.trim() == "index" {
        let items = args_text.trim().strip_prefix('{')?.strip_suffix('}')?;
        let extents = super::host::split_args(items).iter().map(|item| slice_extent(item)).collect::<Option<Vec<_>>>()?;
        return Some(MadeTensor::Sliced(object, extents));
    }
    SAME_SHAPE.contains(&method.trim()).then_some(MadeTensor::Like(object))
}

/// `value` when it reorders a tensor's dimensions (`v.transpose(-2, -1)`, `x.t()`,
/// `q.permute({0, 2, 1, 3})`): of a tensor named, or of one made in place
/// (`(torch::randn({B, H, N, D})).transpose(-2, -1)`, a script's helper read where it is called),
/// whose dimensions it reorders at once.
fn reordered(value: &str) -> Option<MadeTensor> {
    let args_start = value.strip_suffix(')').and_then(|v| matching_open(v, v.len()))?;
    let (object, method) = value[..args_start].rsplit_once('.')?;
    let args = &value[args_start + 1..value.len() - 1];
    let integers = super::host::split_args(args.trim().trim_start_matches('{').trim_end_matches('}')).iter().map(|a| a.trim().parse::<i64>().ok()).collect::<Option<Vec<i64>>>();
    let order = match (method.trim(), integers.as_deref()) {
        ("transpose" | "swapaxes" | "swapdims", Some(&[a, b])) => Reorder::Swap(a, b),
        ("t", _) if args.trim().is_empty() => Reorder::Swap(0, 1),
        ("permute", Some(order)) if !order.is_empty() => Reorder::Permute(order.to_vec()),
        ("unsqueeze", Some(&[k])) => Reorder::Unsqueeze(k),
        ("sum" | "mean" | "amax" | "amin" | "prod" | "var" | "std" | "norm" | "logsumexp" | "argmax" | "argmin" | "squeeze", Some(&[k])) => Reorder::Remove(k),
        _ => return None,
    };
    let object = object.trim();
    if is_identifier(object) {
        return Some(MadeTensor::Reordered(object.to_string(), order));
    }
    // `(made)` parenthesised whole, not `(made).sum(-1)`.
    let whole = object.ends_with(')') && matching_open(object, object.len() - 1) == Some(0);
    let inner = if whole { &object[1..object.len() - 1] } else { object };
    match made_tensor(inner)? {
        MadeTensor::Dims(dims) => Some(MadeTensor::Dims(order.of(dims)?)),
        _ => None,
    }
}

/// The byte of the `(` that the `)` just before byte `end` of `text` closes.
fn matching_open(text: &str, end: usize) -> Option<usize> {
    let mut depth = 0;
    for (at, c) in text[..end].char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' if depth == 0 => return Some(at),
            '(' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// The extent a `Slice` from the start leaves of a dimension: `Slice(None, m)` gives `m`,
/// `Slice()` the whole (`None` inside); `None` for any other index.
fn slice_extent(item: &str) -> Option<Option<String>> {
    let item = item.trim();
    let args = item.rsplit("::").next()?.strip_prefix("Slice(")?.strip_suffix(')')?;
    match super::host::split_args(args).as_slice() {
        [] => Some(None),
        [only] if only.is_empty() => Some(None),
        [start, stop] if matches!(start.as_str(), "None" | "0") => Some((stop != "None").then(|| stop.clone())),
        _ => None,
    }
}

/// The value a tensor is filled with where `value` makes it so (`torch::full({n}, P1)`).
pub(super) fn fill_of(value: &str) -> Option<String> {
    let value = value.trim();
    let (callee, args) = value.split_once('(')?;
    if !matches!(callee.trim(), "torch::full" | "at::full") {
        return None;
    }
    // After the shape's braces, which hold commas of their own.
    let shape = args.trim_start().strip_prefix('{')?;
    let after = shape[shape.find('}')? + 1..].trim_start().strip_prefix(',')?;
    let fill = super::host::split_args(after.trim_end().strip_suffix(')')?).into_iter().next()?.trim().to_string();
    (!fill.is_empty() && !fill.contains("::") && !fill.contains("options")).then_some(fill)
}

/// The tensor whose data `arg` passes (`x.data_ptr<float>()`, `(float *)x.data_ptr()`, a
/// contiguous copy's `x.contiguous().data_ptr<float>()`, as many elements), with the element
/// type it names, if any.
pub(super) fn data_of(arg: &str) -> Option<(&str, Option<&str>)> {
    let (tensor, _, element) = tensor_method_call(crate::syntax::host::without_pointer_cast(arg), &["data_ptr", "const_data_ptr", "mutable_data_ptr", "data"])?;
    Some((tensor, element))
}

/// The tensor whose packed accessor `arg` passes (`x.packed_accessor64<float, 4,
/// at::RestrictPtrTraits>()`, also of `x.contiguous()`), for a kernel's accessor parameter.
pub(super) fn accessor_of(arg: &str) -> Option<&str> {
    tensor_method_call(arg.trim(), &["packed_accessor32", "packed_accessor64", "generic_packed_accessor", "packed_accessor"]).map(|(tensor, _, _)| tensor)
}

/// `tensor.method<args>()` with `method` one of `methods`, a contiguous copy's
/// (`x.contiguous().method()`) and an optional tensor's (`x.value().method()`) too: the tensor,
/// the method and what its brackets hold.
fn tensor_method_call<'t>(call: &'t str, methods: &[&'t str]) -> Option<(&'t str, &'t str, Option<&'t str>)> {
    let (tensor, mut rest) = call.split_once('.')?;
    let no_argument_call = |r: &'t str, method: &str| r.trim_start().strip_prefix(method)?.trim_start().strip_prefix('(')?.trim_start().strip_prefix(')')?.trim_start().strip_prefix('.');
    let skipped = |r: &'t str| no_argument_call(r, "contiguous").or_else(|| no_argument_call(r, "value"));
    while let Some(after) = skipped(rest) {
        rest = after;
    }
    let rest = rest.trim_start();
    let method = methods.iter().copied().find(|m| rest.starts_with(m) && !rest[m.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))?;
    let after = rest[method.len()..].trim_start();
    let (bracketed, call) = match after.strip_prefix('<') {
        Some(typed) => {
            let close = typed.rfind('>')?;
            (Some(typed[..close].trim()), typed[close + 1..].trim_start())
        }
        None => (None, after),
    };
    (is_identifier(tensor.trim()) && call.replace(' ', "") == "()").then(|| (tensor.trim(), method, bracketed))
}

/// A kernel parameter's PyTorch packed accessor type (`at::PackedTensorAccessor64<scalar_t, 3,
/// at::RestrictPtrTraits>`, `torch::PackedTensorAccessor32<…>`, `GenericPackedTensorAccessor<T,
/// N, Traits, index_t>`): a pointer, then each dimension's size and stride.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct AccessorType {
    /// The element type as written (a template parameter stays its name).
    pub element: String,
    pub rank: usize,
    /// The type of the sizes and strides.
    pub index: &'static str,
}

pub(super) fn accessor_type(ty: &str) -> Option<AccessorType> {
    let ty = ty.trim().trim_start_matches("const ").trim();
    let (template, args) = ty.split_once('<')?;
    let args = crate::profile::split_template_args(args.trim_end().strip_suffix('>')?);
    let template = template.trim().rsplit("::").next()?;
    let index = match (template, args.get(3).map(String::as_str)) {
        ("PackedTensorAccessor32", _) => "int32_t",
        ("PackedTensorAccessor64", _) | ("GenericPackedTensorAccessor" | "PackedTensorAccessor", None) => "int64_t",
        ("GenericPackedTensorAccessor" | "PackedTensorAccessor", Some("int32_t" | "int")) => "int32_t",
        ("GenericPackedTensorAccessor" | "PackedTensorAccessor", Some("int64_t")) => "int64_t",
        _ => return None,
    };
    let rank = args.get(1)?.trim().parse::<usize>().ok().filter(|&n| n > 0)?;
    Some(AccessorType { element: args.first()?.trim().to_string(), rank, index })
}

/// PyTorch's type to accumulate `ty` in on the GPU, as `at::acc_type<ty, true>` and
/// `at::opmath_type<ty>` name it: `float` for `float` and the half types, `double` for
/// `double`, `int64_t` for the integers. `None` for no such name, or a type it does not know.
pub(super) fn accumulate_type(written: &str) -> Option<String> {
    let written: String = written.split_whitespace().collect();
    let inner = ["at::acc_type<", "c10::acc_type<", "acc_type<", "at::opmath_type<", "c10::opmath_type<", "opmath_type<"].iter().find_map(|p| written.strip_prefix(p))?;
    let args = crate::profile::split_template_args(inner.strip_suffix('>')?);
    let ty = match args.first()?.as_str() {
        "float" | "half" | "__half" | "at::Half" | "c10::Half" | "at::BFloat16" | "c10::BFloat16" | "__nv_bfloat16" => "float",
        "double" => "double",
        "int8_t" | "uint8_t" | "int16_t" | "int" | "int32_t" | "int64_t" | "long" | "char" | "short" => "int64_t",
        _ => return None,
    };
    Some(ty.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pytorchs_accumulate_types() {
        assert_eq!(accumulate_type("at::acc_type<at::Half, true>").as_deref(), Some("float"));
        assert_eq!(accumulate_type("at::opmath_type< double >").as_deref(), Some("double"));
        assert_eq!(accumulate_type("acc_type<int, true>").as_deref(), Some("int64_t"));
        assert_eq!(accumulate_type("at::acc_type<scalar_t, true>"), None);
        assert_eq!(accumulate_type("std::vector<float>"), None);
    }

    #[test]
    fn size_reads_are_found_in_expressions_and_named() {
        let read = size_read;
        assert_eq!(read("Q.size(0)"), Some(("Q", SizeRead::Dim(0))));
        assert_eq!(read("input.size(-1)"), Some(("input", SizeRead::Dim(-1))));
        assert_eq!(read("q.sizes()[1]"), Some(("q", SizeRead::Dim(1))));
        assert_eq!(read("x.shape[2]"), Some(("x", SizeRead::Dim(2))));
        assert_eq!(read("x.numel()"), Some(("x", SizeRead::Numel)));
        assert_eq!(read("x.stride (0)"), Some(("x", SizeRead::Stride(0))));
        assert_eq!(read("x.dim()"), Some(("x", SizeRead::Rank)));
        assert_eq!(read("x.size(i)"), None, "an index the text does not give");
        assert_eq!(read("a.b.numel()"), None);
        assert_eq!(read("grid.x"), None);
        assert_eq!(read("prop.multiProcessorCount"), None);
        assert_eq!(read("v.size"), None, "a field, not a call");
        let replaced = replace_size_reads("ceil((float) Q.size(2) / Bc) + x.numel() - a.b.size(0)", |t, r| Some(r.name(t)));
        assert_eq!(replaced, "ceil((float) Q_size_2 / Bc) + x_numel - a.b.size(0)");
        assert_eq!(named_read("Q_size_2"), Some(("Q", SizeRead::Dim(2))));
        assert_eq!(named_read("hidden_states_size_m1"), Some(("hidden_states", SizeRead::Dim(-1))));
        assert_eq!(named_read("x_numel"), Some(("x", SizeRead::Numel)));
        assert_eq!(named_read("x_stride_0"), Some(("x", SizeRead::Stride(0))));
        assert_eq!(named_read("block_size"), None);
    }

    #[test]
    fn a_read_has_the_value_of_a_contiguous_tensor() {
        let dims = [16, 12, 64, 32];
        assert_eq!(SizeRead::Dim(2).of(&dims), Some(64));
        assert_eq!(SizeRead::Dim(-1).of(&dims), Some(32));
        assert_eq!(SizeRead::Dim(4).of(&dims), None);
        assert_eq!(SizeRead::Numel.of(&dims), Some(16 * 12 * 64 * 32));
        assert_eq!(SizeRead::Stride(1).of(&dims), Some(64 * 32));
        assert_eq!(SizeRead::Stride(-1).of(&dims), Some(1));
        assert_eq!(SizeRead::Rank.of(&dims), Some(4));
        assert!(SizeRead::Dim(-1).is_dim(3, 4) && SizeRead::Dim(3).is_dim(3, 4) && !SizeRead::Dim(2).is_dim(3, 4));
    }

    #[test]
    fn tensors_are_made_of_dimensions_or_of_another_tensors_shape() {
        let dims = |d: &[&str]| Some(MadeTensor::Dims(d.iter().map(|s| s.to_string()).collect()));
        assert_eq!(made_tensor("torch::zeros({B, nh, N})"), dims(&["B", "nh", "N"]));
        assert_eq!(made_tensor("torch::full({B, nh, N}, -INFINITY)"), dims(&["B", "nh", "N"]));
        assert_eq!(made_tensor("at::empty({n, d * 2}, x.options())"), dims(&["n", "d * 2"]));
        assert_eq!(made_tensor("torch::zeros_like(Q)"), Some(MadeTensor::Like("Q".into())));
        assert_eq!(made_tensor("at::empty(a_contig.sizes(), a_contig.options())"), Some(MadeTensor::Like("a_contig".into())));
        assert_eq!(made_tensor("x.clone()"), Some(MadeTensor::Like("x".into())));
        assert_eq!(made_tensor("l.to(device)"), Some(MadeTensor::Like("l".into())));
        let sliced = made_tensor("A.index({Slice(None, M), torch::indexing::Slice(), Slice(0, K)})");
        assert_eq!(sliced, Some(MadeTensor::Sliced("A".into(), vec![Some("M".into()), None, Some("K".into())])));
        assert_eq!(sliced_dims(&[Some("M".into()), None, Some("K".into())], vec!["MAX_M".into(), "H".into(), "MAX_K".into(), "D".into()]), ["M", "H", "K", "D"]);
        assert_eq!(made_tensor("A.index({Slice(2, M)})"), None, "a slice from elsewhere than the start");
        assert_eq!(made_tensor("A.index({0})"), None);
        assert_eq!(made_tensor("torch::matmul(a, b)"), None);
        assert_eq!(made_tensor("x.view({n, d})"), None, "a view changes the shape");
        assert_eq!(made_tensor("std::empty({n})"), None);
        assert_eq!(made_tensor("_pair(kernel_size)"), Some(MadeTensor::Repeated("kernel_size".into(), 2)));
        assert_eq!(made_tensor("_triple(torch::empty({1, 2, 3}))"), Some(MadeTensor::Repeated("torch::empty({1, 2, 3})".into(), 3)));
    }

    #[test]
    fn a_transposed_or_permuted_tensor_has_its_dimensions_reordered() {
        let dims = |d: &[&str]| Some(MadeTensor::Dims(d.iter().map(|s| s.to_string()).collect()));
        assert_eq!(made_tensor("v.transpose(-2, -1)"), Some(MadeTensor::Reordered("v".into(), Reorder::Swap(-2, -1))));
        assert_eq!(made_tensor("m.t()"), Some(MadeTensor::Reordered("m".into(), Reorder::Swap(0, 1))));
        assert_eq!(made_tensor("q.permute({0, 2, 1, 3})"), Some(MadeTensor::Reordered("q".into(), Reorder::Permute(vec![0, 2, 1, 3]))));
        // Made in place, as a script's helper is read where it is called.
        assert_eq!(made_tensor("(torch::randn({B, H, N, D})).transpose(-2, -1)"), dims(&["B", "H", "D", "N"]));
        assert_eq!(made_tensor("(torch::randn({B, H, N, D})).permute({0, 2, 1, 3})"), dims(&["B", "N", "H", "D"]));
        assert_eq!(made_tensor("v.transpose(d, 1)"), None, "a dimension known only as the program runs");
        let order = Reorder::Permute(vec![0, 2, 1]);
        assert_eq!(order.of(vec!["a".into(), "b".into()]), None, "a permutation of another rank");
        assert_eq!(Reorder::Swap(-1, 0).of(vec!["a".into(), "b".into(), "c".into()]), Some(vec!["c".into(), "b".into(), "a".into()]));
        // A dimension of extent 1 added, before the first or after the last.
        assert_eq!(made_tensor("torch::empty({15, 3}).unsqueeze(0)"), dims(&["1", "15", "3"]));
        assert_eq!(Reorder::Unsqueeze(-1).of(vec!["n".into(), "d".into()]), Some(vec!["n".into(), "d".into(), "1".into()]));
        assert_eq!(Reorder::Unsqueeze(3).of(vec!["n".into(), "d".into()]), None, "past the new rank");
        // One taken away by a reduction, or kept of extent 1 (Python's `keepdim=True`).
        assert_eq!(made_tensor("x.mean(1)"), Some(MadeTensor::Reordered("x".into(), Reorder::Remove(1))));
        assert_eq!(made_tensor("(torch::randn({n, d})).sum(-1).unsqueeze(-1)"), dims(&["n", "1"]));
        assert_eq!(made_tensor("x.sum(dim)"), None, "a dimension known only as the program runs");
        assert_eq!(Reorder::Remove(-1).of(vec!["n".into(), "d".into()]), Some(vec!["n".into()]));
        assert_eq!(Reorder::Remove(2).of(vec!["n".into(), "d".into()]), None, "past the rank");
    }

    #[test]
    fn a_tensors_data_is_found_through_casts() {
        assert_eq!(data_of("Q.data_ptr<float>()"), Some(("Q", Some("float"))));
        assert_eq!(data_of("(half *)out.data_ptr()"), Some(("out", None)));
        assert_eq!(data_of("reinterpret_cast<float4 *>(x.data_ptr<float>())"), Some(("x", Some("float"))));
        assert_eq!(data_of("x.data_ptr<at::Half>()"), Some(("x", Some("at::Half"))));
        assert_eq!(data_of("p1.contiguous().data_ptr<scalar_t>()"), Some(("p1", Some("scalar_t"))));
        assert_eq!(data_of("x.contiguous ( ) . data_ptr<float>()"), Some(("x", Some("float"))));
        assert_eq!(data_of("x.contiguous().numel()"), None);
    }

    #[test]
    fn a_filled_tensor_has_its_value() {
        assert_eq!(fill_of("torch::full({p1.size(0)}, P1)").as_deref(), Some("P1"));
        assert_eq!(fill_of("at::full({n, 2}, 0.5)").as_deref(), Some("0.5"));
        assert_eq!(fill_of("torch::empty({n})"), None);
        assert_eq!(fill_of("torch::full({n}, x.options())"), None);
        assert_eq!(fill_of("torch::full({n, 2}, n, x.options())").as_deref(), Some("n"));
    }

    #[test]
    fn a_packed_accessor_is_a_tensors_data_with_its_sizes_and_strides() {
        assert_eq!(accessor_of("result.packed_accessor64<float, 4, at::RestrictPtrTraits>()"), Some("result"));
        assert_eq!(accessor_of("x.contiguous().packed_accessor32<scalar_t, 2, torch::RestrictPtrTraits>()"), Some("x"));
        assert_eq!(accessor_of("x.data_ptr<float>()"), None);
        let parsed = accessor_type("const at::PackedTensorAccessor64<float, 4, at::RestrictPtrTraits>");
        assert_eq!(parsed, Some(AccessorType { element: "float".into(), rank: 4, index: "int64_t" }));
        assert_eq!(accessor_type("torch::PackedTensorAccessor32<scalar_t, 2, torch::RestrictPtrTraits>").map(|a| (a.element, a.index)), Some(("scalar_t".into(), "int32_t")));
        assert_eq!(accessor_type("at::GenericPackedTensorAccessor<float, 3, at::DefaultPtrTraits, int32_t>").map(|a| a.index), Some("int32_t"));
        assert_eq!(accessor_type("std::array<float, 4>"), None);
        assert_eq!(data_of("x.numel()"), None);
        assert_eq!(data_of("x.data_ptr_impl()"), None);
        assert_eq!(data_of("d_x"), None);
    }
}
