//! Sizes a program reads from data files it ships with: an image loaded by a call such as
//! `sdkLoadPGM(imagePath, &data, &width, &height)` or `LoadBMPFile(&pixels, &w, &h, path)` gives
//! the variables whose addresses it takes last the image's width and height. The file is named
//! in the program (a literal, through variables, and through a path helper such as
//! `sdkFindFilePath("teapot512.pgm", argv[0])`) and found beside the source or in a `data`
//! folder above it; its header says the size.

use std::path::{Path, PathBuf};

use tree_sitter::Node;

use crate::syntax::host::call_args;
use crate::syntax::is_identifier;

/// The images whose headers cutune reads.
const IMAGE_EXTENSIONS: [&str; 4] = ["bmp", "pgm", "ppm", "pnm"];
/// How many folders up from the source a data file is looked for.
const FOLDERS_UP: usize = 4;

/// An image a call loads, and the variables it sets to its size.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct ImageLoad {
    pub width: String,
    pub height: String,
    pub size: (u32, u32),
    pub file: PathBuf,
}

/// The image `call` loads into its last two address-taken arguments (width, then height, unless
/// the names say height first), when one of its other arguments names an image file that is
/// found from `folder` and whose header reads. `value_of` gives a variable's value text as the
/// program sets it before the call; `loader_params` are the names of the called function's
/// parameters where the workspace defines it (`get_image_size(char *name, int *irows, int *icols)`).
pub(super) fn image_loaded_by(text: &str, call: Node, folder: Option<&Path>, value_of: &dyn Fn(&str) -> Option<String>, loader_params: &[String]) -> Option<ImageLoad> {
    let args = call_args(text, call.child_by_field_name("arguments")?);
    let addressed: Vec<(usize, &str)> = args.iter().enumerate().filter_map(|(i, a)| Some((i, address_of(a)?))).collect();
    let [.., first, second] = addressed.as_slice() else { return None };
    let name_of = |&(at, variable): &(usize, &str)| loader_params.get(at).filter(|p| !p.is_empty()).map_or(variable.to_string(), String::clone);
    let ((_, width), (_, height)) = match names_height(&name_of(first)) && names_width(&name_of(second)) {
        true => (second, first),
        false => (first, second),
    };
    let name = args.iter().filter(|a| address_of(a).is_none()).find_map(|a| image_name(a, value_of, 0))?;
    let file = find_data_file(folder?, &name)?;
    let size = image_size(&read_header(&file)?)?;
    Some(ImageLoad { width: width.to_string(), height: height.to_string(), size, file })
}

/// Whether a variable's name says it holds an image's height (`height`, `irows`, `h`).
fn names_height(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.contains("height") || name.contains("rows") || name == "h"
}

/// Whether a variable's name says it holds an image's width (`width`, `icols`, `w`).
fn names_width(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.contains("width") || name.contains("cols") || name == "w"
}

/// `name` of `&name` (through casts: `(unsigned char **)&h_img`).
fn address_of(arg: &str) -> Option<&str> {
    let name = arg.rsplit_once('&').map(|(_, n)| n.trim())?;
    is_identifier(name).then_some(name)
}

/// The image file an argument names: a string literal, a variable holding one (followed), or a
/// call whose first argument names one (a path helper).
fn image_name(arg: &str, value_of: &dyn Fn(&str) -> Option<String>, depth: usize) -> Option<String> {
    let arg = arg.trim();
    if depth > 4 {
        return None;
    }
    // `char name[64] = {"frame.pgm"};`
    if let Some(braced) = arg.strip_prefix('{').and_then(|a| a.strip_suffix('}')) {
        return image_name(braced, value_of, depth + 1);
    }
    if let Some(literal) = arg.strip_prefix('"').and_then(|a| a.strip_suffix('"')) {
        let extension = Path::new(literal).extension()?.to_str()?.to_ascii_lowercase();
        return IMAGE_EXTENSIONS.contains(&extension.as_str()).then(|| literal.to_string());
    }
    if is_identifier(arg) {
        return image_name(&value_of(arg)?, value_of, depth + 1);
    }
    let (_, inner) = arg.split_once('(')?;
    let first = inner.strip_suffix(')')?.split(',').next()?;
    image_name(first, value_of, depth + 1)
}

/// The image file `arg` names, followed through `value_of` as `image_loaded_by` does.
pub(super) fn image_named(arg: &str, value_of: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    image_name(arg, value_of, 0)
}

/// `name` (a bare name, or a relative path) beside `folder`, in its `data` folder, or in those of
/// the folders above it, the nearest first.
fn find_data_file(folder: &Path, name: &str) -> Option<PathBuf> {
    let name = Path::new(name);
    if name.is_absolute() || name.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return None;
    }
    folder.ancestors().take(FOLDERS_UP + 1).flat_map(|dir| [dir.join(name), dir.join("data").join(name)]).find(|p| p.is_file())
}

/// The first bytes of `file`: enough for any header cutune reads.
fn read_header(file: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut header = Vec::with_capacity(512);
    std::fs::File::open(file).ok()?.take(512).read_to_end(&mut header).ok()?;
    Some(header)
}

/// Width and height from a BMP or a Netpbm (PGM, PPM) header.
pub(super) fn image_size(header: &[u8]) -> Option<(u32, u32)> {
    match header {
        [b'B', b'M', ..] => {
            let int = |at: usize| Some(i32::from_le_bytes(header.get(at..at + 4)?.try_into().ok()?));
            // A negative height is an image stored top-down.
            Some((u32::try_from(int(18)?).ok()?, int(22)?.unsigned_abs()))
        }
        [b'P', b'1'..=b'6', ..] => {
            let text = String::from_utf8_lossy(&header[2..]);
            let mut numbers = text.lines().map(|line| line.split('#').next().unwrap_or("")).flat_map(str::split_whitespace).map(str::parse::<u32>);
            Some((numbers.next()?.ok()?, numbers.next()?.ok()?))
        }
        _ => None,
    }
    .filter(|&(w, h)| w > 0 && h > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bmp(width: i32, height: i32) -> Vec<u8> {
        let mut header = vec![0u8; 54];
        header[..2].copy_from_slice(b"BM");
        header[18..22].copy_from_slice(&width.to_le_bytes());
        header[22..26].copy_from_slice(&height.to_le_bytes());
        header
    }

    #[test]
    fn the_size_is_read_from_bmp_and_netpbm_headers() {
        assert_eq!(image_size(&bmp(320, 408)), Some((320, 408)));
        assert_eq!(image_size(&bmp(512, -256)), Some((512, 256)), "top-down");
        assert_eq!(image_size(b"P5\n# made by hand\n512 384\n255\n\x00\x01"), Some((512, 384)));
        assert_eq!(image_size(b"P6 1024 768 255 "), Some((1024, 768)));
        assert_eq!(image_size(b"P5\n0 12\n255\n"), None);
        assert_eq!(image_size(b"GIF89a"), None);
        assert_eq!(image_size(b"BM"), None, "too short");
    }

    #[test]
    fn the_image_is_named_through_variables_and_path_helpers() {
        let values = |name: &str| match name {
            "imagePath" => Some("sdkFindFilePath(imageFilename, argv[0])".to_string()),
            "imageFilename" => Some("\"teapot512.pgm\"".to_string()),
            "loop" => Some("loop".to_string()),
            _ => None,
        };
        assert_eq!(image_name("imagePath", &values, 0).as_deref(), Some("teapot512.pgm"));
        assert_eq!(image_name("\"data/lena.PPM\"", &values, 0).as_deref(), Some("data/lena.PPM"));
        assert_eq!(image_name("\"weights.bin\"", &values, 0), None, "not an image");
        assert_eq!(image_name("{\"photo.pgm\"}", &values, 0).as_deref(), Some("photo.pgm"), "a char array's initializer");
        assert_eq!(image_name("loop", &values, 0), None, "a cycle ends");
        assert_eq!(address_of("(unsigned char **)&h_img"), Some("h_img"));
        assert_eq!(address_of("&width"), Some("width"));
        assert_eq!(address_of("width"), None);
    }
}
