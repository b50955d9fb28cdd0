"""systemd lab hosts: a real systemd booted by systemd-nspawn on an overlay of this machine's `/`.

A SysV lab host is an sshd in a network + mount namespace. A systemd host is a whole userspace:
systemd-nspawn boots /usr/lib/systemd/systemd as PID 1 of new PID, mount, UTS and IPC namespaces
on an overlay mount (lower `/` read-only, upper and work dir on the lab's tmpfs work dir, so
nothing of this machine's disk is ever written), inside the host's lab network namespace. Its own
ssh.service answers on the lab address; its disks (the mounted filesystem under /srv and every
/dev/loopN) and /dev/kmsg are bound in. Found by trying (docs/lab.md, "systemd hosts"):
  - `--register=no --keep-unit`: there is no systemd/machined outside to register with.
  - `systemd.firstboot=off` on the kernel command line: no first-boot prompt on the console.
  - SYSTEMD_NSPAWN_API_VFS_WRITABLE=1: /proc/sys writable inside, so `drop_caches` works.
  - nvmf-autoconnect.service fails without NVMe-oF (the host would be `degraded`): masked.
  - nspawn drops CAP_SYSLOG: given back (as on a real host), so root reads dmesg and journald /dev/kmsg.
  - the memory cgroup hierarchy is mounted read-only inside (and --bind cannot reach /sys/fs/cgroup:
    nspawn mounts it later); the benchmark's cache fence needs it writable, as it is on a real host,
    so a oneshot unit of the lab remounts it read-write before sshd starts.
  - a loop device detaches only after the container's mount namespace is gone: stop first.
Everything here writes only below the host's overlay root or returns argv lists.
"""
from __future__ import annotations

import os
import secrets

from .spec import HostSpec

NSPAWN = "/usr/bin/systemd-nspawn"
SYSTEMD = "/usr/lib/systemd/systemd"
OVERLAY_DIRS = ("upper", "work", "root")
# nspawn keeps its lock and propagation dirs here; down removes what the lab created of them.
NSPAWN_RUNTIME_DIRS = ("/run/systemd", "/run/systemd/nspawn", "/run/systemd/nspawn/locks",
                       "/run/systemd/nspawn/propagate")
# Units of this machine's image that have no business on a lab disk host (or fail in a container).
MASKED_UNITS = ("nvmf-autoconnect.service", "postgresql.service", "postgresql@.service")
CGROUP_MEMORY = "/sys/fs/cgroup/memory"
MEMCG_UNIT_NAME = "diskproof-lab-memcg.service"
MEMCG_UNIT = f"""# diskproof lab (tools/lab): the cache fence needs a writable memory cgroup, as on a real host.
[Unit]
Description=diskproof lab: memory cgroup read-write
DefaultDependencies=no
Before=sysinit.target ssh.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/mount -o remount,bind,rw {CGROUP_MEMORY}

[Install]
WantedBy=sysinit.target
"""
SSHD_CONFIG_NAME = "sshd_config"
HOST_KEY_NAME = "diskproof_lab_host_ed25519_key"
AUTHORIZED_KEYS_NAME = "diskproof_lab_authorized_keys"


def overlay_dirs(host_dir: str) -> dict[str, str]:
    """upper, work and root (the merged mount point) of a host, all inside its work-dir dir."""
    return {name: os.path.join(host_dir, f"overlay-{name}") for name in OVERLAY_DIRS}


def overlay_mount_argv(host: HostSpec, dirs: dict[str, str]) -> list[str]:
    return ["mount", "-t", "overlay", f"diskproof-{host.name}", "-o",
            f"lowerdir=/,upperdir={dirs['upper']},workdir={dirs['work']}", dirs["root"]]


def _write(root: str, relative: str, text: str, mode: int = 0o644) -> None:
    path = os.path.join(root, relative.lstrip("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if os.path.lexists(path):
        os.unlink(path)  # a copy-up of the lower file, or a symlink: replaced, never written through
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def prepare_root(root: str, host: HostSpec, sshd_config: str, host_key: str, authorized_keys: str) -> None:
    """Make the merged overlay this host's: name, machine id, sshd on the lab address with the lab key,
    and the masks. Every write lands in the overlay's upper dir."""
    _write(root, "/etc/hostname", host.name + "\n")
    # Its own machine id: the journal refuses to link journals of equal ids, and units key on it.
    _write(root, "/etc/machine-id", secrets.token_hex(16) + "\n", 0o444)
    with open(host_key, encoding="ascii") as handle:
        _write(root, f"/etc/ssh/{HOST_KEY_NAME}", handle.read(), 0o600)
    with open(authorized_keys, encoding="ascii") as handle:
        _write(root, f"/etc/ssh/{AUTHORIZED_KEYS_NAME}", handle.read(), 0o644)
    _write(root, f"/etc/ssh/{SSHD_CONFIG_NAME}", sshd_config, 0o644)
    _write(root, f"/etc/systemd/system/{MEMCG_UNIT_NAME}", MEMCG_UNIT)
    wants = os.path.join(root, "etc/systemd/system/sysinit.target.wants")
    os.makedirs(wants, exist_ok=True)
    os.symlink(f"/etc/systemd/system/{MEMCG_UNIT_NAME}", os.path.join(wants, MEMCG_UNIT_NAME))
    for unit in MASKED_UNITS:
        link = os.path.join(root, "etc/systemd/system", unit)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink("/dev/null", link)


def nspawn_argv(host: HostSpec, root: str, host_dir: str, devices: list[str], serial_workdir: str | None = None) -> list[str]:
    """The systemd-nspawn command line of a host (run with nspawn_env()). /srv (the disks' mount
    points), /root and /var/tmp are the host's own dirs, as on a SysV lab host; /tmp is nspawn's tmpfs.
    With serial_workdir (the lab's work dir; buffered_writes: one_at_a_time), the lab's dd in front of the
    real one, as on a SysV lab host (fleet.HOST_SCRIPT)."""
    argv = [NSPAWN, "--quiet", f"--directory={root}", f"--machine={host.name}", "--register=no", "--keep-unit",
            "--boot", f"--network-namespace-path=/run/netns/{host.netns}", "--console=pipe",
            f"--bind={os.path.join(host_dir, 'srv')}:/srv", f"--bind={os.path.join(host_dir, 'root')}:/root",
            f"--bind={os.path.join(host_dir, 'var-tmp')}:/var/tmp", "--bind=/dev/kmsg",
            # nspawn drops CAP_SYSLOG by default: root could not read dmesg and journald could not read
            # /dev/kmsg (no kernel messages in the journal). A real host's root has it.
            "--capability=CAP_SYSLOG"]
    argv.extend(f"--bind=/dev/{device}" for device in devices)
    if serial_workdir is not None:
        argv.extend(["--bind-ro=/usr/bin/dd:/run/diskproof-lab/dd", f"--bind={serial_workdir}/serial:/run/diskproof-lab/serial",
                     f"--bind-ro={serial_workdir}/bin/dd:/usr/bin/dd"])
    argv.extend(["--", "systemd.firstboot=off"])
    return argv


def nspawn_env(base: dict[str, str]) -> dict[str, str]:
    return dict(base, SYSTEMD_NSPAWN_API_VFS_WRITABLE="1")


def missing_tools() -> list[str]:
    return [path for path in (NSPAWN, SYSTEMD) if not os.path.exists(path)]
