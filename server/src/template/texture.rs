//! Texture objects in the spec scaffold: a `cudaTextureObject_t` argument becomes a texture
//! the tuner makes. What the kernel fetches (`tex2D<float4>(tex, x, y)`) gives the texel type
//! and the dimensions; the host code that makes the object (`cudaMallocArray`,
//! `cudaResourceDesc`, `cudaTextureDesc`) gives the extent, the stored format and the sampling.

use tree_sitter::Node;

use super::host::HostContext;
use crate::spec::{ArgSpec, Dtype, Init, TextureAddress, TextureFilter, TextureLayout, TextureRead, TextureSpec, UNKNOWN};
use crate::syntax::host::{call_args, declared_name};
use crate::syntax::{descendants, Document};

/// The kernel parameter types that are texture objects.
pub(super) fn is_texture_type(ty: &str) -> bool {
    matches!(ty.trim().trim_start_matches("const ").trim(), "cudaTextureObject_t" | "CUtexObject")
}

/// What the host code says of a texture object, each part only when found.
#[derive(Debug, Default, PartialEq)]
pub(super) struct TextureSetup {
    /// Texels along each dimension of the array (or the linear memory), in the spec's names;
    /// a dimension the host code does not settle is [`UNKNOWN`].
    pub extent: Vec<String>,
    /// The stored channel type and count each channel format descriptor the program may give
    /// the array makes (`if (nc == 4) desc = <uchar4> else desc = <float>`).
    pub texels: Vec<(Dtype, u32)>,
    /// `cudaArrayLayered` or `cudaArrayCubemap` among the array's flags; linear memory.
    pub layout: Option<TextureLayout>,
    pub filter: Option<TextureFilter>,
    pub address: Option<TextureAddress>,
    pub normalized_coords: Option<bool>,
    pub read: Option<TextureRead>,
}

/// The spec of texture argument `name`: the kernel's fetch with the host's setup.
pub(super) fn texture_arg(doc: &Document, body: Option<Node>, name: &str, at_launch: Option<&str>, host: Option<&HostContext>) -> ArgSpec {
    let fetch = fetch_of(doc, body, name);
    let setup = at_launch.and_then(|arg| host?.texture_setup(arg)).unwrap_or_default();
    let fetched = fetch.as_ref().and_then(|f| texel_type(&f.texel));
    // The host's format is what the data is (the kernel may read 8-bit texels as floats): the
    // one with as many channels as the kernel reads, when the program has several.
    let stored = setup.texels.iter().find(|(_, c)| Some(*c) == fetched.map(|(_, c)| c)).or(setup.texels.first()).copied();
    let (dtype, channels) = stored.or(fetched).unwrap_or((Dtype::F32, 1));
    let layout = setup.layout.or_else(|| fetch.as_ref().map(|f| f.layout)).unwrap_or_default();
    let dims = fetch.as_ref().map_or(setup.extent.len().max(1), |f| f.dims);
    let mut extent = setup.extent.clone();
    extent.resize(dims.max(extent.len()), UNKNOWN.to_string());
    if layout == TextureLayout::Cubemap {
        extent.truncate(2);
        extent.resize(2, UNKNOWN.to_string());
        extent.push("6".to_string());
    }
    let reads_floats = fetched.is_some_and(|(d, _)| d.is_float());
    let read = setup.read.unwrap_or(if reads_floats && !dtype.is_float() { TextureRead::NormalizedFloat } else { TextureRead::Element });
    let texture = TextureSpec {
        extent,
        layout,
        channels,
        filter: setup.filter.unwrap_or_default(),
        address: setup.address.unwrap_or_default(),
        normalized_coords: setup.normalized_coords.unwrap_or(false),
        read,
    };
    let init = match dtype.is_float() {
        true => Init::Uniform { low: -1.0, high: 1.0 },
        false => Init::Integers { low: 0, high: 128 },
    };
    ArgSpec { name: name.to_string(), element: Some(dtype), init: Some(init), texture: Some(texture), ..ArgSpec::default() }
}

/// One texture fetch of the kernel: `tex2D<float4>(tex, x, y)`.
struct Fetch {
    texel: String,
    layout: TextureLayout,
    /// Extents the texture has: 2 for `tex2D`, 3 for `tex2DLayered` (the layers last).
    dims: usize,
}

/// The first fetch from `name`: in the kernel's body, else in the file's device functions
/// (which take the object as a parameter of the same name).
fn fetch_of(doc: &Document, body: Option<Node>, name: &str) -> Option<Fetch> {
    let text = doc.text();
    let root = doc.tree()?.root_node();
    let fetches = |node: Node<'_>| descendants(node).filter_map(|n| fetch_at(text, n, name)).next();
    body.and_then(fetches).or_else(|| fetches(root))
}

fn fetch_at(text: &str, call: Node, name: &str) -> Option<Fetch> {
    if call.kind() != "call_expression" {
        return None;
    }
    let function = call.child_by_field_name("function").filter(|f| f.kind() == "template_function")?;
    let (layout, dims) = match &text[function.child_by_field_name("name")?.byte_range()] {
        "tex1Dfetch" => (TextureLayout::Linear, 1),
        "tex1D" | "tex1DLod" | "tex1DGrad" => (TextureLayout::Array, 1),
        "tex2D" | "tex2DLod" | "tex2DGrad" | "tex2Dgather" => (TextureLayout::Array, 2),
        "tex3D" | "tex3DLod" | "tex3DGrad" => (TextureLayout::Array, 3),
        "tex1DLayered" | "tex1DLayeredLod" => (TextureLayout::Layered, 2),
        "tex2DLayered" | "tex2DLayeredLod" => (TextureLayout::Layered, 3),
        "texCubemap" | "texCubemapLod" => (TextureLayout::Cubemap, 3),
        _ => return None,
    };
    let args = call_args(text, call.child_by_field_name("arguments")?);
    if args.first().map(|a| a.trim()) != Some(name) {
        return None;
    }
    let list = function.child_by_field_name("arguments")?;
    let texel = text[list.byte_range()].trim_start_matches('<').trim_end_matches('>').trim().to_string();
    Some(Fetch { texel, layout, dims })
}

/// A texel type's channel type and count: `float4` is four `f32`, `uchar` one `u8`.
pub(super) fn texel_type(ty: &str) -> Option<(Dtype, u32)> {
    let ty = ty.trim().trim_start_matches("const ").trim();
    let (base, channels) = match ty.char_indices().last() {
        Some((at, digit)) if digit.is_ascii_digit() => (&ty[..at], digit.to_digit(10)?),
        _ => (ty, 1),
    };
    let dtype = match base {
        "float" => Dtype::F32,
        "char" | "signed char" => Dtype::I8,
        "uchar" | "unsigned char" => Dtype::U8,
        "short" => Dtype::I16,
        "ushort" | "unsigned short" => Dtype::U16,
        "int" => Dtype::I32,
        "uint" | "unsigned int" | "unsigned" => Dtype::U32,
        _ => return None,
    };
    matches!(channels, 1 | 2 | 4).then_some((dtype, channels))
}

/// The format a channel format descriptor makes: `cudaCreateChannelDesc<uchar4>()`, or
/// `cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat)`.
pub(super) fn channel_format(text: &str) -> Option<(Dtype, u32)> {
    let text = text.trim();
    let rest = text.strip_prefix("cudaCreateChannelDesc")?.trim_start();
    if let Some(generic) = rest.strip_prefix('<') {
        return texel_type(&generic[..generic.rfind('>')?]);
    }
    let args: Vec<String> = rest.strip_prefix('(')?.strip_suffix(')')?.split(',').map(|a| a.trim().to_string()).collect();
    let bits: Vec<u32> = args.get(..4)?.iter().map(|b| b.parse().ok()).collect::<Option<_>>()?;
    let channels = bits.iter().filter(|b| **b > 0).count() as u32;
    let dtype = match (args.get(4)?.as_str(), bits[0]) {
        ("cudaChannelFormatKindFloat", 32) => Dtype::F32,
        ("cudaChannelFormatKindFloat", 16) => Dtype::F16,
        ("cudaChannelFormatKindUnsigned", 8) => Dtype::U8,
        ("cudaChannelFormatKindUnsigned", 16) => Dtype::U16,
        ("cudaChannelFormatKindUnsigned", 32) => Dtype::U32,
        ("cudaChannelFormatKindSigned", 8) => Dtype::I8,
        ("cudaChannelFormatKindSigned", 16) => Dtype::I16,
        ("cudaChannelFormatKindSigned", 32) => Dtype::I32,
        _ => return None,
    };
    (channels != 3 && channels > 0).then_some((dtype, channels))
}

/// The format a driver descriptor gives as its format and channel count:
/// `CU_AD_FORMAT_UNSIGNED_INT8` and `4` are four `u8`.
pub(super) fn driver_format(format: &str, channels: &str) -> Option<(Dtype, u32)> {
    let dtype = match format.trim() {
        "CU_AD_FORMAT_FLOAT" => Dtype::F32,
        "CU_AD_FORMAT_HALF" => Dtype::F16,
        "CU_AD_FORMAT_UNSIGNED_INT8" => Dtype::U8,
        "CU_AD_FORMAT_UNSIGNED_INT16" => Dtype::U16,
        "CU_AD_FORMAT_UNSIGNED_INT32" => Dtype::U32,
        "CU_AD_FORMAT_SIGNED_INT8" => Dtype::I8,
        "CU_AD_FORMAT_SIGNED_INT16" => Dtype::I16,
        "CU_AD_FORMAT_SIGNED_INT32" => Dtype::I32,
        _ => return None,
    };
    let channels: u32 = channels.trim().parse().ok()?;
    matches!(channels, 1 | 2 | 4).then_some((dtype, channels))
}

/// The sampling a texture descriptor `desc` is given by `values` (see [`values_in`]), e.g.
/// `texDescr.filterMode = cudaFilterModeLinear`.
pub(super) fn sampling(values: &[(String, String)], desc: &str, setup: &mut TextureSetup) {
    for (left, right) in values {
        let Some(field) = left.strip_prefix(desc).and_then(|f| f.strip_prefix('.')) else { continue };
        let value = right.trim();
        match field {
            "filterMode" => {
                setup.filter = match value {
                    "cudaFilterModeLinear" | "CU_TR_FILTER_MODE_LINEAR" => Some(TextureFilter::Linear),
                    "cudaFilterModePoint" | "CU_TR_FILTER_MODE_POINT" => Some(TextureFilter::Point),
                    _ => setup.filter,
                }
            }
            // The first dimension's mode stands for all: the spec has one.
            "addressMode[0]" => {
                setup.address = match value {
                    "cudaAddressModeWrap" | "CU_TR_ADDRESS_MODE_WRAP" => Some(TextureAddress::Wrap),
                    "cudaAddressModeClamp" | "CU_TR_ADDRESS_MODE_CLAMP" => Some(TextureAddress::Clamp),
                    "cudaAddressModeMirror" | "CU_TR_ADDRESS_MODE_MIRROR" => Some(TextureAddress::Mirror),
                    "cudaAddressModeBorder" | "CU_TR_ADDRESS_MODE_BORDER" => Some(TextureAddress::Border),
                    _ => setup.address,
                }
            }
            "normalizedCoords" => setup.normalized_coords = Some(!matches!(value, "false" | "0")),
            // The driver's flags: coordinates in [0, 1), and integers read as they are stored.
            "flags" => {
                setup.normalized_coords = Some(value.contains("CU_TRSF_NORMALIZED_COORDINATES"));
                if value.contains("CU_TRSF_READ_AS_INTEGER") {
                    setup.read = Some(TextureRead::Element);
                }
            }
            "readMode" => {
                setup.read = match value {
                    "cudaReadModeNormalizedFloat" => Some(TextureRead::NormalizedFloat),
                    "cudaReadModeElementType" => Some(TextureRead::Element),
                    _ => setup.read,
                }
            }
            _ => {}
        }
    }
}

/// Every value given in `body`, in order: plain assignments (left side without spaces) and
/// initialised declarations (the name declared), with the value's text.
pub(super) fn values_in(text: &str, body: Node) -> Vec<(String, String)> {
    descendants(body)
        .filter_map(|n| {
            let (target, value) = match n.kind() {
                "assignment_expression" if n.child_by_field_name("operator").is_some_and(|o| &text[o.byte_range()] == "=") => {
                    (n.child_by_field_name("left")?, n.child_by_field_name("right")?)
                }
                "init_declarator" => (declared_name(n.child_by_field_name("declarator")?)?, n.child_by_field_name("value")?),
                _ => return None,
            };
            Some((text[target.byte_range()].split_whitespace().collect(), text[value.byte_range()].trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texel_types_name_their_channels() {
        assert_eq!(texel_type("float"), Some((Dtype::F32, 1)));
        assert_eq!(texel_type("float4"), Some((Dtype::F32, 4)));
        assert_eq!(texel_type("uchar4"), Some((Dtype::U8, 4)));
        assert_eq!(texel_type("unsigned char"), Some((Dtype::U8, 1)));
        assert_eq!(texel_type("uint"), Some((Dtype::U32, 1)));
        assert_eq!(texel_type("int2"), Some((Dtype::I32, 2)));
        assert_eq!(texel_type("float3"), None, "CUDA has no 3-channel textures");
        assert_eq!(texel_type("MyPixel"), None);
    }

    #[test]
    fn channel_descriptors_of_both_forms() {
        assert_eq!(channel_format("cudaCreateChannelDesc<uchar4>()"), Some((Dtype::U8, 4)));
        assert_eq!(channel_format("cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat)"), Some((Dtype::F32, 1)));
        assert_eq!(channel_format("cudaCreateChannelDesc(8, 8, 8, 8, cudaChannelFormatKindUnsigned)"), Some((Dtype::U8, 4)));
        assert_eq!(channel_format("cudaCreateChannelDesc(16, 16, 0, 0, cudaChannelFormatKindFloat)"), Some((Dtype::F16, 2)));
        assert_eq!(channel_format("cudaCreateChannelDesc(bits, 0, 0, 0, kind)"), None);
        assert_eq!(channel_format("desc"), None);
    }

    #[test]
    fn sampling_is_read_from_the_descriptors_fields() {
        let values: Vec<(String, String)> = [
            ("texDescr.normalizedCoords", "true"),
            ("texDescr.filterMode", "cudaFilterModeLinear"),
            ("texDescr.addressMode[0]", "cudaAddressModeWrap"),
            ("texDescr.readMode", "cudaReadModeNormalizedFloat"),
            ("other.filterMode", "cudaFilterModePoint"),
        ]
        .iter()
        .map(|(l, r)| (l.to_string(), r.to_string()))
        .collect();
        let mut setup = TextureSetup::default();
        sampling(&values, "texDescr", &mut setup);
        assert_eq!(setup.filter, Some(TextureFilter::Linear), "another descriptor's fields are not this one's");
        assert_eq!(setup.address, Some(TextureAddress::Wrap));
        assert_eq!(setup.normalized_coords, Some(true));
        assert_eq!(setup.read, Some(TextureRead::NormalizedFloat));
    }
}
