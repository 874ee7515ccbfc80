//! `cutune slice FILE --kernel NAME`: the device-side code NVRTC needs for one kernel.

use std::path::PathBuf;

use anyhow::Result;

use crate::slice::{compile_flags_for, device_slice, SliceOptions};
use crate::syntax::Document;

#[derive(clap::Args)]
pub struct SliceArgs {
    file: PathBuf,
    /// The kernel to slice (its name, optionally namespace-qualified).
    #[arg(long)]
    kernel: String,
    /// An include directory, after those of the file's compile_commands.json entry.
    #[arg(short = 'I', value_name = "DIR")]
    include_dirs: Vec<PathBuf>,
    /// A macro definition, NAME or NAME=VALUE, after those of compile_commands.json.
    #[arg(short = 'D', value_name = "NAME[=VALUE]")]
    defines: Vec<String>,
    /// Ignore compile_commands.json.
    #[arg(long)]
    no_compile_commands: bool,
}

/// Prints the slice to stdout and, to stderr, one `file:line: note:` line per dropped include
/// and per unresolved name.
pub fn run(args: &SliceArgs) -> Result<()> {
    let text = super::read_source(&args.file)?;
    let mut opts = SliceOptions {
        file: Some(args.file.clone()),
        include_dirs: args.include_dirs.clone(),
        defines: args
            .defines
            .iter()
            .map(|d| match d.split_once('=') {
                Some((name, value)) => (name.to_string(), Some(value.to_string())),
                None => (d.clone(), None),
            })
            .collect(),
        includer: crate::slice::includer_prelude(&args.file),
        template_args: Vec::new(),
        define_params: Vec::new(),
    };
    if !args.no_compile_commands {
        if let Some(flags) = compile_flags_for(&args.file) {
            opts = opts.with_compile_flags(flags);
        }
    }
    let opts = opts.with_shipped_header_dirs();
    let slice = device_slice(&Document::new(text), &args.kernel, &opts)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.file.display()))?;
    print!("{}", slice.source);
    let file = args.file.display();
    for dropped in &slice.dropped_includes {
        eprintln!("{file}:{}: note: dropped #include {}: {}", dropped.line, dropped.path, dropped.reason);
    }
    for unresolved in &slice.unresolved {
        eprintln!("{file}:{}: note: unresolved `{}` (column {}): {}", unresolved.line, unresolved.symbol, unresolved.column, unresolved.why);
    }
    Ok(())
}
