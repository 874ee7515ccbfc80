//! `Apply best configuration`: a templatized file's parameter defaults rewritten to a tuned
//! configuration. The spec is left alone: its defaults stay the original values, so the
//! baseline that later runs compare with is still the original kernel.

use std::ops::Range;

use super::TextEdit;
use crate::space::Configuration;
use crate::spec::{KernelSpec, ParamKind};
use crate::syntax::Document;

/// The edits of the source, and what could not be written into it (compiler options, template
/// arguments given at the launch sites), for the user.
#[derive(Clone, Debug, PartialEq)]
pub struct AppliedDefaults {
    pub edits: Vec<TextEdit>,
    pub notes: Vec<String>,
}

/// Rewrites, for each parameter `config` sets, its default in `text`: the value of
/// `#define NAME value` under `#ifndef NAME` for a `define` parameter (or where it is, for a
/// macro lifted there; a note when that is another file), the default of the
/// kernel's template parameter for a `template` one. Errors name what is missing.
pub fn apply_defaults(text: &str, kernel: &KernelSpec, config: &Configuration) -> Result<AppliedDefaults, String> {
    let document = Document::new(text.to_string());
    let definition = document.model().kernels.iter().find(|k| k.is_definition && k.name == kernel.name).cloned();
    let mut applied = AppliedDefaults { edits: Vec::new(), notes: Vec::new() };
    for param in &kernel.params {
        let Some(value) = config.get(&param.name) else { continue };
        let name = &param.name;
        match param.kind {
            // A macro the kernel's code uses where it is defined, which templatize does not
            // guard: its line in this file, or a note for the header that has it.
            ParamKind::Define if param.origin.starts_with(&format!("`#define {name} ")) => match define_value(text, name) {
                Some(range) => applied.edits.push(TextEdit { range, new_text: value.to_string() }),
                None if value != param.default => applied.notes.push(format!("{name}={value}: set it where it is defined, {}", param.origin)),
                None => {}
            },
            ParamKind::Define => {
                let range = guarded_define_value(text, name)
                    .or_else(|| constant_value(text, name))
                    .ok_or_else(|| format!("the file has no `#ifndef {name}` / `#define {name} …` to rewrite: templatize `{}` first", kernel.name))?;
                applied.edits.push(TextEdit { range, new_text: value.to_string() });
            }
            ParamKind::Template => {
                let default = definition.as_ref().and_then(|k| k.template_params.iter().find(|p| &p.name == name)).and_then(|p| {
                    let param_text = &text[p.span.start_byte..p.span.end_byte];
                    let equals = param_text.find('=')?;
                    let start = equals + 1 + (param_text[equals + 1..].len() - param_text[equals + 1..].trim_start().len());
                    Some(p.span.start_byte + start..p.span.start_byte + param_text.trim_end().len())
                });
                match default {
                    Some(range) => applied.edits.push(TextEdit { range, new_text: value.to_string() }),
                    None => applied.notes.push(format!("{name}={value}: a template parameter without a default; pass {value} at the launch sites")),
                }
            }
            ParamKind::FastMath if value != 0 => applied.notes.push(format!("{name}={value}: compile with --use_fast_math (nvcc -use_fast_math)")),
            ParamKind::MaxRegisters if value > 0 => applied.notes.push(format!("{name}={value}: compile with --maxrregcount={value}")),
            ParamKind::Launch if value != param.default => {
                let from = if param.origin.is_empty() { String::new() } else { format!(" (now {})", param.origin) };
                applied.notes.push(format!("{name}={value}: a launch choice of the host program; launch with {name} = {value}{from}"));
            }
            ParamKind::FastMath | ParamKind::MaxRegisters | ParamKind::Launch => {}
        }
    }
    // Unchanged values need no edit.
    applied.edits.retain(|e| text[e.range.clone()] != e.new_text);
    Ok(applied)
}

/// The parameter values a build of `text` would use, in the spec's order: a `define`
/// parameter's `#define` (guarded by templatize or still the original line), a `template`
/// parameter's default in the kernel's definition, else the spec's default (the original
/// value). Compiler options are not in the source and are left out. `definition` is the
/// kernel's definition in `text`'s model.
pub fn current_values(text: &str, kernel: &KernelSpec, definition: Option<&crate::syntax::Kernel>) -> Vec<(String, String)> {
    kernel
        .params
        .iter()
        .filter_map(|p| {
            let value = match p.kind {
                ParamKind::Define => guarded_define_value(text, &p.name).or_else(|| define_value(text, &p.name)).or_else(|| constant_value(text, &p.name)).map(|r| text[r].to_string()),
                ParamKind::Template => definition.and_then(|k| k.template_params.iter().find(|t| t.name == p.name)).and_then(|t| t.default.clone()),
                ParamKind::FastMath | ParamKind::MaxRegisters | ParamKind::Launch => return None,
            };
            Some((p.name.clone(), value.unwrap_or_else(|| p.default.to_string())))
        })
        .collect()
}

/// The value of the first `#define NAME value` line.
fn define_value(text: &str, name: &str) -> Option<Range<usize>> {
    first_line_value(text, |line| define_line_value(line, name))
}

/// The value of the first line that declares the integer constant `name` (`const int TILE_DIM
/// = 32;`), a build parameter that the slice guards as it does a `#define`.
fn constant_value(text: &str, name: &str) -> Option<Range<usize>> {
    first_line_value(text, |line| crate::syntax::integer_constant_line(line).filter(|(declared, _)| *declared == name).map(|(_, range)| range))
}

/// The range in `text` of the value `value_in` finds in the first line it finds one in.
fn first_line_value(text: &str, value_in: impl Fn(&str) -> Option<Range<usize>>) -> Option<Range<usize>> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if let Some(range) = value_in(line) {
            return Some(offset + range.start..offset + range.end);
        }
        offset += line.len();
    }
    None
}

/// Within one line `#define NAME value`, the value's range.
fn define_line_value(line: &str, name: &str) -> Option<Range<usize>> {
    let rest = line.trim().strip_prefix("#define")?.trim_start().strip_prefix(name)?;
    let value = rest.split("//").next().unwrap_or_default().trim();
    if value.is_empty() || !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let start = line.find(value)?;
    Some(start..start + value.len())
}

/// The value of `#define NAME value` on the line after `#ifndef NAME` (the guard templatize
/// writes, so that `-DNAME=…` overrides it).
fn guarded_define_value(text: &str, name: &str) -> Option<Range<usize>> {
    let mut offset = 0;
    let mut guarded = false;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if guarded {
            let range = define_line_value(line, name)?;
            return Some(offset + range.start..offset + range.end);
        }
        guarded = trimmed.strip_prefix("#ifndef").map(str::trim) == Some(name);
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::apply_edits;

    fn spec(text: &str, kernel: &str) -> KernelSpec {
        crate::template::templatize(text, kernel, &crate::slice::SliceOptions::default()).expect("templatizes").spec
    }

    #[test]
    fn define_defaults_are_rewritten_and_compiler_options_become_notes() {
        let original = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/rmsnorm.cu")).unwrap();
        let templatized = crate::template::templatize(&original, "rmsnorm_kernel", &crate::slice::SliceOptions::default()).unwrap();
        let kernel = templatized.spec.clone();
        let config = Configuration(vec![("BLOCK_SIZE".into(), 512), ("RMSNORM_UNROLL".into(), 4), ("RMSNORM_VEC".into(), 8), ("fast_math".into(), 1), ("max_registers".into(), 64)]);
        let applied = apply_defaults(&templatized.text, &kernel, &config).unwrap();
        assert_eq!(applied.edits.len(), 2, "RMSNORM_UNROLL keeps its value: {:?}", applied.edits);
        let rewritten = apply_edits(&templatized.text, &applied.edits).unwrap();
        assert!(rewritten.contains("#ifndef BLOCK_SIZE\n#define BLOCK_SIZE 512\n"), "{rewritten}");
        assert!(rewritten.contains("#define RMSNORM_VEC 8"), "{rewritten}");
        assert_eq!(applied.notes, ["fast_math=1: compile with --use_fast_math (nvcc -use_fast_math)", "max_registers=64: compile with --maxrregcount=64"]);
        // The rewritten file still has every parameter, now with the tuned defaults.
        let again = apply_defaults(&rewritten, &kernel, &config).unwrap();
        assert_eq!(again.edits, []);
        let values = |text: &str| {
            let document = Document::new(text.to_string());
            let definition = document.model().kernels.iter().find(|k| k.is_definition && k.name == kernel.name).cloned();
            current_values(text, &kernel, definition.as_ref()).into_iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join(" ")
        };
        assert_eq!(values(&rewritten), "BLOCK_SIZE=512 RMSNORM_UNROLL=4 RMSNORM_VEC=8 RMSNORM_ROW_REGS=0 RMSNORM_WARP_SHUFFLE=0");
        // The original file: its own `#define`, and the spec's defaults for what it lacks.
        assert_eq!(values(&original), "BLOCK_SIZE=256 RMSNORM_UNROLL=4 RMSNORM_VEC=1 RMSNORM_ROW_REGS=0 RMSNORM_WARP_SHUFFLE=0");
    }

    #[test]
    fn a_file_that_was_not_templatized_is_refused_in_words() {
        let original = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/rmsnorm.cu")).unwrap();
        let kernel = spec(&original, "rmsnorm_kernel");
        let config = Configuration(vec![("RMSNORM_VEC".into(), 8)]);
        let error = apply_defaults(&original, &kernel, &config).unwrap_err();
        assert!(error.contains("no `#ifndef RMSNORM_VEC` / `#define RMSNORM_VEC …` to rewrite: templatize `rmsnorm_kernel` first"), "{error}");
    }

    #[test]
    fn a_macro_lifted_where_it_is_is_rewritten_in_its_file_or_said_for_its_header() {
        let own = "#define LIMIT 1024U\n__global__ void k(unsigned *x) { x[threadIdx.x] = LIMIT; }\n";
        let kernel = |origin: &str| KernelSpec {
            params: vec![crate::spec::ParamSpec { name: "LIMIT".into(), kind: ParamKind::Define, default: 1024, values: vec![512, 1024], origin: origin.into() }],
            ..spec(own, "k")
        };
        let config = Configuration(vec![("LIMIT".into(), 512)]);
        let applied = apply_defaults(own, &kernel("`#define LIMIT 1024` at k.cu:1, which the kernel's code uses too: each value is a build of the kernel"), &config).unwrap();
        assert_eq!(apply_edits(own, &applied.edits).unwrap(), own.replace("1024U", "512"));
        let header = "#include \"config.h\"\n__global__ void k(unsigned *x) { x[threadIdx.x] = LIMIT; }\n";
        let origin = "`#define LIMIT 1024` at config.h:3, which the kernel's code uses too: each value is a build of the kernel";
        let applied = apply_defaults(header, &kernel(origin), &config).unwrap();
        assert_eq!(applied.edits, []);
        assert_eq!(applied.notes, [format!("LIMIT=512: set it where it is defined, {origin}")]);
        // At its default there is nothing to say.
        assert_eq!(apply_defaults(header, &kernel(origin), &Configuration(vec![("LIMIT".into(), 1024)])).unwrap().notes, Vec::<String>::new());
    }

    #[test]
    fn a_file_scope_constant_lifted_where_it_is_gets_the_value_and_keeps_its_type() {
        let own = "const int TILE_DIM = 32;\n__global__ void k(float *x) { __shared__ float t[TILE_DIM]; t[0] = 1; x[0] = t[0]; }\n";
        let origin = "`const int TILE_DIM = 32` at k.cu:1, which the kernel's code uses too: each value is a build of the kernel";
        let kernel = KernelSpec {
            params: vec![crate::spec::ParamSpec { name: "TILE_DIM".into(), kind: ParamKind::Define, default: 32, values: vec![16, 32, 64], origin: origin.into() }],
            ..spec(own, "k")
        };
        let applied = apply_defaults(own, &kernel, &Configuration(vec![("TILE_DIM".into(), 64)])).unwrap();
        assert_eq!(apply_edits(own, &applied.edits).unwrap(), own.replace("= 32;", "= 64;"));
        assert_eq!(current_values(own, &kernel, None), [("TILE_DIM".to_string(), "32".to_string())]);
    }

    #[test]
    fn template_parameter_defaults_are_rewritten() {
        let text = "template <int BLOCK = 128, int ITEMS>\n__global__ void k(float* out) { out[threadIdx.x] = BLOCK * ITEMS; }\n";
        let mut kernel = spec(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/rmsnorm.cu")).unwrap(), "rmsnorm_kernel");
        kernel.name = "k".into();
        kernel.params = ["BLOCK", "ITEMS"]
            .map(|name| crate::spec::ParamSpec { name: name.into(), kind: ParamKind::Template, default: 1, values: vec![1, 4, 256], origin: String::new() })
            .to_vec();
        let config = Configuration(vec![("BLOCK".into(), 256), ("ITEMS".into(), 4)]);
        let applied = apply_defaults(text, &kernel, &config).unwrap();
        assert_eq!(apply_edits(text, &applied.edits).unwrap(), text.replace("BLOCK = 128", "BLOCK = 256"));
        assert_eq!(applied.notes, ["ITEMS=4: a template parameter without a default; pass 4 at the launch sites"]);
    }
}
