//! Several configurations of one source in one NVRTC program.
//!
//! Each configuration gets its own namespace holding its `#define`s and a copy of the source,
//! and the headers are included once, above them all. NVRTC then parses `cuda_fp16.h` and
//! friends once per program instead of once per configuration. On the lent H100 (NVRTC 13.0, 4
//! threads), the 24 RMSNorm configurations of the Kernel Tuner side-by-side took 1.07 s of
//! compile time one per program and 0.52 s eight per program (`tests/gpu/tune_suite.sh`,
//! docs/benchmarks.md).
//!
//! Not every source survives the wrapping (C linkage ignores namespaces; a header included
//! inside a conditional would be hoisted out of it), so [`batch`] refuses those and callers
//! compile a failed batch one configuration at a time.

use super::{CompileOutput, CompileRequest, KernelResources};

/// One program compiling every request, or `None` when they cannot share one: they differ in
/// anything but their defines and name expressions, or the source does not allow the wrapping.
pub fn batch(requests: &[CompileRequest]) -> Option<CompileRequest> {
    let first = requests.first()?;
    let compatible = requests.iter().all(|r| {
        r.source == first.source && r.file_name == first.file_name && r.arch == first.arch && r.options == first.options && r.include_dirs == first.include_dirs && r.cubin == first.cubin
    });
    if !compatible || first.source.contains("extern \"C\"") || !requests.iter().all(|r| r.name_expressions.iter().all(|e| e.starts_with('&'))) {
        return None;
    }
    let (includes, body): (Vec<&str>, Vec<&str>) = first.source.lines().partition(|l| l.trim_start().starts_with("#include"));
    let body = body.join("\n");
    // A guard or parameter macro left defined would hide the next copy's definitions.
    let body_macros = defined_macros(&body);
    let mut source = includes.join("\n");
    source.push('\n');
    let mut name_expressions = Vec::new();
    for (i, request) in requests.iter().enumerate() {
        let space = namespace(i);
        source.push_str(&format!("namespace {space} {{\n"));
        for (name, value) in &request.defines {
            source.push_str(&format!("#define {name} {value}\n"));
        }
        source.push_str(&body);
        source.push('\n');
        let mut undefined: Vec<&str> = request.defines.iter().map(|(n, _)| n.as_str()).collect();
        undefined.extend(body_macros.iter().map(String::as_str));
        undefined.sort_unstable();
        undefined.dedup();
        for name in undefined {
            source.push_str(&format!("#undef {name}\n"));
        }
        source.push_str("}\n");
        name_expressions.extend(request.name_expressions.iter().map(|e| format!("&{space}::{}", &e[1..])));
    }
    Some(CompileRequest { source, defines: Vec::new(), name_expressions, ..first.clone() })
}

/// The per-request share of a batch's output: each request's lowered names and the resources of
/// its kernels, in request order.
pub fn split(output: &CompileOutput, requests: &[CompileRequest]) -> Vec<(Vec<(String, String)>, Vec<KernelResources>)> {
    let mut lowered = output.lowered_names.iter();
    requests
        .iter()
        .map(|request| {
            let names: Vec<(String, String)> =
                request.name_expressions.iter().zip(lowered.by_ref()).map(|(expression, (_, mangled))| (expression.clone(), mangled.clone())).collect();
            let kernels = output.kernels.iter().filter(|k| names.iter().any(|(_, m)| *m == k.name)).cloned().collect();
            (names, kernels)
        })
        .collect()
}

fn namespace(index: usize) -> String {
    format!("cutune_config_{index}")
}

fn defined_macros(source: &str) -> Vec<String> {
    let mut names: Vec<String> = source
        .lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('#')?.trim_start().strip_prefix("define")?;
            let name: String = rest.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            (!name.is_empty()).then_some(name)
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(defines: &[(&str, &str)]) -> CompileRequest {
        let mut r = CompileRequest::new(
            "#include <cuda_fp16.h>\n#ifndef BLOCK\n#define BLOCK 256\n#endif\n#ifndef GUARD\n#define GUARD\nstruct helper {};\n#endif\n__global__ void k(half* x) { x[threadIdx.x] = __float2half(BLOCK); }\n",
            "k.cu",
            "sm_90",
        );
        r.defines = defines.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        r.name_expressions = vec!["&k".into()];
        r
    }

    #[test]
    fn each_configuration_gets_a_namespace_and_headers_come_first_once() {
        let requests = [request(&[("BLOCK", "64")]), request(&[("BLOCK", "128")])];
        let batched = batch(&requests).unwrap();
        assert!(batched.source.starts_with("#include <cuda_fp16.h>\nnamespace cutune_config_0 {\n#define BLOCK 64\n"));
        assert_eq!(batched.source.matches("#include").count(), 1);
        assert!(batched.source.contains("#undef BLOCK\n#undef GUARD\n}\nnamespace cutune_config_1 {\n#define BLOCK 128\n"));
        assert_eq!(batched.name_expressions, vec!["&cutune_config_0::k", "&cutune_config_1::k"]);
        assert!(batched.defines.is_empty());
    }

    #[test]
    fn sources_or_options_that_cannot_share_a_program_are_refused() {
        let mut other_options = request(&[]);
        other_options.options.push("--use_fast_math".into());
        assert!(batch(&[request(&[]), other_options]).is_none());
        let mut c_linkage = request(&[]);
        c_linkage.source = format!("extern \"C\" {}", c_linkage.source);
        assert!(batch(&[c_linkage]).is_none());
    }
}
