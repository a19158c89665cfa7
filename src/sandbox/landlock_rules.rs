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

/// Restricts this process (and what it execs) to the spec's paths and ports. Fails unless
/// Landlock is at least [`FLOOR`] (ABI 4 when ports are allowed), enforced, and
/// `no_new_privs` is set; returns the ABI in
/// effect.
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
    if abi < FLOOR {
        return Err(SandboxError::LandlockWeak(format!(
            "ABI {abi} is older than {FLOOR}"
        )));
    }
    if !spec.ports.is_empty() && abi < ABI::V4 {
        return Err(SandboxError::LandlockWeak(format!(
            "ABI {abi} cannot limit TCP to the allowed ports"
        )));
    }
    if status.ruleset == RulesetStatus::NotEnforced || !status.no_new_privs {
        return Err(SandboxError::LandlockWeak(format!("{status:?}")));
    }
    Ok(abi)
}
