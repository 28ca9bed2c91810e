"""Two compute nodes' hypervisors on one machine, and guests to move.

Each ``LibvirtNode`` is a private libvirtd of its own: started in a mount
namespace of its own (``unshare -m``) where its own directories are bound
over libvirt's fixed ones (/etc/libvirt, /run/libvirt, /var/lib/libvirt,
/var/cache/libvirt, /var/log/libvirt), with its own ``host_uuid`` (libvirt
refuses a migration between daemons of one host UUID), its own socket
directory (reachable from outside the namespace) and its own migration
port range. The namespace also gets a copy of /etc/passwd and /etc/group
naming libvirt-qemu, the user Debian's libvirtd resolves before reading
its qemu.conf; this machine's files stay untouched. Stopping a node
destroys its guests, then kills its daemon and what is left of their
QEMU processes, by PID.

Guests boot the kernel of the OS's ``linux-image-amd64`` with an
initramfs built here from ``busybox-static``'s busybox and a static C
program
(gcc) that dirties memory in a loop: ``dirty=MiB`` on the kernel command
line, so that convergence matters. No disk, no network, no download.
Both files come from ``GUEST_FILES``, where ``.ci/run`` unpacks them from
their packages without installing them (the host's /boot and busybox stay
as they are); a kernel in /boot and a static /bin/busybox also do.

Accelerator: KVM where /dev/kvm runs ordinary guests; TCG where the
machine's /dev/kvm is PVM (the ``kvm_pvm`` module, a nested hypervisor
that boots only guest kernels built for it: Debian's stops in its
decompressor). Live migration is the same QEMU and libvirt code either
way.
"""

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

from tests.functional import private_servers
from tools.service_harness import free_port

TOOLS = ("libvirtd", "qemu-system-x86_64", "unshare", "gcc", "cpio")
#: The guests' kernel (vmlinuz-*) and static busybox, as .ci/run leaves
#: them.
GUEST_FILES = Path.home() / ".cache" / "metrics-scheduler" / "guest"
_DIRS = ("etc", "run", "lib", "cache", "log", "sock")
_BOUND = {"etc": "/etc/libvirt", "run": "/run/libvirt",
          "lib": "/var/lib/libvirt", "cache": "/var/cache/libvirt",
          "log": "/var/log/libvirt"}
# Debian's libvirtd resolves its default QEMU user and group by name.
_QEMU_USER = "libvirt-qemu:x:64055:64055::/var/lib/libvirt:/bin/false\n"
_QEMU_GROUP = "libvirt-qemu:x:64055:\n"

DIRTY_C = r"""
#include <stdlib.h>
int main(int argc, char **argv) {
    size_t size = (size_t)atoi(argv[1]) << 20;
    volatile unsigned char *memory = malloc(size);
    for (unsigned char round = 0;; round++)
        for (size_t at = 0; at < size; at += 4096) memory[at] = round;
}
"""

INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t devtmpfs dev /dev
for word in $(cat /proc/cmdline); do
    case $word in dirty=*) /bin/dirty ${word#dirty=} & ;; esac
done
echo GUEST-UP
exec sh -c 'while true; do sleep 3600; done'
"""


def missing_tools() -> list[str]:
    """What the guests and nodes need that is not installed."""
    absent = [tool for tool in TOOLS if shutil.which(tool) is None]
    if busybox() is None:
        absent.append(f"busybox-static's busybox in {GUEST_FILES}")
    if not kernel():
        absent.append(f"linux-image-amd64's vmlinuz in {GUEST_FILES}")
    return absent


def busybox() -> str | None:
    """The static busybox of GUEST_FILES, else /bin/busybox if static."""
    for path in (str(GUEST_FILES / "busybox"), "/bin/busybox"):
        if os.path.exists(path) and not _dynamic(path):
            return path
    return None


def _dynamic(path: str) -> bool:
    result = subprocess.run(["ldd", path], capture_output=True, text=True,
                            check=False)
    return result.returncode == 0 and "=>" in result.stdout


def kernel() -> str | None:
    """The newest kernel of GUEST_FILES, else of /boot."""
    for directory in (str(GUEST_FILES), "/boot"):
        kernels = sorted(glob.glob(f"{directory}/vmlinuz-*"))
        if kernels:
            return kernels[-1]
    return None


def domain_type() -> str:
    """kvm, or qemu (TCG) where /dev/kvm cannot boot a stock kernel."""
    if os.path.exists("/dev/kvm") and not os.path.exists(
            "/sys/module/kvm_pvm"):
        return "kvm"
    return "qemu"


def build_initramfs(root: Path) -> Path:
    """busybox, the memory dirtier and /init, as a gzipped newc cpio."""
    tree = root / "initramfs"
    (tree / "bin").mkdir(parents=True)
    for name in ("proc", "dev"):
        (tree / name).mkdir()
    shutil.copy(busybox(), tree / "bin" / "busybox")
    source = root / "dirty.c"
    source.write_text(DIRTY_C)
    subprocess.run(["gcc", "-static", "-O2", "-o", str(tree / "bin" / "dirty"),
                    str(source)], check=True)
    init = tree / "init"
    init.write_text(INIT)
    init.chmod(0o755)
    image = root / "initrd.gz"
    files = subprocess.run(["find", "."], cwd=tree, capture_output=True,
                           check=True).stdout
    archive = subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"],
                             cwd=tree, input=files, capture_output=True,
                             check=True).stdout
    subprocess.run(["gzip", "-1"], input=archive, check=True,
                   stdout=image.open("wb"))
    return image


def guest_xml(name: str, instance_uuid: str, initrd: Path, console: Path,
              dirty_mib: int = 0, memory_mib: int = 128) -> str:
    cmdline = "console=ttyS0 quiet" + (f" dirty={dirty_mib}"
                                       if dirty_mib else "")
    return f"""<domain type='{domain_type()}'>
  <name>{name}</name><uuid>{instance_uuid}</uuid>
  <memory unit='MiB'>{memory_mib}</memory><vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type>
    <kernel>{kernel()}</kernel><initrd>{initrd}</initrd>
    <cmdline>{cmdline}</cmdline></os>
  <on_poweroff>destroy</on_poweroff><on_crash>destroy</on_crash>
  <devices><serial type='file'><source path='{console}'/></serial>
    <memballoon model='none'/></devices>
</domain>"""


class LibvirtNode:
    """A private libvirtd standing for the compute node ``name``."""

    def __init__(self, root: Path, name: str):
        self.name = name
        self.root = root / name
        self.host_uuid = str(uuid.uuid4())
        self.process: subprocess.Popen | None = None
        self._terminated = False

    @property
    def uri(self) -> str:
        return f"qemu+unix:///system?socket={self.root}/sock/libvirt-sock"

    def _write_config(self) -> None:
        for name in _DIRS:
            (self.root / name).mkdir(parents=True, exist_ok=True)
        (self.root / "etc" / "libvirtd.conf").write_text(
            f'unix_sock_dir = "{self.root}/sock"\n'
            f'host_uuid = "{self.host_uuid}"\n'
            'auth_unix_rw = "none"\nauth_unix_ro = "none"\n')
        port = free_port()
        (self.root / "etc" / "qemu.conf").write_text(
            # No cgroups, namespaces, security labels or virtlogd: a
            # container has none of them to give.
            'cgroup_controllers = [ ]\nnamespaces = [ ]\n'
            'security_driver = "none"\nstdio_handler = "file"\n'
            'user = "root"\ngroup = "root"\ndynamic_ownership = 0\n'
            'remember_owner = 0\n'
            f'migration_port_min = {port}\n'
            f'migration_port_max = {port + 20}\n')
        (self.root / "passwd").write_text(
            Path("/etc/passwd").read_text() + _QEMU_USER)
        (self.root / "group").write_text(
            Path("/etc/group").read_text() + _QEMU_GROUP)

    def start(self) -> "LibvirtNode":
        self._write_config()
        binds = [f"mount --bind {self.root}/passwd /etc/passwd",
                 f"mount --bind {self.root}/group /etc/group"]
        for name, target in _BOUND.items():
            # The mount points, empty, where the packages did not make them.
            os.makedirs(target, exist_ok=True)
            binds.append(f"mount --bind {self.root}/{name} {target}")
        script = " && ".join(
            [*binds, f"exec libvirtd -f {self.root}/etc/libvirtd.conf "
             f"-p {self.root}/libvirtd.pid"])
        log = self.root / "libvirtd.log"
        with log.open("wb") as output:
            self.process = subprocess.Popen(
                ["unshare", "-m", "sh", "-c", script], stdout=output,
                stderr=output, stdin=subprocess.DEVNULL,
                start_new_session=True)
        private_servers._wait(f"libvirtd of {self.name}", self._answers, log,
                              self.process)
        return self

    def _answers(self) -> bool:
        import libvirt

        try:
            libvirt.open(self.uri).close()
        except libvirt.libvirtError:
            return False
        return True

    def connect(self):
        import libvirt

        return libvirt.open(self.uri)

    def running(self) -> set[str]:
        """UUIDs of the domains running here."""
        connection = self.connect()
        try:
            return {domain.UUIDString() for domain in
                    connection.listAllDomains(1)}
        finally:
            connection.close()

    def destroy_guests(self) -> None:
        import libvirt

        with contextlib.suppress(libvirt.libvirtError):
            connection = self.connect()
            for domain in connection.listAllDomains():
                with contextlib.suppress(libvirt.libvirtError):
                    domain.destroy()
            connection.close()

    def terminate(self) -> None:
        """Destroy the guests, kill leftovers by PID, SIGTERM the daemon
        (``close`` waits for it: several nodes stop at once)."""
        if self.process is None:
            return
        self.destroy_guests()
        for pid_file in glob.glob(f"{self.root}/run/qemu/*.pid"):
            with contextlib.suppress(OSError, ValueError):
                private_servers._kill_ours(
                    int(Path(pid_file).read_text()), str(self.root.parent))
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGTERM)
        self._terminated = True

    def close(self) -> None:
        """``terminate``, then wait; SIGKILL after 10 s."""
        if self.process is None:
            return
        if not self._terminated:
            self.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def wait_for(what: str, condition, timeout: float = 60,
             interval: float = 0.2) -> None:
    """Poll ``condition`` until true; raise with ``what`` after
    ``timeout`` (a hang guard, not a timed assertion)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout} s")
        time.sleep(interval)
