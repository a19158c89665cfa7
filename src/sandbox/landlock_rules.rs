//! The Landlock ruleset: which files a command may touch, which TCP ports it may reach, which
//! Unix sockets it may connect to (ABI 9), and (from ABI 6) that it may signal no process
//! outside its own domain.

use std::path::Path;

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, LandlockStatus, NetPort, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetError, RulesetStatus, Scope, ABI,
};

use super::{SandboxError, Spec};

/// The newest ABI whose rights are asked for when the spec names none; older kernels grant
/// what they can, down to [`FLOOR`].
pub(crate) const NEWEST: ABI = ABI::V9;
/// The oldest ABI accepted: before it, renames and links across directories always fail.
const FLOOR: ABI = ABI::V2;

/// Restricts this process (and what it execs) to the spec's paths and ports; fails when
/// [`check`] finds the result too weak. Returns the ABI in effect: the spec's, else the
/// kernel's (at most [`NEWEST`]); the seccomp filter covers what it lacks.
pub(crate) fn restrict(spec: &Spec) -> Result<ABI, SandboxError> {
    let wanted = spec.landlock_abi.map(|abi| ABI::from(i32::from(abi)));
    let target = wanted.unwrap_or(NEWEST);
    let mut all = AccessFs::from_all(target);
    if spec.unix_sockets {
        all.remove(AccessFs::ResolveUnix);
    }
    let read_exec = AccessFs::from_read(target);
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let device: BitFlags<AccessFs> =
        AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;
    let mut ruleset = Ruleset::default().handle_access(all)?;
    if target >= ABI::V4 {
        ruleset = ruleset.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp)?;
    }
    if target >= ABI::V6 {
        ruleset = ruleset.scope(Scope::Signal | Scope::AbstractUnixSocket)?;
    }
    // Before ABI 4 TCP is not handled, so no port can be allowed; `check` then fails set-up.
    let ports = if target >= ABI::V4 {
        spec.ports.as_slice()
    } else {
        &[]
    };
    let status = ruleset
        .create()?
        .add_rules(beneath([&spec.root, &spec.tmp], all))?
        .add_rules(beneath(spec.read_exec_paths(), read_exec))?
        .add_rules(beneath(spec.read_paths(), read))?
        .add_rules(beneath(spec.device_paths(), device & all))?
        .add_rules(ports.iter().map(|&port| {
            Ok::<_, landlock::RulesetError>(NetPort::new(port, AccessNet::ConnectTcp))
        }))?
        .restrict_self()?;
    let kernel = match status.landlock {
        LandlockStatus::Available { effective_abi, .. } => effective_abi,
        other => return Err(SandboxError::LandlockWeak(format!("{other:?}"))),
    };
    let enforced = status.ruleset != RulesetStatus::NotEnforced;
    let abi = kernel.min(target);
    check(Reached {
        abi,
        kernel,
        wanted,
        enforced,
        no_new_privs: status.no_new_privs,
        ports: !spec.ports.is_empty(),
    })?;
    Ok(abi)
}

/// Rules allowing `access` beneath each of `paths` that can be opened (one that cannot is
/// left out: nothing there to allow). Unlike the crate's `path_beneath_rules`, without an
/// `fstat` of its own per path (166 for `/etc` on a test machine): `PathBeneath` already
/// narrows a file's rule to the rights a file can have, and the ruleset then reports itself
/// partly enforced, which [`check`] accepts.
fn beneath<I, P>(
    paths: I,
    access: BitFlags<AccessFs>,
) -> impl Iterator<Item = Result<PathBeneath<PathFd>, RulesetError>>
where
    I: IntoIterator<Item = P>,
    P: AsRef<Path>,
{
    paths
        .into_iter()
        .filter_map(|path| PathFd::new(path).ok())
        .map(move |fd| Ok(PathBeneath::new(fd, access)))
}

/// What `restrict_self` reached.
struct Reached {
    /// The ABI in effect.
    abi: ABI,
    /// The kernel's ABI (at most the newest this build knows).
    kernel: ABI,
    /// The ABI the spec asked for.
    wanted: Option<ABI>,
    enforced: bool,
    no_new_privs: bool,
    /// Whether the spec allows TCP ports.
    ports: bool,
}

/// Whether what `restrict_self` reached is enough: ABI [`FLOOR`] (4 when TCP ports are
/// allowed, since older ones cannot limit them), the ABI the spec asked for, the ruleset
/// enforced, `no_new_privs` set.
fn check(reached: Reached) -> Result<(), SandboxError> {
    let Reached { abi, kernel, .. } = reached;
    if let Some(wanted) = reached.wanted.filter(|&wanted| kernel < wanted) {
        return Err(SandboxError::LandlockWeak(format!(
            "the kernel has ABI {kernel}, older than the {wanted} asked for"
        )));
    }
    if abi < FLOOR {
        return Err(SandboxError::LandlockWeak(format!(
            "ABI {abi} is older than {FLOOR}"
        )));
    }
    if reached.ports && abi < ABI::V4 {
        return Err(SandboxError::LandlockWeak(format!(
            "ABI {abi} cannot limit TCP to the allowed ports"
        )));
    }
    if !reached.enforced || !reached.no_new_privs {
        return Err(SandboxError::LandlockWeak(format!(
            "enforced: {}, no_new_privs: {}",
            reached.enforced, reached.no_new_privs
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reached(abi: ABI, ports: bool) -> Reached {
        Reached {
            abi,
            kernel: abi,
            wanted: None,
            enforced: true,
            no_new_privs: true,
            ports,
        }
    }

    #[test]
    fn an_old_abi_or_a_ruleset_not_enforced_is_refused() {
        assert!(check(reached(ABI::V1, false)).is_err());
        assert!(check(reached(ABI::V2, false)).is_ok());
        assert!(check(reached(ABI::V3, true)).is_err());
        assert!(check(reached(ABI::V4, true)).is_ok());
        let not_enforced = Reached {
            enforced: false,
            ..reached(ABI::V6, false)
        };
        assert!(check(not_enforced).is_err());
        let no_nnp = Reached {
            no_new_privs: false,
            ..reached(ABI::V6, false)
        };
        assert!(check(no_nnp).is_err());
    }

    #[test]
    fn a_kernel_older_than_the_abi_asked_for_is_refused() {
        let older = Reached {
            kernel: ABI::V5,
            wanted: Some(ABI::V6),
            ..reached(ABI::V5, false)
        };
        let error = check(older).unwrap_err().to_string();
        assert!(error.contains("ABI 5, older than the 6"), "{error}");
        let same = Reached {
            wanted: Some(ABI::V5),
            ..reached(ABI::V5, false)
        };
        assert!(check(same).is_ok());
        let newer = Reached {
            kernel: ABI::V7,
            wanted: Some(ABI::V5),
            ..reached(ABI::V5, false)
        };
        assert!(check(newer).is_ok());
    }
}
