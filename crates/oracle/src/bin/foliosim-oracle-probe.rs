//! The probe child on its own, for this crate's tests and for running the
//! real probe without the CLI: `foliosim-oracle-probe --file F --file-size 2G
//! --pattern random --fraction 0.01 --seed 1` prints one JSON line.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = foliosim_oracle::run::probe_child_main(&args) {
        eprintln!("foliosim-oracle-probe: {e}");
        std::process::exit(2);
    }
}
