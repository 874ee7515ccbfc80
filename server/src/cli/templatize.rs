//! `cutune templatize FILE --kernel NAME [--diff | --write]`.

use std::path::PathBuf;

use anyhow::Result;

use crate::template;

#[derive(clap::Args)]
pub struct TemplatizeArgs {
    /// The CUDA source file.
    pub file: PathBuf,
    /// The kernel to templatize.
    #[arg(long)]
    pub kernel: String,
    /// Print a unified diff of the source and the spec instead of the new source.
    #[arg(long, conflicts_with = "write")]
    pub diff: bool,
    /// Rewrite the source in place and write the spec beside it.
    #[arg(long)]
    pub write: bool,
}

pub fn run(args: &TemplatizeArgs) -> Result<()> {
    let templatized = template::templatize_file(&args.file, &args.kernel)?;
    eprint!("{}", template::report(&args.file, &templatized.result));
    if templatized.formatted {
        eprintln!("{}: the changed lines are formatted with clang-format and the project's .clang-format", args.file.display());
    }
    if args.write {
        templatized.write()?;
        eprintln!("wrote {} and {}", args.file.display(), templatized.spec_path.display());
    } else if args.diff {
        print!("{}", templatized.diff());
    } else {
        print!("{}", templatized.result.text);
    }
    Ok(())
}
