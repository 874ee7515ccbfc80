//! Where a struct's members lie, as the compiler lays them out: a struct passed to a kernel by
//! value (`ConvParams params`) is packed byte by byte at these offsets before each launch.
//!
//! The layout is asked of NVRTC itself rather than worked out from C's rules: base classes,
//! `alignas`, bit widths of `bool`, nested structs and arrays are the compiler's business. The
//! kernel's source is compiled to PTX with a constant table appended (the struct's size, then
//! each member's size and offset) and the table is read back from the PTX. No GPU is needed.

use super::{CompileFailure, CompileRequest, Nvrtc, Severity};
use crate::spec::{KernelSpec, StructLayout};

/// The table's symbol in the PTX.
const TABLE: &str = "cutune_struct_layout";

/// The layout of `struct_type` with `members` (`x_ptr`, `shape.rows`, `strides[1]`), compiled
/// as `request` compiles the kernel's source (its options and defines; no cubin is made). An
/// error names the member the compiler refused, in its words.
pub fn struct_layout(nvrtc: &Nvrtc, request: &CompileRequest, struct_type: &str, members: &[&str]) -> Result<StructLayout, String> {
    // 1-based: the source's lines, then the typedef, the table's opening and its size.
    let first_member_line = request.source.lines().count() + 4;
    let mut probe = CompileRequest { source: with_layout_table(&request.source, struct_type, members), cubin: false, name_expressions: Vec::new(), ..request.clone() };
    probe.arch = probe.arch.replacen("sm_", "compute_", 1);
    let output = nvrtc.compile(&probe).map_err(|failure| refusal(&failure, struct_type, members, first_member_line))?;
    let table = read_table(&output.ptx).ok_or_else(|| format!("NVRTC compiled the layout of `{struct_type}` but its PTX has no table `{TABLE}`"))?;
    let (&bytes, rest) = table.split_first().ok_or_else(|| format!("the layout table of `{struct_type}` is empty"))?;
    let fields = members.iter().enumerate().map(|(i, _)| (rest.get(2 * i + 1).copied().unwrap_or(0), rest.get(2 * i).copied().unwrap_or(0))).collect();
    Ok(StructLayout { bytes, fields })
}

/// Sets the layout of each struct argument of `kernel`, compiling `source` (the kernel's device
/// slice) as its default configuration compiles. The error names the argument.
pub fn resolve_struct_layouts(kernel: &mut KernelSpec, source: &str, nvrtc: &Nvrtc, arch: &str) -> Result<(), String> {
    if !kernel.args.iter().any(|a| a.is_struct()) {
        return Ok(());
    }
    let request = crate::space::compile_request(kernel, source, arch, &crate::space::Configuration::default_of(kernel));
    for arg in kernel.args.iter_mut().filter(|a| a.is_struct()) {
        let members: Vec<&str> = arg.fields.iter().map(|f| f.name.as_str()).collect();
        let struct_type = arg.struct_type.as_deref().unwrap_or_default();
        arg.layout = Some(struct_layout(nvrtc, &request, struct_type, &members).map_err(|why| format!("struct argument `{}`: {why}", arg.name))?);
    }
    Ok(())
}

/// `source` with the table after it: the struct's size, then each member's size and offset,
/// one member per line so that an error's line names the member. `__INTADDR__` is the front
/// end's own `offsetof`, which NVRTC has no header for.
fn with_layout_table(source: &str, struct_type: &str, members: &[&str]) -> String {
    let newline = if source.ends_with('\n') || source.is_empty() { "" } else { "\n" };
    let mut text = format!("{source}{newline}typedef {struct_type} cutune_layout_of;\nextern \"C\" __device__ const unsigned long long {TABLE}[] = {{\n    sizeof(cutune_layout_of),\n");
    for member in members {
        text.push_str(&format!(
            "    sizeof(((cutune_layout_of *)0)->{member}), (unsigned long long)__INTADDR__(&(((cutune_layout_of *)0)->{member})),\n"
        ));
    }
    text.push_str("};\n");
    text
}

/// The compiler's refusal of the probe in the spec's words: a member it does not have, or the
/// type it cannot name (defined in no file the kernel includes, or a template parameter).
fn refusal(failure: &CompileFailure, struct_type: &str, members: &[&str], first_member_line: usize) -> String {
    let error = failure.diagnostics.iter().find(|d| d.severity == Severity::Error);
    let Some((error, line)) = error.and_then(|e| Some((e, e.line? as usize))) else {
        return format!("the layout of struct `{struct_type}` could not be compiled: {}", failure.message);
    };
    match line.checked_sub(first_member_line).and_then(|i| members.get(i)) {
        Some(member) => format!("struct `{struct_type}` has no member `{member}` the kernel's source can read ({})", error.message),
        None if line + 3 >= first_member_line => format!("the kernel's source does not name the type `{struct_type}` ({})", error.message),
        None => format!("the kernel's source does not compile, so the layout of `{struct_type}` is not known: {}", failure.message),
    }
}

/// The table's numbers from `.global .align 8 .b8 cutune_struct_layout[24] = {72, 0, …};`
/// (little-endian bytes, zeros at the end left out) or `.u64 …[3] = {72, 4, 8};`.
fn read_table(ptx: &str) -> Option<Vec<u64>> {
    let line = ptx.lines().find(|l| l.contains(&format!(" {TABLE}[")))?;
    let declared: usize = line.split(&format!("{TABLE}[")).nth(1)?.split(']').next()?.parse().ok()?;
    let values: Vec<u64> = match line.split_once('{') {
        Some((_, rest)) => rest.trim_end_matches([';', ' ']).trim_end_matches('}').split(',').map(|v| v.trim().parse().ok()).collect::<Option<_>>()?,
        None => Vec::new(),
    };
    if line.contains(".b8 ") {
        let mut bytes = values;
        bytes.resize(declared, 0);
        return Some(bytes.chunks(8).map(|word| word.iter().rev().fold(0, |n, &b| (n << 8) | b)).collect());
    }
    let mut words = values;
    words.resize(declared, 0);
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_read_from_bytes_with_trailing_zeros_left_out_and_from_words() {
        let bytes = ".global .align 8 .b8 cutune_struct_layout[24] = {72, 0, 0, 0, 0, 0, 0, 0, 8, 1, 0, 0, 0, 0, 0, 0, 4};";
        assert_eq!(read_table(bytes), Some(vec![72, 264, 4]));
        let words = ".global .align 8 .u64 cutune_struct_layout[3] = {72, 4, 8};";
        assert_eq!(read_table(words), Some(vec![72, 4, 8]));
        assert_eq!(read_table(".global .align 8 .u64 other[1] = {1};"), None);
    }

    #[test]
    fn the_table_puts_one_member_on_each_line() {
        let text = with_layout_table("struct P { int n; };", "P", &["n", "m"]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[1], "typedef P cutune_layout_of;");
        // The first member's line, 1-based, is the source's lines + 4 (here 5).
        assert!(lines[4].contains("->n)") && lines[5].contains("->m)"), "{text}");
    }
}
