//! The `rummy` binary.
fn main() {
    println!("rummy");
}
