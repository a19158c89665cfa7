//! The seccomp filters: a deny list of system calls a command has no business making (they
//! reach the kernel's global state or other processes), every socket family the spec does
//! not allow, and the fallbacks for what the kernel's Landlock ABI cannot check: `truncate`
//! by path before ABI 3, connecting to Unix sockets by path before ABI 9, signals to the
//! server and the supervisor before ABI 6.

use std::collections::BTreeMap;

use seccompiler::{
    apply_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};

use landlock::ABI;

use super::SandboxError;

/// Refused with `EPERM`, whatever their arguments.
const DENIED: &[libc::c_long] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_pidfd_getfd,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_mount_setattr,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_syslog,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_quotactl,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_open_by_handle_at,
];

/// Refused with `ENOSYS`, so the C library falls back on a call the filter can inspect:
/// `clone3` and `openat2` keep their flags behind a pointer.
const UNSUPPORTED: &[libc::c_long] = &[libc::SYS_clone3, libc::SYS_openat2];

/// `clone` flags that create namespaces.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWCGROUP,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
];

/// `personality` values a program may set: `PER_LINUX`, `PER_LINUX32`, and `0xffffffff`,
/// which only reads the current one.
const PERSONALITIES: &[u64] = &[0, 8, 0xffff_ffff];

/// Calls that send a signal to the process (or thread group) named by their first argument.
const SIGNALLING: &[libc::c_long] = &[
    libc::SYS_kill,
    libc::SYS_tkill,
    libc::SYS_tgkill,
    libc::SYS_rt_sigqueueinfo,
    libc::SYS_rt_tgsigqueueinfo,
];

/// What the filters depend on besides the fixed deny list.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    /// The Landlock ABI in effect: the filters cover what it cannot check.
    pub(crate) abi: ABI,
    /// Whether `AF_INET` and `AF_INET6` sockets are allowed (Landlock then limits TCP ports).
    pub(crate) network: bool,
    /// Whether Unix sockets are allowed whatever the ABI.
    pub(crate) unix_sockets: bool,
    /// Processes no signal may reach when Landlock cannot scope signals: the server and the
    /// supervisor (as processes and as process groups).
    pub(crate) protected: Vec<u32>,
}

impl Policy {
    /// Whether `socket(AF_UNIX, …)` is allowed: when the spec allows Unix sockets, or when
    /// Landlock checks connecting to them by path (ABI 9).
    fn unix_sockets_allowed(&self) -> bool {
        self.unix_sockets || self.abi >= ABI::V9
    }

    /// The socket families `socket` may create.
    fn families(&self) -> Vec<libc::c_int> {
        let mut families = Vec::new();
        if self.unix_sockets_allowed() {
            families.push(libc::AF_UNIX);
        }
        if self.network {
            families.extend([libc::AF_INET, libc::AF_INET6]);
        }
        families
    }
}

/// Installs the filters on this process; they hold across `exec` and for every descendant.
pub(crate) fn apply(policy: &Policy) -> Result<(), SandboxError> {
    for program in programs(policy)? {
        apply_filter(&program)?;
    }
    Ok(())
}

/// The two compiled filters: one answering `EPERM`, one `ENOSYS`.
fn programs(policy: &Policy) -> Result<[BpfProgram; 2], SandboxError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let compile = |rules, errno: i32| -> Result<BpfProgram, SandboxError> {
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno.unsigned_abs()),
            arch,
        )?;
        Ok(filter.try_into()?)
    };
    Ok([
        compile(denied(policy)?, libc::EPERM)?,
        compile(unsupported(policy), libc::ENOSYS)?,
    ])
}

/// The rules of the `EPERM` filter: a call is refused when any of its rules matches (a call
/// with no rule listed is refused whatever its arguments).
fn denied(policy: &Policy) -> Result<BTreeMap<i64, Vec<SeccompRule>>, SandboxError> {
    let mut denied: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|&nr| (nr, Vec::new())).collect();
    let namespaces = NAMESPACE_FLAGS
        .iter()
        .map(|&flag| {
            let flag = u64::from(flag.unsigned_abs());
            rule(vec![condition(0, SeccompCmpOp::MaskedEq(flag), flag)?])
        })
        .collect::<Result<_, _>>()?;
    denied.insert(libc::SYS_clone, namespaces);
    let personality = PERSONALITIES
        .iter()
        .map(|&value| condition(0, SeccompCmpOp::Ne, value))
        .collect::<Result<_, _>>()?;
    denied.insert(libc::SYS_personality, vec![rule(personality)?]);
    let families = policy.families();
    let socket = if families.is_empty() {
        Vec::new()
    } else {
        let other_family = families
            .into_iter()
            .map(|family| condition(0, SeccompCmpOp::Ne, u64::from(family.unsigned_abs())))
            .collect::<Result<_, _>>()?;
        vec![rule(other_family)?]
    };
    denied.insert(libc::SYS_socket, socket);
    if policy.abi < ABI::V3 {
        denied.insert(libc::SYS_truncate, Vec::new());
    }
    if policy.abi < ABI::V6 {
        let targets = signal_targets(&policy.protected)
            .into_iter()
            .map(|pid| rule(vec![condition(0, SeccompCmpOp::Eq, u64::from(pid))?]))
            .collect::<Result<Vec<_>, _>>()?;
        for &nr in SIGNALLING {
            denied.insert(nr, targets.clone());
        }
    }
    Ok(denied)
}

/// The first arguments of a signalling call that reach a protected process: `-1` (every
/// process), each protected id and its negative (its process group), as 32-bit values.
fn signal_targets(protected: &[u32]) -> Vec<u32> {
    let mut targets = vec![u32::MAX];
    for &pid in protected {
        targets.extend([pid, pid.wrapping_neg()]);
    }
    targets.sort_unstable();
    targets.dedup();
    targets
}

/// The calls of the `ENOSYS` filter: `pidfd_open` as well when Landlock cannot scope
/// signals, since a pidfd's signals bypass the argument checks of `kill`.
fn unsupported(policy: &Policy) -> BTreeMap<i64, Vec<SeccompRule>> {
    let mut unsupported: BTreeMap<i64, Vec<SeccompRule>> =
        UNSUPPORTED.iter().map(|&nr| (nr, Vec::new())).collect();
    if policy.abi < ABI::V6 {
        unsupported.insert(libc::SYS_pidfd_open, Vec::new());
    }
    unsupported
}

/// A condition on the low 32 bits of argument `index` (every argument filtered is an `int`).
fn condition(index: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, SandboxError> {
    Ok(SeccompCondition::new(
        index,
        SeccompCmpArgLen::Dword,
        op,
        value,
    )?)
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, SandboxError> {
    Ok(SeccompRule::new(conditions)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(abi: ABI) -> Policy {
        Policy {
            abi,
            network: false,
            unix_sockets: false,
            protected: vec![4242, 77],
        }
    }

    #[test]
    fn both_filters_compile_with_and_without_network() {
        for network in [false, true] {
            for abi in [ABI::V2, ABI::V9] {
                let [denied, unsupported] = programs(&Policy {
                    network,
                    ..policy(abi)
                })
                .unwrap();
                assert!(denied.len() > DENIED.len());
                assert!(unsupported.len() > UNSUPPORTED.len());
            }
        }
    }

    #[test]
    fn unix_sockets_are_refused_until_landlock_checks_them_unless_allowed() {
        assert_eq!(policy(ABI::V8).families(), Vec::<libc::c_int>::new());
        assert_eq!(policy(ABI::V9).families(), vec![libc::AF_UNIX]);
        let allowed = Policy {
            unix_sockets: true,
            ..policy(ABI::V2)
        };
        assert_eq!(allowed.families(), vec![libc::AF_UNIX]);
        let network = Policy {
            network: true,
            ..policy(ABI::V4)
        };
        assert_eq!(network.families(), vec![libc::AF_INET, libc::AF_INET6]);
        let socket_rules = |policy: &Policy| denied(policy).unwrap()[&libc::SYS_socket].len();
        assert_eq!(socket_rules(&policy(ABI::V8)), 0, "socket refused outright");
        assert_eq!(
            socket_rules(&policy(ABI::V9)),
            1,
            "socket refused by family"
        );
    }

    #[test]
    fn truncate_by_path_is_refused_before_abi_3() {
        assert!(denied(&policy(ABI::V2)).unwrap()[&libc::SYS_truncate].is_empty());
        assert!(!denied(&policy(ABI::V3))
            .unwrap()
            .contains_key(&libc::SYS_truncate));
    }

    #[test]
    fn signals_to_protected_processes_are_refused_before_abi_6() {
        let old = denied(&policy(ABI::V5)).unwrap();
        for nr in SIGNALLING {
            assert_eq!(old[nr].len(), 5, "-1 and two ids, each also negated");
        }
        assert!(unsupported(&policy(ABI::V5)).contains_key(&libc::SYS_pidfd_open));
        let new = denied(&policy(ABI::V6)).unwrap();
        assert!(SIGNALLING.iter().all(|nr| !new.contains_key(nr)));
        assert!(!unsupported(&policy(ABI::V6)).contains_key(&libc::SYS_pidfd_open));
    }

    #[test]
    fn signal_targets_are_minus_one_and_each_id_and_group() {
        assert_eq!(signal_targets(&[5, 5]), vec![5, u32::MAX - 4, u32::MAX]);
    }
}
