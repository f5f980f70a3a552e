"""`kumitate db upgrade | current`: apply or show the storage layer's schema revision."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    db = sub.add_parser("db", help="database schema: upgrade to this release, or show the current revision")
    db.add_argument(
        "action", choices=["upgrade", "current"], help="upgrade: apply pending migrations; current: print the version"
    )
    db.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from kumitate.settings import Settings
    from kumitate.storage import engine as engines
    from kumitate.storage import migrate

    settings = Settings.from_env()
    url = engines.database_url(settings.database_url, settings.data_dir)
    engine = engines.create(url, busy_timeout_ms=settings.sqlite_busy_timeout_ms)
    where = engine.url.render_as_string(hide_password=True)
    try:
        with migrate.reachable(engine):
            if args.action == "upgrade":
                before, after = migrate.upgrade(engine)
                done = f"{before or 'empty'} -> {after}" if before != after else f"at {after}, nothing to do"
                print(f"{where}: {done}")
            else:
                print(f"{where}: at {migrate.current(engine) or 'none'} (this kumitate needs {migrate.head()})")
    finally:
        engine.dispose()
    return 0
