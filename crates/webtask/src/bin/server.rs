//! The webtask's HTTP server as a program of its own: `lockstep-webtask-server --db PATH`
//! (the `lockstep` binary serves the same from a hidden subcommand).

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, db] if flag == "--db" => match lockstep_webtask::server::serve(db.as_ref()) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::ExitCode::from(2)
            }
        },
        _ => {
            eprintln!("usage: lockstep-webtask-server --db PATH");
            std::process::ExitCode::from(2)
        }
    }
}
