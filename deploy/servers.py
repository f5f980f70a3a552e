"""Start and stop the cluster's servers from Debian's packages: PostgreSQL, Redis, nginx.

Stdlib only (runs before or beside the venv). Every server runs as an unprivileged system
user when started by root (PostgreSQL refuses root), listens on 127.0.0.1 only, keeps its
files in a directory of its own and writes a pid file there; beside it, `<name>.pid.identity` records
which process that is (its start time), so stopping signals exactly it, never a program that got the PID
of a server that has exited.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

SERVICE_USER = "kumitate-svc"
PACKAGES = {"postgres": "postgresql", "redis-server": "redis-server", "nginx": "nginx", "supervisord": "supervisor"}
FALLBACK_ROOT = Path("/var/lib/kumitate-cluster")


class ClusterError(RuntimeError):
    """A server could not be installed or started; the message says which and where its log is."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def is_root() -> bool:
    return os.geteuid() == 0


def pg_bin() -> Path | None:
    """The newest PostgreSQL server binaries Debian installed (/usr/lib/postgresql/<major>/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


def missing_packages() -> list[str]:
    missing = [] if pg_bin() else [PACKAGES["postgres"]]
    missing += [pkg for cmd, pkg in PACKAGES.items() if cmd != "postgres" and not which(cmd)]
    return missing


def which(cmd: str) -> str | None:
    return shutil.which(cmd) or shutil.which(cmd, path="/usr/sbin:/usr/bin:/sbin:/bin")


def install() -> None:
    """apt-get install what is missing and create the service user; does nothing when all is there."""
    missing = missing_packages()
    if missing:
        if not is_root():
            raise ClusterError(f"missing Debian packages {' '.join(missing)}: run `sudo make cluster-install`")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        # Debian starts a package's service on install; policy-rc.d 101 says "not now" (we start our own).
        policy = Path("/usr/sbin/policy-rc.d")
        created = not policy.exists()
        if created:
            policy.write_text("#!/bin/sh\nexit 101\n")
            policy.chmod(0o755)
        try:
            subprocess.run(["apt-get", "update", "-q"], check=True, env=env, stdout=subprocess.DEVNULL)
            subprocess.run(["apt-get", "install", "-y", "-q", *missing], check=True, env=env, stdout=subprocess.DEVNULL)
        finally:
            if created:
                policy.unlink()
    if is_root():
        ensure_service_user()


def ensure_service_user() -> None:
    try:
        pwd.getpwnam(SERVICE_USER)
    except KeyError:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--user-group",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                SERVICE_USER,
            ],
            check=True,
        )


def as_service_user(cmd: list[str]) -> list[str]:
    return ["runuser", "-u", SERVICE_USER, "--", *cmd] if is_root() else cmd


def service_dir(path: Path) -> Path:
    """A directory the service user owns at `path`.

    If the service user cannot reach `path` (a checkout under /root, say), the directory is made
    under /var/lib/kumitate-cluster/ and `path` becomes a symlink to it.
    """
    path = path.absolute()
    if not is_root():
        path.mkdir(parents=True, exist_ok=True)
        return path
    user = pwd.getpwnam(SERVICE_USER)
    if path.is_symlink():
        target = path.resolve()
    elif _reachable(path.parent, user.pw_name):
        target = path
    else:
        target = FALLBACK_ROOT / hashlib.sha1(str(path).encode()).hexdigest()[:12] / path.name
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            path.rmdir()
        path.symlink_to(target, target_is_directory=True)
    target.mkdir(parents=True, exist_ok=True)
    os.chown(target, user.pw_uid, user.pw_gid)
    target.chmod(0o700)
    return path


def _reachable(directory: Path, user: str) -> bool:
    directory.mkdir(parents=True, exist_ok=True)
    return subprocess.run(["runuser", "-u", user, "--", "test", "-x", str(directory)], check=False).returncode == 0


def read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None


def alive(pid: int | None) -> bool:
    """Whether `pid` runs. A zombie does not: a daemon (Redis, nginx, supervisord) that exited stays one
    until init reaps it, which some inits do only every second or so."""
    if pid is None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return True  # no /proc: signal 0 reached it
    return state not in ("Z", "X")


@dataclass(frozen=True, slots=True)
class Identity:
    """What tells a process from a later one given the same PID: its start time (field 22 of
    `/proc/<pid>/stat`, clock ticks after boot) never repeats for a PID. The command line is kept for
    the messages only: Redis and nginx rewrite theirs, so it is not compared."""

    pid: int
    start: int
    cmdline: str = field(compare=False)


def identity(pid: int) -> Identity | None:
    """The identity of the live process `pid` (not a zombie), or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    if len(fields) < 20 or fields[0] in ("Z", "X"):  # fields[0] is field 3 (state), so field 22 is fields[19]
        return None
    return Identity(pid, int(fields[19]), raw.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace"))


def identity_file(pid_file: Path) -> Path:
    """Where the identity of the process a pid file names is kept: beside it, because the daemons write
    their pid files themselves, and some read theirs back (`nginx -s` wants a bare number)."""
    return pid_file.with_name(pid_file.name + ".identity")


def record(pid_file: Path, expected: str) -> bool:
    """Once the daemon has written `pid_file`: keep the identity of the process it names, if that runs
    and its command line contains `expected` (so a PID already given to another program is never
    recorded). Whether it is recorded; safe to call again (a `wait_for` check)."""
    pid = read_pid(pid_file)
    found = identity(pid) if pid is not None else None
    if found is None or expected not in found.cmdline:
        return False
    if recorded(pid_file) == found:
        return True
    target = identity_file(pid_file)
    written = target.with_name(target.name + ".tmp")
    written.write_text(json.dumps({"pid": found.pid, "start": found.start, "cmdline": found.cmdline}) + "\n")
    written.replace(target)
    return True


def recorded(pid_file: Path) -> Identity | None:
    """The identity kept for `pid_file`, or None (none kept: a pid file of an earlier release, or one the
    daemon rewrote since)."""
    try:
        meta = json.loads(identity_file(pid_file).read_text())
        found = Identity(int(meta["pid"]), int(meta["start"]), str(meta.get("cmdline", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return found if found.pid == read_pid(pid_file) else None


def verified(pid_file: Path) -> int | None:
    """The PID `pid_file` names if it is still the process recorded for it, else None."""
    kept = recorded(pid_file)
    return kept.pid if kept is not None and identity(kept.pid) == kept else None


def stop_pid(pid_file: Path, sig: int = signal.SIGTERM, timeout_s: float = 15.0) -> str:
    """Signal the process named in `pid_file` (only it), wait for it to exit (SIGKILL after `timeout_s`),
    remove the file. Only the process recorded for the file is signalled: its start time is checked
    before every signal, through a pidfd where Linux has them (the check and the signal then reach the
    same process, even if it exits in between). What happened, one word:

    - `stopped`: it was the recorded process, signalled, and it exited;
    - `gone`: no process has that PID (the file is removed);
    - `stale`: the PID now belongs to another process (the file is removed, nothing is signalled);
    - `unverified`: a process has that PID but no identity was recorded for the file (a pid file of a
      release before identities, or a daemon that rewrote its file): nothing is signalled, the file is
      kept, and a line on stderr names the PID and its command line for whoever stops it by hand.
    """
    pid = read_pid(pid_file)
    now = identity(pid) if pid is not None else None
    if pid is None or now is None:
        _forget(pid_file)
        return "gone"
    kept = recorded(pid_file)
    if kept is None:
        _say(
            f"not signalling PID {pid} named in {pid_file}: no identity was recorded for it, so it may be "
            f"another program ({now.cmdline}); stop it by hand if it is the server"
        )
        return "unverified"
    with _handle(pid) as handle:
        now = identity(pid)  # read after the pidfd was opened: if it is the recorded one, so is the pidfd's
        if now is None:
            _forget(pid_file)
            return "gone"
        if now != kept:
            _forget(pid_file)
            _say(f"not signalling PID {pid} named in {pid_file}: it is now another process ({now.cmdline})")
            return "stale"
        if handle.signal(sig):
            deadline = time.monotonic() + timeout_s
            while identity(pid) == kept and time.monotonic() < deadline:
                _reap(pid)
                time.sleep(0.05)
            if identity(pid) == kept:
                handle.signal(signal.SIGKILL)
    _forget(pid_file)
    return "stopped"


class _Handle:
    """Signals one process: through its pidfd when there is one (never another process that got its
    PID), else by PID."""

    def __init__(self, pid: int, fd: int | None) -> None:
        self.pid, self.fd = pid, fd

    def signal(self, sig: int) -> bool:
        """Send `sig`; False when the process had already exited."""
        try:
            if self.fd is not None:
                signal.pidfd_send_signal(self.fd, sig)
            else:
                os.kill(self.pid, sig)
        except ProcessLookupError:
            return False
        return True


@contextlib.contextmanager
def _handle(pid: int) -> Iterator[_Handle]:
    fd: int | None = None
    with contextlib.suppress(AttributeError, OSError):  # no pidfd (Linux before 5.3) or already gone
        fd = os.pidfd_open(pid)
    try:
        yield _Handle(pid, fd)
    finally:
        if fd is not None:
            os.close(fd)


def _forget(pid_file: Path) -> None:
    pid_file.unlink(missing_ok=True)
    identity_file(pid_file).unlink(missing_ok=True)


def _say(message: str) -> None:
    print(f"cluster: {message}", file=sys.stderr, flush=True)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def wait_for(
    check: object, what: str, log: Path, timeout_s: float = 60.0, exited: Callable[[], str | None] | None = None
) -> None:
    """Until `check()` is true, else ClusterError with the tail of `log`. `exited` says how the process
    being waited for ended (None while it runs): a daemon that exits at start (Redis on a taken port) is
    reported at once, not after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if check():  # type: ignore[operator]
                return
        except OSError:
            pass
        ended = exited() if exited is not None else None
        if ended is not None:
            raise ClusterError(f"{what} exited while starting ({ended}); log {log}:\n{log_tail(log)}")
        time.sleep(0.1)
    raise ClusterError(f"{what} did not answer within {timeout_s:g}s; log {log}:\n{log_tail(log)}")


def log_tail(log: Path) -> str:
    """The end of a server's log, for a ClusterError (what it said last is why it stopped)."""
    return log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"


def gone(pid_file: Path) -> str | None:
    """For a daemon that forks (nginx, supervisord): once it has written `pid_file`, how it is gone if that
    process no longer runs, else None (no file yet, or it runs). An `exited` check for `wait_for`."""
    pid = read_pid(pid_file)
    return f"PID {pid} from {pid_file.name} is gone" if pid is not None and not alive(pid) else None


def exit_of(process: subprocess.Popen[bytes]) -> str | None:
    """How `process` ended ("status 1", "signal 9"), or None while it runs."""
    code = process.poll()
    if code is None:
        return None
    return f"signal {-code}" if code < 0 else f"status {code}"


def port_answers(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True


# -- PostgreSQL ------------------------------------------------------------------------------------
PG_USER = "kumitate"
PG_DATABASE = "kumitate"


def postgres_url(port: int) -> str:
    return f"postgresql+psycopg://{PG_USER}@127.0.0.1:{port}/{PG_DATABASE}"


def start_postgres(directory: Path, port: int, durable: bool = True) -> str:
    """initdb on first use (trust auth on loopback only), start, create the database; returns its URL.
    `durable=False` (a test session's throw-away server): no fsync, so creating a database per test and
    the shutdown checkpoint write to the page cache only (a killed client still loses no commit; an OS
    crash would, and the data directory is deleted after the session anyway)."""
    binaries = pg_bin()
    if binaries is None:
        raise ClusterError("PostgreSQL is not installed: run `make cluster-install`")
    data = service_dir(directory / "pg")
    log = service_dir(directory / "pg-log") / "postgres.log"
    if not (data / "PG_VERSION").exists():
        subprocess.run(
            as_service_user(
                [
                    str(binaries / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    PG_USER,
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-sync",
                ]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
        )
    sync = "-c fsync=on" if durable else "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    options = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' {sync}"
    result = subprocess.run(
        as_service_user([str(binaries / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "start"]),
        check=False,
        stdout=subprocess.DEVNULL,
    )
    if result.returncode != 0:
        raise ClusterError(f"PostgreSQL did not start; log {log}:\n{log.read_text(errors='replace')[-2000:]}")
    psql = [str(binaries / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", PG_USER, "-d", "postgres", "-tAc"]
    exists = subprocess.run(
        [*psql, f"SELECT 1 FROM pg_database WHERE datname = '{PG_DATABASE}'"], capture_output=True, text=True
    )
    if exists.stdout.strip() != "1":
        subprocess.run([*psql, f"CREATE DATABASE {PG_DATABASE}"], check=True, stdout=subprocess.DEVNULL)
    return postgres_url(port)


def stop_postgres(directory: Path, fast: bool = False) -> None:
    """pg_ctl's fast shutdown (sessions ended, a checkpoint written); `fast`: its immediate one (a
    throwaway cluster: no checkpoint, a restart would replay the WAL)."""
    binaries, data = pg_bin(), directory / "pg"
    if binaries is None or not alive(read_pid(data / "postmaster.pid")):
        return
    mode = "immediate" if fast else "fast"
    subprocess.run(
        as_service_user([str(binaries / "pg_ctl"), "-D", str(data), "-m", mode, "-w", "stop"]),
        check=False,
        stdout=subprocess.DEVNULL,
    )


# -- Redis -------------------------------------------------------------------------------------------
_STARTED: dict[Path, subprocess.Popen[bytes]] = {}
"""The servers this process started without a daemon's fork (Redis), by pid file: kept so that each is
reaped once stopped, and never garbage-collected while it runs."""


def start_redis(directory: Path, port: int) -> str:
    """No persistence: Redis holds rate-limit buckets and caches only, which may be lost at any time.

    Redis runs in the foreground of a session of its own (not `--daemonize yes`, whose parent exits at
    once whatever the server does next), so a server that exits at start, on a taken port say, is seen
    exiting and reported within a moment, not after the whole wait. Nothing holds the caller's stdout:
    Redis logs to its file, and what it says before that file is open goes to redis.stderr."""
    data = service_dir(directory / "redis")
    pid_file = data / "redis.pid"
    with (data / "redis.stderr").open("wb") as stderr:
        process = subprocess.Popen(
            as_service_user(
                [
                    which("redis-server") or "redis-server",
                    "--port",
                    str(port),
                    "--bind",
                    "127.0.0.1",
                    "--dir",
                    str(data),
                    "--daemonize",
                    "no",
                    "--pidfile",
                    str(data / "redis.pid"),
                    "--logfile",
                    str(data / "redis.log"),
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--protected-mode",
                    "yes",
                ]
            ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    _STARTED[pid_file] = process

    def exited() -> str | None:
        ended = exit_of(process)
        if ended is None:
            return None
        said = (data / "redis.stderr").read_text(errors="replace").strip()
        return f"{ended} on port {port}" + (f": {said[-500:]}" if said else "")

    wait_for(
        lambda: record(pid_file, "redis-server") and port_answers(port), "Redis", data / "redis.log", exited=exited
    )
    return f"redis://127.0.0.1:{port}/0"


def stop_redis(directory: Path, fast: bool = False) -> None:
    """SIGTERM; `fast`: SIGKILL (it keeps nothing on disk either way)."""
    pid_file = directory / "redis" / "redis.pid"
    stopped = stop_pid(pid_file, signal.SIGKILL if fast else signal.SIGTERM)
    started = _STARTED.pop(pid_file.absolute(), None)
    if started is not None and stopped != "unverified":  # reap it (or `runuser`, its parent as root)
        with contextlib.suppress(subprocess.TimeoutExpired):
            started.wait(timeout=5)


# -- nginx ---------------------------------------------------------------------------------------------
NGINX_TEMPLATE = Path(__file__).with_name("nginx.conf")


def fill(template: Path, **values: object) -> str:
    """The template's text with each `@name@` replaced by its value (nginx and supervisord keep `$`, `%`, `{}`)."""
    text = template.read_text()
    for name, value in values.items():
        text = text.replace(f"@{name}@", str(value))
    return text


def write_nginx_conf(directory: Path, port: int, upstream_ports: list[int]) -> Path:
    data = service_dir(directory / "nginx")
    servers = "\n".join(f"    server 127.0.0.1:{p} max_fails=1 fail_timeout=2s;" for p in upstream_ports)
    conf = data / "nginx.conf"
    conf.write_text(fill(NGINX_TEMPLATE, dir=data, servers=servers, listen=f"127.0.0.1:{port}"))
    return conf


def reload_nginx(directory: Path, port: int, upstream_ports: list[int]) -> None:
    """Point the load balancer at these instances (SIGHUP: new workers take the new configuration, the
    old ones finish their requests and exit, closing idle client keep-alive connections)."""
    write_nginx_conf(directory, port, upstream_ports)
    pid = verified(directory / "nginx" / "nginx.pid")
    if pid is None:
        raise ClusterError(f"nginx is not running (no process recorded for {directory / 'nginx' / 'nginx.pid'})")
    os.kill(pid, signal.SIGHUP)
    time.sleep(1.0)  # the old workers finish their requests; new ones take the new upstreams


def start_nginx(directory: Path, port: int, upstream_ports: list[int]) -> str:
    conf = write_nginx_conf(directory, port, upstream_ports)
    data = conf.parent
    nginx = which("nginx") or "nginx"
    result = subprocess.run(
        as_service_user([nginx, "-e", str(data / "error.log"), "-p", str(data), "-c", str(conf)]),
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise ClusterError(f"nginx did not start on port {port}: {result.stderr.strip()}")
    pid_file = data / "nginx.pid"
    wait_for(
        lambda: record(pid_file, "nginx") and port_answers(port),
        "nginx",
        data / "error.log",
        exited=lambda: gone(pid_file),
    )
    return f"http://127.0.0.1:{port}"


def stop_nginx(directory: Path, fast: bool = False) -> None:
    """SIGQUIT: graceful (requests in flight finish); `fast`: SIGTERM, nginx's fast shutdown."""
    stop_pid(directory / "nginx" / "nginx.pid", signal.SIGTERM if fast else signal.SIGQUIT)
