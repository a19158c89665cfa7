//! The Landlock ruleset: which files a command may touch, which TCP ports it may reach, and
//! (from ABI 6) that it may signal no process outside its own domain.

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, BitFlags, LandlockStatus, NetPort, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

use super::{SandboxError, Spec};

/// The newest ABI whose rights are asked for; older kernels grant what they can, down to
/// [`FLOOR`].
const NEWEST: ABI = ABI::V6;
/// The oldest ABI accepted: before it, renames and links across directories always fail.
const FLOOR: ABI = ABI::V2;

/// Restricts this process (and what it execs) to the spec's paths and ports; fails when
/// [`check`] finds the result too weak. Returns the ABI in effect.
pub(crate) fn restrict(spec: &Spec) -> Result<ABI, SandboxError> {
    let all = AccessFs::from_all(NEWEST);
    let read_exec = AccessFs::from_read(NEWEST);
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let device: BitFlags<AccessFs> =
        AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
    let tcp = AccessNet::BindTcp | AccessNet::ConnectTcp;
    let status = Ruleset::default()
        .handle_access(all)?
        .handle_access(tcp)?
        .scope(Scope::Signal | Scope::AbstractUnixSocket)?
        .create()?
        .add_rules(path_beneath_rules([&spec.root, &spec.tmp], all))?
        .add_rules(path_beneath_rules(spec.read_exec_paths(), read_exec))?
        .add_rules(path_beneath_rules(spec.read_paths(), read))?
        .add_rules(path_beneath_rules(spec.device_paths(), device))?
        .add_rules(spec.ports.iter().map(|&port| {
            Ok::<_, landlock::RulesetError>(NetPort::new(port, AccessNet::ConnectTcp))
        }))?
        .restrict_self()?;
    let abi = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi,
        other => return Err(SandboxError::LandlockWeak(format!("{other:?}"))),
    };
    let enforced = status.ruleset != RulesetStatus::NotEnforced;
    check(abi, enforced, status.no_new_privs, !spec.ports.is_empty())?;
    Ok(abi)
}

/// Whether what `restrict_self` reached is enough: ABI [`FLOOR`] (4 when TCP ports are
/// allowed, since older ones cannot limit them), the ruleset enforced, `no_new_privs` set.
fn check(abi: ABI, enforced: bool, no_new_privs: bool, ports: bool) -> Result<(), SandboxError> {
    if abi < FLOOR {
        return Err(SandboxError::LandlockWeak(format!(
            "ABI {abi} is older than {FLOOR}"
        )));
    }
    if ports && abi < ABI::V4 {
        return Err(SandboxError::LandlockWeak(format!(
            "ABI {abi} cannot limit TCP to the allowed ports"
        )));
    }
    if !enforced || !no_new_privs {
        return Err(SandboxError::LandlockWeak(format!(
            "enforced: {enforced}, no_new_privs: {no_new_privs}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_abi_or_a_ruleset_not_enforced_is_refused() {
        assert!(check(ABI::V1, true, true, false).is_err());
        assert!(check(ABI::V2, true, true, false).is_ok());
        assert!(check(ABI::V3, true, true, true).is_err());
        assert!(check(ABI::V4, true, true, true).is_ok());
        assert!(check(ABI::V6, false, true, false).is_err());
        assert!(check(ABI::V6, true, false, false).is_err());
    }
}
