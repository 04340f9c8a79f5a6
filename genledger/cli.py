"""`genledger` command line: collect, monitor, demo. Imports stay lazy so start-up is cheap."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

EXIT_OK, EXIT_FAILURES, EXIT_USAGE = 0, 1, 2


def _root_arg(text: str) -> Path | str:
    from genledger.config import root_arg

    return root_arg(text)


def _positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="genledger", description="Token accounting and data quality for generation runs."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    collect = sub.add_parser("collect", help="refresh the stats JSON of a data root")
    collect.add_argument(
        "data_root",
        nargs="?",
        type=_root_arg,
        help="a folder, sftp://[user@]host[:port]/path or s3://bucket/prefix "
        "(default: $GENLEDGER_DATA_ROOT)",
    )
    collect.add_argument("-o", "--output", type=Path, help="default: $GENLEDGER_STATS_PATH")
    collect.add_argument("--state", type=Path, help="state dir (default: under ~/.cache)")
    collect.add_argument("--full", action="store_true", help="ignore checkpoints, read all")
    collect.add_argument("--config", type=Path, help="config file (genledger.toml)")
    collect.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")

    monitor = sub.add_parser("monitor", help="live terminal dashboard of a stats JSON")
    monitor.add_argument(
        "stats",
        nargs="?",
        type=_root_arg,
        help="a stats JSON: a path, or sftp://... / s3://... (default: $GENLEDGER_STATS_PATH)",
    )
    monitor.add_argument(
        "--once", action="store_true", help="print one frame and exit (1 if no stats yet)"
    )
    monitor.add_argument(
        "--interval", type=float, default=2.0, help="seconds between redraws (ages tick)"
    )
    monitor.add_argument(
        "--stale-after", type=float, default=600.0, help="mark stats older than this (s) stale"
    )
    monitor.add_argument("--collect", type=_root_arg, metavar="DATA_ROOT", help="also run collect")
    monitor.add_argument("--collect-interval", type=float, default=30.0, help="seconds")
    monitor.add_argument("--state", type=Path, help="state dir for --collect")
    monitor.add_argument("--config", type=Path, help="config file (genledger.toml)")

    demo = sub.add_parser("demo", help="a simulated growing run with the Dagster UI on it")
    demo.add_argument("--port", type=int, default=3000, help="Dagster UI port on 127.0.0.1")
    demo.add_argument("--dir", type=Path, help="where to create the run (default: a temp dir)")
    demo.add_argument("--rate", type=float, default=20.0, help="records per second written")
    demo.add_argument("--no-ui", action="store_true", help="only the writer and collect")
    demo.add_argument("--records", type=int, default=600, help="prompts per dataset")
    demo.add_argument("--seed", type=int, default=7, help="random seed of the writer")
    demo.add_argument("--collect-interval", type=float, default=5.0, help="--no-ui: seconds")
    demo.add_argument("--keep", action="store_true", help="keep the temp dir on exit")
    demo.add_argument(
        "--refresh",
        type=_positive_int,
        metavar="SECONDS",
        help="seconds between sensor ticks (default 5; replaces $GENLEDGER_CONFIG)",
    )
    demo.add_argument(
        "--log", type=Path, help="Dagster's log file (default: beside the temp dir, kept)"
    )
    demo.add_argument(
        "--workspace",
        type=Path,
        metavar="PATH",
        help="the Dagster workspace.yaml to serve, or its folder (default: ./workspace.yaml); "
        "the dagster.yaml beside it sets up the instance",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit code."""
    return _dispatch(_parser().parse_args(argv))


def run() -> NoReturn:
    """Entry point of the `genledger` console script (and of `python -m genledger.cli`)."""
    args = _parser().parse_args()
    code = _dispatch(args)
    if args.command == "collect":
        quick_exit(code)
    sys.exit(code)


def quick_exit(code: int) -> NoReturn:
    """Exit without tearing the interpreter down, once a collect has nothing left to do.

    The stats and state are written, fsynced and renamed by then, and the workers joined;
    unloading numpy, msgspec and a few hundred modules only cost time (~40 ms of a 1.3 s cold
    collect, benchmarks/run.py). A process with a thread still alive (a remote root's
    transport) exits the usual way, so nothing in flight is cut short.
    """
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    if threading.active_count() > 1:
        sys.exit(code)
    if "logging" in sys.modules:  # handlers a library may have added still get flushed
        sys.modules["logging"].shutdown()
    os._exit(code)


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "collect":
        return collect_command(args)
    if args.command == "monitor":
        from genledger.monitor.app import monitor_command

        return monitor_command(args)
    from genledger.demo.run import demo_command

    return demo_command(args)


def collect_command(args: argparse.Namespace) -> int:
    """`genledger collect`: exit 0 clean, 1 error-severity failures, 2 usage/unreadable root."""
    from genledger.config import ConfigError, load_config
    from genledger.ledger.summary import render
    from genledger.refresh.collect import UsageError, refresh
    from genledger.tail.discovery import DataRootError

    try:
        config = load_config(args.config).with_paths(
            data_root=args.data_root, stats_path=args.output, state_dir=args.state
        )
        result = refresh(config, full=args.full)
    except (UsageError, ConfigError, DataRootError) as exc:
        print(f"genledger collect: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"genledger collect: cannot write {exc.filename}: {exc.strerror}", file=sys.stderr)
        return EXIT_USAGE
    for notice in result.notices:  # even with -q: they explain a slow refresh or a re-read
        print(f"genledger collect: {notice}", file=sys.stderr)
    if not args.quiet:
        print(render(result.stats), file=sys.stderr)
    return EXIT_FAILURES if result.has_errors else EXIT_OK


if __name__ == "__main__":
    run()
