"""A real local cluster: PostgreSQL, Redis, N kumitate instances under supervisord, and nginx, on loopback.

    python -m deploy.cluster install              # apt-get what is missing (idempotent), service user
    python -m deploy.cluster start [--port 8080]  # prints the load balancer's base URL, alone, last
    python -m deploy.cluster restart              # rolling restart: one instance at a time, nothing lost
    python -m deploy.cluster stop                 # stops exactly what `start` started
    python -m deploy.cluster status               # finds the cluster from its state file

The instances run under supervisord (Debian's `supervisor`; its config is deploy/supervisord.conf and
deploy/supervisor-instance.conf), which starts a crashed instance again at once. nginx's configuration
is deploy/nginx.conf. State lives under --dir (default var/cluster/): cluster.json (ports and URLs),
one directory per server with its pid file and log. The instances run as the invoking user;
PostgreSQL, Redis and nginx as the unprivileged service user when started by root.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import urllib.request
from dataclasses import asdict, dataclass, field
from email.message import Message
from pathlib import Path

from deploy import servers

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DIR = REPO / "var" / "cluster"
HERE = Path(__file__).resolve().parent


@dataclass
class Ports:
    lb: int
    postgres: int = 0
    redis: int = 0
    instances: list[int] = field(default_factory=list)


class Cluster:
    def __init__(
        self,
        directory: Path = DEFAULT_DIR,
        lb_port: int = 8080,
        instances: int = 2,
        python: str = sys.executable,
        env: dict[str, str] | None = None,
    ) -> None:
        self.dir = directory.absolute()
        self.count = instances
        self.python = python
        self.extra_env = env or {}
        self.ports = Ports(lb=lb_port)
        self.database_url = ""
        self.redis_url = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.ports.lb}"

    @property
    def state_file(self) -> Path:
        return self.dir / "cluster.json"

    @property
    def supervisor_conf(self) -> Path:
        return self.dir / "supervisord.conf"

    def instance_dir(self, index: int) -> Path:
        return self.dir / f"instance-{index}"

    # -- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> str:
        """Start every part and wait until each answers; returns the LB URL. A cluster already running
        on this port is left as it is. If any part fails, what this call started is stopped again."""
        servers.install()
        self.dir.mkdir(parents=True, exist_ok=True)
        wanted = self.ports.lb
        if self.load() and self.ports.lb == wanted and self.running():
            return self.url
        self.stop()
        self.ports = Ports(lb=wanted)
        if not _port_free(wanted):
            raise servers.ClusterError(f"port {wanted} is taken: choose another with CLUSTER_PORT or --port")
        try:
            self._start_all()
        except BaseException:
            self._say("start failed: stopping what was started")
            self.stop()
            raise
        return self.url

    def _start_all(self) -> None:
        self.ports = Ports(
            lb=self.ports.lb,
            postgres=servers.free_port(),
            redis=servers.free_port(),
            instances=[servers.free_port() for _ in range(self.count)],
        )
        self._save()  # first: a `stop` after a failure finds what was started from here on
        self._say(f"PostgreSQL on {self.ports.postgres}")
        self.database_url = servers.start_postgres(self.dir, self.ports.postgres)
        self._say(f"Redis on {self.ports.redis}")
        self.redis_url = servers.start_redis(self.dir, self.ports.redis)
        self._save()
        self._kumitate("db", "upgrade")
        self._say(f"supervisord: kumitate instances on {self.ports.instances}")
        self._start_supervisor()
        for index in range(self.count):
            self.wait_instance(index)
        self._say(f"nginx on {self.ports.lb} -> {self.ports.instances}")
        servers.start_nginx(self.dir, self.ports.lb, self.ports.instances)
        servers.wait_for(lambda: _healthy(self.url), "the load balancer", self.dir / "nginx" / "error.log")

    def stop(self, fast: bool = False) -> None:
        """Stop what the pid files name, load balancer first, database last. `fast`: for a throwaway
        cluster (the tests'): the instances and Redis are killed and PostgreSQL stops without a shutdown
        checkpoint, instead of draining calls that nobody waits for."""
        servers.stop_nginx(self.dir, fast=fast)
        self._stop_supervisor(fast=fast)
        servers.stop_redis(self.dir, fast=fast)
        servers.stop_postgres(self.dir, fast=fast)

    def running(self) -> bool:
        pids = [self.dir / "nginx" / "nginx.pid", self.dir / "redis" / "redis.pid", self.dir / "pg" / "postmaster.pid"]
        pids.append(self.dir / "supervisord.pid")
        return all(servers.alive(servers.read_pid(p)) for p in pids) and _healthy(self.url)

    # -- instances ------------------------------------------------------------------------------------
    def _start_supervisor(self) -> None:
        programs = [
            servers.fill(
                HERE / "supervisor-instance.conf",
                index=index,
                python=self.python,
                port=port,
                repo=REPO,
                data=self.instance_dir(index) / "data",
                log=self.instance_dir(index) / "kumitate.log",
            )
            for index, port in enumerate(self.ports.instances)
        ]
        for index in range(self.count):
            self.instance_dir(index).mkdir(parents=True, exist_ok=True)
        conf = servers.fill(HERE / "supervisord.conf", dir=self.dir, programs="\n".join(programs))
        self.supervisor_conf.write_text(conf)
        supervisord = servers.which("supervisord") or "supervisord"
        log, pid_file = self.dir / "supervisord.log", self.dir / "supervisord.pid"
        started = subprocess.run([supervisord, "-c", str(self.supervisor_conf)], cwd=REPO, env=self._env(), check=False)
        if started.returncode != 0:
            raise servers.ClusterError(
                f"supervisord exited while starting (status {started.returncode}); log {log}:\n{servers.log_tail(log)}"
            )
        servers.wait_for(
            lambda: servers.record(pid_file, "supervisord") and self._ctl("pid").returncode == 0,
            "supervisord",
            log,
            timeout_s=30,
            exited=lambda: servers.gone(pid_file),
        )

    def _stop_supervisor(self, fast: bool = False) -> None:
        """SIGTERM to supervisord: it stops every instance (SIGTERM: each drains), then exits. `fast`:
        supervisord first (so it starts nothing again), then each instance's process group, killed."""
        if fast:
            groups = [pid for index in range(self.count) if (pid := self.instance_pid(index))]
            servers.stop_pid(self.dir / "supervisord.pid", signal.SIGKILL)
            for group in groups:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(group, signal.SIGKILL)
        servers.stop_pid(self.dir / "supervisord.pid", timeout_s=180)
        for pid_file in self.dir.glob("instance-*/kumitate.pid"):  # instances of a release before supervisord
            servers.stop_pid(pid_file)

    def _ctl(self, *args: str) -> subprocess.CompletedProcess[str]:
        supervisorctl = servers.which("supervisorctl") or "supervisorctl"
        command = [supervisorctl, "-c", str(self.supervisor_conf), *args]
        return subprocess.run(command, capture_output=True, text=True, check=False, timeout=200)

    def instance_pid(self, index: int) -> int | None:
        """The running process of instance `index` (as supervisord knows it), or None."""
        found = self._ctl("pid", f"instance-{index}").stdout.strip()
        return int(found) if found.isdigit() and found != "0" else None

    def wait_instance(self, index: int, timeout_s: float = 180, routed: bool = True) -> None:
        """Until instance `index` answers, and (`routed`), when the balancer runs, until it routes to it
        again: nginx keeps an upstream that failed out of rotation for its fail_timeout, even once the
        instance answers."""
        port = self.ports.instances[index]
        servers.wait_for(
            lambda: _healthy(f"http://127.0.0.1:{port}"),
            f"kumitate instance {index}",
            self.instance_dir(index) / "kumitate.log",
            timeout_s=timeout_s,
        )
        if routed and servers.alive(servers.read_pid(self.dir / "nginx" / "nginx.pid")):
            servers.wait_for(
                lambda: f":{port}" in _upstream(self.url),
                f"nginx routing to instance {index}",
                self.dir / "nginx" / "error.log",
            )

    def stop_instance(self, index: int) -> None:
        """Drain and stop instance `index` (supervisorctl stop: SIGTERM, then wait for it to exit)."""
        self._ctl("stop", f"instance-{index}")

    def start_instance(self, index: int) -> None:
        self._ctl("start", f"instance-{index}")

    def restart_instances(self) -> None:
        """Every instance down, then every instance up (what a restart of all of them looks like).
        `supervisorctl stop all` signals them all, then waits: they drain together, not one by one."""
        self._ctl("stop", "all")
        self._ctl("start", "all")
        for index in range(self.count):
            self.wait_instance(index)

    def rolling_restart(self) -> None:
        """One instance at a time: drained and stopped (SIGTERM: it finishes its calls, then closes; nginx
        sends what the closed port refuses to the next instance), started, and back in rotation before
        the next one goes. The others serve meanwhile: nothing is lost. nginx is not reloaded: a reload
        closes the clients' idle keep-alive connections, and a request sent on one at that moment fails."""
        for index in range(self.count):
            self._say(f"rolling restart: instance {index}")
            self.stop_instance(index)
            self.start_instance(index)
            self.wait_instance(index)

    # -- helpers ------------------------------------------------------------------------------------
    def _state_secret(self) -> str:
        """One key for every instance to sign MCP `requestState` with: a multi-round call's retry may reach
        another instance. Made once per cluster directory, kept across restarts (a retry in flight survives one)."""
        path = self.dir / "mcp-state-secret"
        if not path.exists():
            path.write_text(secrets.token_hex(32))
            path.chmod(0o600)
        return path.read_text().strip()

    def _env(self, data_dir: Path | None = None) -> dict[str, str]:
        """The instances' environment; each instance adds its KUMITATE_DATA_DIR and PORT (supervisor config)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUMITATE_")}
        env |= {
            "KUMITATE_DATABASE_URL": self.database_url,
            "KUMITATE_REDIS_URL": self.redis_url,
            "KUMITATE_MCP_STATE_SECRET": self._state_secret(),
            "KUMITATE_PUBLIC_URL": self.url,
            "KUMITATE_EXPORT_DIR": str(self.dir / "shared" / "analytics-exports"),
            "FASTMCP_LOG_LEVEL": env.get("FASTMCP_LOG_LEVEL", "WARNING"),
            # nginx (open source) does not ask /readyz: once the drained instance closes its port, a
            # refused connection goes to the next instance; the delay lets calls just accepted arrive
            "KUMITATE_DRAIN_DELAY_S": "1",
        }
        if data_dir is not None:
            env["KUMITATE_DATA_DIR"] = str(data_dir)
        return env | self.extra_env

    def _kumitate(self, *args: str) -> None:
        env = self._env(self.dir / "migrate")
        subprocess.run([self.python, "-m", "kumitate", *args], cwd=REPO, env=env, check=True, stdout=sys.stderr)

    def _save(self) -> None:
        state = {"ports": asdict(self.ports), "database_url": self.database_url, "redis_url": self.redis_url}
        self.state_file.write_text(json.dumps(state, indent=2) + "\n")

    def load(self) -> bool:
        """Read the ports and URLs a `start` saved (False when there is no state file)."""
        try:
            state = json.loads(self.state_file.read_text())
        except (FileNotFoundError, ValueError):
            return False
        self.ports = Ports(**state["ports"])
        self.count = len(self.ports.instances)
        self.database_url, self.redis_url = state["database_url"], state["redis_url"]
        return True

    def _say(self, message: str) -> None:
        print(f"cluster: {message}", file=sys.stderr, flush=True)


def _port_free(port: int) -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _healthz(base_url: str) -> Message | None:
    """The headers of a 200 from `base_url`/healthz, or None when it did not answer so."""
    try:
        with urllib.request.urlopen(f"{base_url}/healthz", timeout=2) as response:
            return response.headers if response.status == 200 else None
    except OSError:
        return None


def _healthy(base_url: str) -> bool:
    return _healthz(base_url) is not None


def _upstream(base_url: str) -> str:
    """The instance that answered a /healthz sent through the balancer ('' when none did)."""
    headers = _healthz(base_url)
    return "" if headers is None else headers.get("X-Kumitate-Upstream", "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploy.cluster", description=__doc__.split("\n")[0])
    actions = ["install", "start", "stop", "status", "restart", "restart-instances"]
    parser.add_argument("action", choices=actions)
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--port", type=int, default=int(os.environ.get("CLUSTER_PORT") or 8080), help="start only")
    parser.add_argument("--instances", type=int, default=2)
    args = parser.parse_args(argv)
    cluster = Cluster(args.dir, args.port, args.instances)
    try:
        if args.action == "install":
            servers.install()
        elif args.action == "start":
            print(cluster.start(), flush=True)
        elif args.action == "stop":
            cluster.stop()
        elif args.action == "status":
            up = cluster.load() and cluster.running()
            print(f"running at {cluster.url}" if up else "not running")
            return 0 if up else 1
        elif not cluster.load():
            raise servers.ClusterError(f"no cluster state under {args.dir}: `make cluster` first")
        elif args.action == "restart":
            cluster.rolling_restart()
        else:
            cluster.restart_instances()
    except servers.ClusterError as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
