//! `cutune worker [--device N]`: the child process that owns the CUDA context while tuning.
//! Hidden from `--help`: the tuner starts it and talks to it on stdin/stdout (docs/worker.md).

/// Arguments of `cutune worker`.
#[derive(clap::Args)]
pub struct WorkerArgs {
    /// The CUDA device to measure on, by ordinal.
    #[arg(long, default_value_t = 0)]
    pub device: u32,
}

/// Serves requests until `shutdown` or the end of stdin; fails (non-zero exit) when the CUDA
/// context was lost, after answering the request that lost it.
pub fn run(args: &WorkerArgs) -> anyhow::Result<()> {
    crate::gpu::worker::serve(args.device, std::io::stdin().lock(), std::io::stdout().lock())
}
