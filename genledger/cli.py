"""`genledger` command line: collect, missing, monitor, demo, schema (imports stay lazy)."""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from genledger import codecache

EXIT_OK, EXIT_FAILURES, EXIT_USAGE = 0, 1, 2


def _root_arg(text: str) -> Path | str:
    from genledger.config import ConfigError, root_arg

    try:
        return root_arg(text)
    except ConfigError as exc:  # its own words: argparse's would repeat the value (a password)
        raise argparse.ArgumentTypeError(str(exc)) from None


def _path_arg(text: str) -> Path:
    """An argparse type: a path, never empty (`Path('')` would be the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a path, got an empty string")
    return Path(text)


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
    collect.add_argument("-o", "--output", type=_path_arg, help="default: $GENLEDGER_STATS_PATH")
    collect.add_argument("--state", type=_path_arg, help="state dir (default: under ~/.cache)")
    collect.add_argument(
        "--metrics",
        type=_path_arg,
        metavar="FILE",
        help="also write the stats as OpenMetrics text (default: $GENLEDGER_METRICS_PATH, "
        "[metrics] path)",
    )
    collect.add_argument("--full", action="store_true", help="ignore checkpoints, read all")
    collect.add_argument(
        "--forget-missing",
        action="store_true",
        help="stop reporting files and datasets counted before and gone now",
    )
    collect.add_argument("--config", type=_path_arg, help="config file (genledger.toml)")
    collect.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="scan on this Ray cluster ('auto': the one this machine is a node of; "
        "default: [engine] ray, $GENLEDGER_RAY_ADDRESS, else this machine's cores)",
    )
    collect.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")

    missing = sub.add_parser(
        "missing",
        help="write the prompt lines with no successful response (missing or failed)",
    )
    missing.add_argument(
        "data_root", type=_root_arg, help="a folder, sftp://... or s3://... (as for collect)"
    )
    missing.add_argument("dataset", nargs="?", help="one dataset (default: every one)")
    missing.add_argument(
        "-o", "--output", type=Path, required=True, help="the file to write ('-': stdout)"
    )
    missing.add_argument("--config", type=Path, help="config file (genledger.toml)")
    missing.add_argument("-q", "--quiet", action="store_true", help="no summary on stderr")

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
    monitor.add_argument("--state", type=_path_arg, help="state dir for --collect")
    monitor.add_argument("--config", type=_path_arg, help="config file (genledger.toml)")

    sub.add_parser("schema", help="print the JSON Schema (draft 2020-12) of the stats JSON")

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
    if args.command == "collect":
        short_lived()
    code = _dispatch(args)
    if args.command == "collect":
        quick_exit(code)
    sys.exit(code)


# Container allocations between two passes of the cyclic garbage collector's youngest
# generation in a collect process (Python's default: 700).
COLLECT_GC_THRESHOLD = 100_000


def short_lived() -> None:
    """Let the garbage collector run seldom in this process (a collect: one refresh, then
    exit). Its start-up makes ~100,000 objects that live to its end, which the default
    thresholds walked again and again: 6-9 ms of a 0.15 s no-op, ~2 ms more in a small
    refresh (docs/performance-log.md). Cycles are still collected, every
    `COLLECT_GC_THRESHOLD` allocations; forked scan workers inherit the setting."""
    gc.set_threshold(COLLECT_GC_THRESHOLD, *gc.get_threshold()[1:])


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
    codecache.save()
    if threading.active_count() > 1:
        sys.exit(code)
    if "logging" in sys.modules:  # handlers a library may have added still get flushed
        sys.modules["logging"].shutdown()
    os._exit(code)


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "collect":
        return collect_command(args)
    if args.command == "missing":
        return missing_command(args)
    if args.command == "schema":
        return schema_command()
    if args.command == "monitor":
        from genledger.monitor.app import monitor_command

        return monitor_command(args)
    from genledger.demo.run import demo_command

    return demo_command(args)


def collect_command(args: argparse.Namespace) -> int:
    """`genledger collect`: exit 0 clean, 1 error-severity failures, 2 usage, an unreadable
    root, or a dataset another refresh holds for longer than the lock wait."""
    from dataclasses import replace

    from genledger.config import ConfigError, EngineSettings, load_config
    from genledger.ledger.summary import render
    from genledger.refresh.collect import UsageError, refresh
    from genledger.refresh.engine import EngineError
    from genledger.refresh.state import StateBusy
    from genledger.tail.discovery import DataRootError
    from genledger.terminal import printable

    try:
        config = load_config(args.config).with_paths(
            data_root=args.data_root,
            stats_path=args.output,
            state_dir=args.state,
            metrics_path=args.metrics,
        )
        if args.ray:
            config = replace(config, engine=EngineSettings(ray=args.ray))
        result = refresh(config, full=args.full, forget_missing=args.forget_missing)
    except (UsageError, ConfigError, DataRootError, StateBusy, EngineError) as exc:
        print(printable(f"genledger collect: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        where = f"cannot write {exc.filename}: {exc.strerror or exc}"
        print(printable(f"genledger collect: {where}"), file=sys.stderr)
        return EXIT_USAGE
    for notice in result.notices:  # even with -q: they explain a slow refresh or a re-read
        print(printable(f"genledger collect: {notice}"), file=sys.stderr)
    if not args.quiet:
        print(render(result.stats), file=sys.stderr)
    return EXIT_FAILURES if result.has_errors else EXIT_OK


def schema_command() -> int:
    """`genledger schema`: the stats JSON's JSON Schema on stdout (the file docs/ publishes)."""
    from genledger.ledger.schema import schema_text

    sys.stdout.write(schema_text())
    return EXIT_OK


def missing_command(args: argparse.Namespace) -> int:
    """`genledger missing`: exit 0 written, 1 written but for datasets whose prompts cannot be
    joined (each named on stderr with why), 2 on bad usage, an unreachable root, a bad config
    or the prompts of the one dataset asked for that cannot be joined."""
    from genledger.config import ConfigError, load_config
    from genledger.refresh.missing import MissingError, find_missing, write_lines
    from genledger.tail.discovery import DataRootError
    from genledger.terminal import printable

    output = None if str(args.output) == "-" else args.output
    try:
        config = load_config(args.config).with_paths(data_root=args.data_root)
        _outside_root(output, config.data_root)
        found = find_missing(config, args.dataset)
        write_lines(found.lines, output)
    except (ConfigError, DataRootError, MissingError) as exc:
        print(printable(f"genledger missing: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        why = f"genledger missing: cannot write {exc.filename}: {exc.strerror}"
        print(printable(why), file=sys.stderr)
        return EXIT_USAGE
    skipped = set(found.skipped)
    for name, line in zip(found.joins, found.summary(), strict=True):
        if not args.quiet or name in skipped:  # with -q, still each dataset skipped and why
            print(line, file=sys.stderr)
    return EXIT_FAILURES if found.skipped else EXIT_OK


def _outside_root(output: Path | None, root: Path | str | None) -> None:
    """Refuse an output inside a local data root (data roots are read-only to us)."""
    from genledger.refresh.missing import MissingError

    if output is None or not isinstance(root, Path):
        return
    if output.resolve().is_relative_to(root.resolve()):
        raise MissingError(f"{output} is inside the data root {root}: write it elsewhere")


if __name__ == "__main__":
    run()
