//! `dataplane`: the controller of the eBPF data plane. Parses the command
//! line and hands each subcommand to its function in `cli`.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::args::Cli::parse_sonic(std::env::args_os());
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dataplane: {e:#}");
            ExitCode::from(2)
        }
    }
}
