"""A real local cluster: PostgreSQL, Redis, N kumitate instances and nginx, all on loopback.

    python -m deploy.cluster install              # apt-get what is missing (idempotent), service user
    python -m deploy.cluster start [--port 8080]  # prints the load balancer's base URL, alone, last
    python -m deploy.cluster stop                 # stops exactly what `start` started (pid files)
    python -m deploy.cluster status

State lives under --dir (default var/cluster/): cluster.json (ports and URLs), one directory per
server with its pid file and log. The instances run as the invoking user; PostgreSQL, Redis and
nginx as the unprivileged service user when started by root.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import urllib.request
from dataclasses import asdict, dataclass, field
from email.message import Message
from pathlib import Path

from deploy import servers

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DIR = REPO / "var" / "cluster"


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

    def instance_dir(self, index: int) -> Path:
        return self.dir / f"instance-{index}"

    # -- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> str:
        """Start every part not already running and wait until each answers; returns the LB URL."""
        servers.install()
        self.dir.mkdir(parents=True, exist_ok=True)
        previous = self._load()
        if previous is not None and self.running() and previous.lb == self.ports.lb:
            return self.url
        self.stop()
        self.ports = Ports(
            lb=self.ports.lb,
            postgres=servers.free_port(),
            redis=servers.free_port(),
            instances=[servers.free_port() for _ in range(self.count)],
        )
        self._say(f"PostgreSQL on {self.ports.postgres}")
        self.database_url = servers.start_postgres(self.dir, self.ports.postgres)
        self._say(f"Redis on {self.ports.redis}")
        self.redis_url = servers.start_redis(self.dir, self.ports.redis)
        self._save()
        self._kumitate("db", "upgrade")
        for index in range(self.count):
            self.start_instance(index)
        for index in range(self.count):
            self.wait_instance(index)
        self._say(f"nginx on {self.ports.lb} -> {self.ports.instances}")
        servers.start_nginx(self.dir, self.ports.lb, self.ports.instances)
        servers.wait_for(lambda: _healthy(self.url), "the load balancer", self.dir / "nginx" / "error.log")
        return self.url

    def stop(self) -> None:
        """Stop what the pid files name, load balancer first, database last."""
        servers.stop_nginx(self.dir)
        for pid_file in sorted(self.dir.glob("instance-*/kumitate.pid")):
            servers.stop_pid(pid_file)
        servers.stop_redis(self.dir)
        servers.stop_postgres(self.dir)

    def running(self) -> bool:
        pids = [self.dir / "nginx" / "nginx.pid", self.dir / "redis" / "redis.pid", self.dir / "pg" / "postmaster.pid"]
        pids += [self.instance_dir(i) / "kumitate.pid" for i in range(len(self.ports.instances))]
        return all(servers.alive(servers.read_pid(p)) for p in pids) and _healthy(self.url)

    def start_instance(self, index: int) -> None:
        directory = self.instance_dir(index)
        directory.mkdir(parents=True, exist_ok=True)
        port = self.ports.instances[index]
        self._say(f"kumitate instance {index} on {port}")
        log = (directory / "kumitate.log").open("ab")
        process = subprocess.Popen(
            [self.python, "-m", "kumitate", "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO,
            env=self._env(directory / "data", port),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        (directory / "kumitate.pid").write_text(f"{process.pid}\n")

    def wait_instance(self, index: int) -> None:
        """Until instance `index` answers, and, when the balancer runs, until it routes to it again:
        nginx keeps an upstream that failed out of rotation for its fail_timeout (10 s), even once
        the instance answers."""
        port = self.ports.instances[index]
        servers.wait_for(
            lambda: _healthy(f"http://127.0.0.1:{port}"),
            f"kumitate instance {index}",
            self.instance_dir(index) / "kumitate.log",
            timeout_s=180,
        )
        if servers.alive(servers.read_pid(self.dir / "nginx" / "nginx.pid")):
            servers.wait_for(
                lambda: f":{port}" in _upstream(self.url),
                f"nginx routing to instance {index}",
                self.dir / "nginx" / "error.log",
            )

    def stop_instance(self, index: int) -> None:
        servers.stop_pid(self.instance_dir(index) / "kumitate.pid")

    def restart_instances(self) -> None:
        for index in range(self.count):
            self.stop_instance(index)
        for index in range(self.count):
            self.start_instance(index)
        for index in range(self.count):
            self.wait_instance(index)

    # -- helpers ------------------------------------------------------------------------------------
    def _env(self, data_dir: Path, port: int) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUMITATE_")}
        env |= {
            "KUMITATE_DATA_DIR": str(data_dir),
            "KUMITATE_DATABASE_URL": self.database_url,
            "KUMITATE_REDIS_URL": self.redis_url,
            "KUMITATE_PUBLIC_URL": self.url,
            "KUMITATE_EXPORT_DIR": str(self.dir / "shared" / "analytics-exports"),
            "PORT": str(port),
            "FASTMCP_LOG_LEVEL": env.get("FASTMCP_LOG_LEVEL", "WARNING"),
        }
        return env | self.extra_env

    def _kumitate(self, *args: str) -> None:
        env = self._env(self.dir / "migrate", 0)
        subprocess.run([self.python, "-m", "kumitate", *args], cwd=REPO, env=env, check=True, stdout=sys.stderr)

    def _save(self) -> None:
        state = {"ports": asdict(self.ports), "database_url": self.database_url, "redis_url": self.redis_url}
        self.state_file.write_text(json.dumps(state, indent=2) + "\n")

    def _load(self) -> Ports | None:
        try:
            state = json.loads(self.state_file.read_text())
        except (FileNotFoundError, ValueError):
            return None
        previous = Ports(**state["ports"])
        self.ports = Ports(lb=self.ports.lb, postgres=previous.postgres, redis=previous.redis)
        self.ports.instances = previous.instances
        self.database_url, self.redis_url = state["database_url"], state["redis_url"]
        return previous

    def _say(self, message: str) -> None:
        print(f"cluster: {message}", file=sys.stderr, flush=True)


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
    parser.add_argument("action", choices=["install", "start", "stop", "status", "restart-instances"])
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    parser.add_argument("--port", type=int, default=int(os.environ.get("CLUSTER_PORT") or 8080))
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
        elif args.action == "restart-instances":
            cluster._load()
            cluster.restart_instances()
        else:
            previous = cluster._load()
            up = previous is not None and cluster.running()
            print(f"running at {cluster.url}" if up else "not running")
            return 0 if up else 1
    except servers.ClusterError as exc:
        print(f"cluster: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
