//! `pocketpilot autostart on|off|status`: the XDG autostart entry (core::autostart).
use std::io::Write;

use pocketpilot_core::autostart;

/// `pocketpilot autostart on|off|status`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Switch {
    On,
    Off,
    Status,
}

/// The CLI's `autostart` command: applies `switch`, then prints the state.
pub fn command(
    switch: Switch,
    out: &mut impl Write,
) -> Result<(), pocketpilot_core::autostart::AutostartError> {
    match switch {
        Switch::On => {
            autostart::enable(&autostart::current_program()?)?;
        }
        Switch::Off => {
            autostart::disable()?;
        }
        Switch::Status => {}
    }
    let s = autostart::status()?;
    let print = |out: &mut dyn Write| -> std::io::Result<()> {
        writeln!(
            out,
            "start at login: {}",
            if s.enabled { "on" } else { "off" }
        )?;
        writeln!(out, "entry: {}", s.path.display())?;
        if let Some(exec) = &s.exec {
            writeln!(out, "exec: {exec}")?;
        }
        Ok(())
    };
    // stdout closed early (`| head`) is not the entry's problem.
    let _ = print(out);
    Ok(())
}
