#[derive(clap::Args)]
pub struct BenchArgs {}
pub fn run(_: &BenchArgs) -> anyhow::Result<()> { todo!() }
