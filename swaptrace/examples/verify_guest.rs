//! Prints the verification of a guest run's out/ directory (development aid).
fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: verify_guest OUT_DIR");
    let v = swaptrace::report::verify_guest_out(std::path::Path::new(&dir));
    print!("{}", v.report);
    if !v.failures.is_empty() {
        std::process::exit(1);
    }
}
