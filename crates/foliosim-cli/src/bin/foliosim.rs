//! The `foliosim` binary: the command line lives in the library (so the
//! Python bindings and the sweep workers run points exactly as it does).

fn main() -> std::process::ExitCode {
    foliosim_cli::main()
}
