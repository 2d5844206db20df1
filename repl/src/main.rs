//! The `dx` binary: the REPL (`dx`), the script runner (`dx run FILE`, `dx FILE.dx`), the
//! test runner (`dx test FILE…`), the Jupyter kernel (`dx kernel`) and notebook conversion
//! (`dx convert`). Everything runs on one thread with a large stack, because
//! deeply nested programs recurse deeply in the compiler.

mod allocator;
mod cli;
mod convert;
mod entry;
mod helper;
mod literate;
mod repl;
mod spinner;

use std::process::ExitCode;

/// Stack size of the thread that parses, compiles and evaluates.
const EVAL_STACK_BYTES: usize = 256 * 1024 * 1024;

fn main() -> ExitCode {
    allocator::keep_freed_buffers();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let worker = std::thread::Builder::new()
        .name("dx".to_owned())
        .stack_size(EVAL_STACK_BYTES)
        .spawn(move || cli::main(args));
    match worker {
        Ok(handle) => match handle.join() {
            Ok(status) => ExitCode::from(status as u8),
            // The panic message has already been printed by the panic hook.
            Err(_) => ExitCode::from(101),
        },
        Err(err) => {
            eprintln!("dx: error: cannot start the evaluation thread: {err}");
            ExitCode::from(cli::Status::Usage as u8)
        }
    }
}
