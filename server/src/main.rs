use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Find, templatize and tune CUDA kernels from the editor.
#[derive(Parser)]
#[command(name = "cutune", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the language server on stdin/stdout.
    Lsp,
    /// List the kernels, launch sites, tunable sites and findings of a CUDA file.
    Kernels {
        file: PathBuf,
        /// Print the whole model as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Measure analysis speed and server memory on generated CUDA files.
    Bench(cutune::cli::bench::BenchArgs),
    /// Check that this machine can compile kernels (NVRTC) and measure them (CUDA driver, GPU).
    Doctor(cutune::cli::doctor::DoctorArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Lsp => return ExitCode::from(cutune::lsp::run_stdio() as u8),
        Command::Kernels { file, json } => cutune::cli::kernels(&file, json).map(|out| print!("{out}")),
        Command::Bench(args) => cutune::cli::bench::run(&args),
        Command::Doctor(args) => cutune::cli::doctor::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
