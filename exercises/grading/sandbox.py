r"""The box the graded code runs in: a throwaway folder, a scrubbed environment, limits, a guard.

Built from what Python and the operating system give every process, with nothing to install:

* **a throwaway working folder** per job (``tempfile.TemporaryDirectory``), holding a copy of the
  file, removed afterwards; it is the process's working directory, ``HOME`` and ``TMPDIR``;
* **a scrubbed environment**: a fixed ``PATH``, locale and thread settings, nothing of the
  grader's own environment (no tokens, no credentials);
* **resource limits** set by the graded process on itself before it loads the code, with
  ``resource.setrlimit`` where the platform has it: CPU seconds, address space, size of any file
  written, number of processes, open files, no core dumps; and a **wall-clock alarm**
  (``signal.setitimer``, SIGALRM left at its default: the kernel ends the process, even inside C);
* **a guard** (a PEP 578 audit hook, which the graded code cannot remove) that refuses, records
  and reports: writing, deleting, renaming or linking anything outside the throwaway folder;
  reading or importing the reference (``solutions/``, the grader's checks) or other submissions;
  starting processes (fork, exec, subprocess); sending signals; the network; ``ctypes``;
  changing the limits.

What it does **not** stop: it is not a security boundary against a determined attacker. An audit
hook lives inside the process it guards, so code that corrupts the interpreter's memory, or
reaches a system call by a path the hook does not see, gets past it; reading files outside the
folders named above is allowed (imports need it); a process of the same user can signal the
grader; nothing stops the network below Python's socket module. Run the graded processes under
a real sandbox for that (``--wrap``; see README.md, "Grading a class").
"""
import os
import signal
import sys
from dataclasses import dataclass


# ---------------------------------------------------------------------------
# The grader's side: what the process may use, its environment
# ---------------------------------------------------------------------------


@dataclass
class Limits:
    r"""What one graded process may use."""
    memory_mb: int = 1024  # address space: numpy and the engine need about 150 MB
    file_mb: int = 16  # the largest file it may write (in its own folder)
    processes: int = 64  # per user; enforced by the kernel for users other than root
    open_files: int = 256
    cpu_s: int = 0  # 0: worked out from the time limit of the job


def environment(folder):
    r"""The graded process's whole environment: nothing of the grader's own is passed on."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(folder), "TMPDIR": str(folder), "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8", "MPLBACKEND": "Agg", "MPLCONFIGDIR": str(folder), "MT_BACKEND": "numpy",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "PYTHONHASHSEED": "0"}


# ---------------------------------------------------------------------------
# The graded process's side: limits and the guard, installed before the reader's code loads
# ---------------------------------------------------------------------------

def set_alarm(seconds):
    r"""End this process ``seconds`` from now (0: never); the grader's own time limit backs it up."""
    if hasattr(signal, "setitimer"):  # not on Windows
        signal.setitimer(signal.ITIMER_REAL, seconds)


def apply_limits(limits):
    r"""Set hard limits on this process (soft = hard, so the graded code cannot raise them), and the alarm."""
    set_alarm(limits.get("wall_s", 0))
    try:
        import resource
    except ImportError:  # not on this platform (Windows): the time limit still holds
        return
    mb = 1 << 20
    wanted = [("RLIMIT_CPU", limits["cpu_s"]), ("RLIMIT_AS", limits["memory_mb"] * mb),
              ("RLIMIT_FSIZE", limits["file_mb"] * mb), ("RLIMIT_NPROC", limits["processes"]),
              ("RLIMIT_NOFILE", limits["open_files"]), ("RLIMIT_CORE", 0)]
    for name, value in wanted:
        which = getattr(resource, name, None)
        if which is None or not value and name != "RLIMIT_CORE":
            continue
        _, hard = resource.getrlimit(which)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):  # a limit below what is already in use, or not allowed here
            pass


_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PROCESS = {"os.fork": "start a process (os.fork)", "os.forkpty": "start a process (os.forkpty)",
            "os.system": "run a shell command (os.system)", "os.exec": "replace the process (os.exec*)",
            "os.spawn": "start a process (os.spawn*)", "os.posix_spawn": "start a process (os.posix_spawn)",
            "subprocess.Popen": "start a process (subprocess)", "os.kill": "send a signal (os.kill)",
            "os.killpg": "send a signal (os.killpg)", "signal.pthread_kill": "send a signal",
            "resource.setrlimit": "change its resource limits", "resource.prlimit": "change its resource limits"}
_PATH_EVENTS = {"os.remove": "delete", "os.rmdir": "delete a folder", "shutil.rmtree": "delete a tree",
                "os.mkdir": "create a folder", "os.truncate": "truncate", "os.chmod": "change the mode of",
                "os.chown": "change the owner of", "os.utime": "change the times of", "os.chflags": "change"}


class Guard:
    r"""The audit hook: refuses what graded code must not do, and remembers every attempt."""

    def __init__(self, folder, reference_dirs, reference_packages, private_dirs):
        self.folder = os.path.realpath(folder)
        self.reference_dirs = [os.path.realpath(d) for d in reference_dirs]
        self.reference_packages = list(reference_packages)
        self.private_dirs = [os.path.realpath(d) for d in private_dirs]
        self.violations = []  # sentences
        self.reference_import = ""  # what was tried, once
        self._busy = False

    # -- helpers ---------------------------------------------------------------
    @staticmethod
    def _inside(path, folder):
        return path == folder or path.startswith(folder + os.sep)

    def _path(self, p):
        try:
            return None if isinstance(p, int) or p is None else os.path.realpath(os.fsdecode(p))
        except (TypeError, ValueError):
            return None

    def _refuse(self, sentence, reference=False):
        if reference:
            self.reference_import = self.reference_import or sentence
        elif sentence not in self.violations:
            self.violations.append(sentence)
        raise PermissionError(f"the grader blocked this: {sentence}")

    def _check_write(self, verb, p):
        path = self._path(p)
        if path is not None and not self._inside(path, self.folder) and path != os.devnull:
            self._refuse(f"{verb} {path} (outside its own folder)")

    def _check_read(self, p):
        path = self._path(p) or ""
        if any(self._inside(path, d) for d in self.reference_dirs):
            self._refuse(f"read {path}", reference=True)
        if any(self._inside(path, d) for d in self.private_dirs):
            self._refuse(f"read {path} (another submission or the grader's files)")

    # -- the hook --------------------------------------------------------------
    def __call__(self, event, args):
        if self._busy:  # events raised while the guard itself works
            return
        self._busy = True
        try:
            self._event(event, args)
        finally:
            self._busy = False

    def _event(self, event, args):
        if event == "open":
            path, mode, flags = args
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or bool((flags or 0) & _WRITE_FLAGS)
            if writing:
                self._check_write("write", path)
            else:
                self._check_read(path)
        elif event in _PATH_EVENTS:
            self._check_write(_PATH_EVENTS[event], args[0])
        elif event in ("os.rename", "os.link", "os.symlink"):
            self._check_write("rename or link", args[1])
            if event != "os.symlink":
                self._check_write("rename or link", args[0])
        elif event in ("os.listdir", "os.scandir"):
            self._check_read(args[0] if args else None)
        elif event == "import":
            name = args[0] or ""
            if any(name == p or name.startswith(p + ".") for p in self.reference_packages):
                self._refuse(f"import {name}", reference=True)
            if name in ("_posixsubprocess", "_ctypes"):
                self._refuse(f"import {name}")
        elif event in _PROCESS:
            self._refuse(_PROCESS[event])
        elif event.startswith("socket."):
            self._refuse("use the network")
        elif event.startswith("ctypes."):
            self._refuse("call C code through ctypes")


def install_guard(folder, reference_dirs=(), reference_packages=(), private_dirs=()):
    r"""Install the guard for the rest of this process's life; returns it (to read what it refused)."""
    guard = Guard(folder, reference_dirs, reference_packages, private_dirs)
    # subprocess keeps its own handle on the C fork-and-exec; take both away from the graded code
    sys.modules.pop("_posixsubprocess", None)
    if "subprocess" in sys.modules:
        def refused(*args, **kwargs):
            raise PermissionError("the grader blocked this: start a process (subprocess)")
        sys.modules["subprocess"]._fork_exec = refused
    sys.addaudithook(guard)
    return guard
