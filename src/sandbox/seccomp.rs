//! The seccomp filters: a deny list of system calls a command has no business making (they
//! reach the kernel's global state or other processes) and, unless TCP ports are allowed,
//! every socket family but `AF_UNIX`.

use std::collections::BTreeMap;

use seccompiler::{
    apply_filter, BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};

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

/// Installs the filters on this process; they hold across `exec` and for every descendant.
/// With `network` false, `socket` is refused for every family but `AF_UNIX`; with it true,
/// `AF_INET` and `AF_INET6` are allowed as well (Landlock then limits TCP ports).
pub(crate) fn apply(network: bool) -> Result<(), SandboxError> {
    for program in programs(network)? {
        apply_filter(&program)?;
    }
    Ok(())
}

/// The two compiled filters: one answering `EPERM`, one `ENOSYS`.
fn programs(network: bool) -> Result<[BpfProgram; 2], SandboxError> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
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
    let mut families = vec![libc::AF_UNIX];
    if network {
        families.extend([libc::AF_INET, libc::AF_INET6]);
    }
    let other_family = families
        .into_iter()
        .map(|family| condition(0, SeccompCmpOp::Ne, u64::from(family.unsigned_abs())))
        .collect::<Result<_, _>>()?;
    denied.insert(libc::SYS_socket, vec![rule(other_family)?]);
    let unsupported = UNSUPPORTED.iter().map(|&nr| (nr, Vec::new())).collect();
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
        compile(denied, libc::EPERM)?,
        compile(unsupported, libc::ENOSYS)?,
    ])
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

    #[test]
    fn both_filters_compile_with_and_without_network() {
        for network in [false, true] {
            let [denied, unsupported] = programs(network).unwrap();
            assert!(denied.len() > DENIED.len());
            assert!(unsupported.len() > UNSUPPORTED.len());
        }
    }
}
