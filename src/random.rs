//! Random identifiers and secrets (session ids, instance ids, the local token), drawn from
//! the system's randomness and written as lowercase hex.

/// `bytes` random bytes from the system, as lowercase hex (twice as many characters).
pub(crate) fn random_hex(bytes: usize) -> Result<String, getrandom::Error> {
    let mut random = vec![0_u8; bytes];
    getrandom::getrandom(&mut random)?;
    Ok(random.iter().map(|byte| format!("{byte:02x}")).collect())
}
