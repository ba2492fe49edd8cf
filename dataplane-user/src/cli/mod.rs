//! One function per `dataplane` subcommand; [`run`] sets up logging and the
//! namespace, then dispatches.

pub mod args;
mod config;
mod deploy;
mod p4;
mod routes;
mod show;
mod sonic;
mod up;

use anyhow::Result;
use dataplane_user::sys;

use args::{plan_of, Cli, Cmd, ConfigCmd, P4Cmd};

/// Runs one command line.
pub fn run(cli: Cli) -> Result<()> {
    let level = dataplane_user::log::parse_level(&cli.log_level).ok_or_else(|| {
        anyhow::anyhow!(
            "--log-level: expected error, warn, info or debug, got {:?}",
            cli.log_level
        )
    })?;
    dataplane_user::log::set(level, cli.log_json);
    // Validate before anything touches the system.
    let up_plan = match &cli.cmd {
        Cmd::Up(run) | Cmd::Upgrade(run) => Some(plan_of(&run.config)?),
        _ => None,
    };
    // setns before any thread exists, so every thread lives in the namespace
    if let Some(ns) = &cli.netns {
        sys::enter_netns(ns)?;
    }
    match cli.cmd {
        Cmd::GenerateDocs { out } => generate_docs(&out),
        Cmd::Up(run) => up::up(up_plan.expect("validated above"), run),
        Cmd::Upgrade(run) => up::upgrade(up_plan.expect("validated above"), run),
        Cmd::Reload { config } => up::request_reload(&config),
        Cmd::Routes { which, json } => routes::show(&which.name()?, json),
        Cmd::Stats { which, json } => show::stats(&which.name()?, json),
        Cmd::Show {
            which,
            json,
            empty,
            nonzero,
            history,
            period,
            printall,
            target,
        } => show::show(
            &which,
            &target,
            json,
            show::Flags {
                empty,
                nonzero,
                history,
                period,
                printall,
            },
        ),
        Cmd::Clear {
            which,
            delete,
            target,
        } => show::clear(&which, &target, delete),
        Cmd::Watch { which, interval } => show::watch(&which.name()?, interval),
        Cmd::Down { which } => show::down(&which.name()?),
        Cmd::Events {
            which,
            count,
            timeout,
            pcapng,
            history,
        } => show::events(&which.name()?, count, timeout, pcapng.as_deref(), history),
        Cmd::P4 {
            cmd:
                P4Cmd::Entries {
                    target,
                    config,
                    out,
                    bmv2_packet_bytes,
                    tofino_cell_bytes,
                    learned,
                },
        } => p4::entries(
            &target,
            &config,
            &out,
            bmv2_packet_bytes,
            tofino_cell_bytes,
            learned,
        ),
        Cmd::P4 {
            cmd:
                P4Cmd::Stats {
                    target,
                    config,
                    thrift_port,
                    json,
                },
        } => p4::stats(&target, &config, thrift_port, json),
        Cmd::Doctor { config, json } => deploy::doctor(config.as_deref(), json),
        Cmd::InstallService {
            config,
            instance,
            exec,
            root,
        } => deploy::install_service(config.as_deref(), instance, exec, &root),
        Cmd::Config {
            cmd: ConfigCmd::Check { config, resolve },
        } => config::check(&config, resolve),
        Cmd::Config {
            cmd:
                ConfigCmd::ImportSonic {
                    input,
                    ports,
                    strict,
                    output,
                },
        } => sonic::import(&input, ports.as_deref(), strict, &output),
        Cmd::Config {
            cmd: ConfigCmd::Reference,
        } => {
            print!("{}", dataplane_config::reference::markdown());
            Ok(())
        }
        Cmd::Config {
            cmd: ConfigCmd::ExportSonic { config, output },
        } => sonic::export(&config, output.as_deref()),
    }
}

/// Prints a line (info level); a closed stdout (the reader went away) is
/// not an error for a long-running controller.
fn say(line: &str) {
    dataplane_user::log::info(line);
}

/// Man pages and shell completions from the clap definition.
fn generate_docs(out: &std::path::Path) -> Result<()> {
    use clap::CommandFactory;
    cli_docs::generate(Cli::command(), out)
}
