"""`genledger` command line: collect, monitor, demo. Imports stay lazy so start-up is cheap."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

EXIT_OK, EXIT_FAILURES, EXIT_USAGE = 0, 1, 2


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
    collect.add_argument("data_root", nargs="?", type=Path, help="default: $GENLEDGER_DATA_ROOT")
    collect.add_argument("-o", "--output", type=Path, help="default: $GENLEDGER_STATS_PATH")
    collect.add_argument("--state", type=Path, help="state dir (default: under ~/.cache)")
    collect.add_argument("--full", action="store_true", help="ignore checkpoints, read all")
    collect.add_argument("--config", type=Path, help="config file (genledger.toml)")
    collect.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")

    monitor = sub.add_parser("monitor", help="live terminal dashboard of a stats JSON")
    monitor.add_argument("stats", nargs="?", type=Path, help="default: $GENLEDGER_STATS_PATH")
    monitor.add_argument(
        "--once", action="store_true", help="print one frame and exit (1 if no stats yet)"
    )
    monitor.add_argument(
        "--interval", type=float, default=2.0, help="seconds between redraws (ages tick)"
    )
    monitor.add_argument(
        "--stale-after", type=float, default=600.0, help="mark stats older than this (s) stale"
    )
    monitor.add_argument("--collect", type=Path, metavar="DATA_ROOT", help="also run collect")
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
        help="seconds between sensor ticks (default 30; replaces $GENLEDGER_CONFIG)",
    )
    demo.add_argument(
        "--log", type=Path, help="Dagster's log file (default: beside the temp dir, kept)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `genledger` console script."""
    args = _parser().parse_args(argv)
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
    if not args.quiet:
        print(render(result.stats), file=sys.stderr)
    return EXIT_FAILURES if result.has_errors else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
