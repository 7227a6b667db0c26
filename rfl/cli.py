"""``rfl``: the thin command line the Snakefile calls.

    rfl validate CONFIG                         check a workflow config
    rfl data SPEC OUT.npz                       generate a dataset
    rfl reference SPEC DATA.npz OUT.npz         x* and F(x*) of a dataset
    rfl run SPEC DATA.npz REF.npz OUT.csv OUT.meta.json
    rfl figure SPEC OUT.pdf RUN.csv...          draw one experiment (PNG beside the PDF)
    rfl fetch-school SPEC OUT                   School data from a mirror or the pinned URL (sha256)
    rfl table1 SPEC OUT.csv                     Table 1 (csv, md, tex) from the config
    rfl table2 SPEC OUT.csv RUN.csv...          Table 2 (csv, md, tex) from School runs
    rfl reproduction SPEC OUT.md                the computed reproduction report

Bad arguments exit with status 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one clear line, status 2
        self.exit(2, f"rfl: error: {message}\n")


def _existing(path: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise argparse.ArgumentTypeError(f"no such file: {path}")
    return p


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="rfl", description="Riemannian federated learning benchmark steps.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("validate", help="check a workflow config")
    p.add_argument("config", type=_existing)
    p = sub.add_parser("data", help="generate a dataset")
    p.add_argument("spec", type=_existing)
    p.add_argument("out")
    p.add_argument("inputs", nargs="*", type=_existing, help="raw files the generator reads")
    p = sub.add_parser("reference", help="compute x* and F(x*) of a dataset")
    p.add_argument("spec", type=_existing)
    p.add_argument("data", type=_existing)
    p.add_argument("out")
    p = sub.add_parser("run", help="execute one run")
    p.add_argument("spec", type=_existing)
    p.add_argument("data", type=_existing)
    p.add_argument("reference", type=_existing)
    p.add_argument("out_table")
    p.add_argument("out_meta")
    p = sub.add_parser("figure", help="draw one experiment's figure")
    p.add_argument("spec", type=_existing)
    p.add_argument("out_pdf")
    p.add_argument("runs", nargs="+", type=_existing)
    p = sub.add_parser("fetch-school", help="fetch and verify ILEA567.DAT")
    p.add_argument("spec", type=_existing)
    p.add_argument("out")
    p = sub.add_parser("table1", help="write Table 1")
    p.add_argument("spec", type=_existing)
    p.add_argument("out_csv")
    p = sub.add_parser("table2", help="write Table 2")
    p.add_argument("spec", type=_existing)
    p.add_argument("out_csv")
    p.add_argument("runs", nargs="*", type=_existing)
    p = sub.add_parser("reproduction", help="write the reproduction report")
    p.add_argument("spec", type=_existing)
    p.add_argument("out_md")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from rfl import io
    from rfl.config import ConfigError
    from rfl.data.school import ChecksumMismatchError, DataUnavailableError

    try:
        if args.command == "validate":
            from rfl import config
            config.load(args.config)
            print(f"{args.config}: valid")
        elif args.command == "data":
            from rfl.runner import generate_data
            generate_data(io.read_json(args.spec), args.out, args.inputs)
        elif args.command == "reference":
            from rfl.runner import compute_reference
            compute_reference(io.read_json(args.spec), args.data, args.out)
        elif args.command == "run":
            from rfl.runner import run
            run(io.read_json(args.spec), args.data, args.reference, args.out_table, args.out_meta)
        elif args.command == "figure":
            from rfl.reporting.figures import experiment_figure
            experiment_figure(io.read_json(args.spec), args.runs, args.out_pdf)
        elif args.command == "fetch-school":
            from rfl.data.school import fetch_ilea
            spec = io.read_json(args.spec)
            out = Path(args.out)
            got = fetch_ilea(out.parent, mirror=spec.get("mirror"))
            if got.resolve() != out.resolve():
                raise RuntimeError(f"fetched {got}, expected {out}")
        elif args.command == "table1":
            from rfl.reporting.tables import table1
            table1(io.read_json(args.spec), args.out_csv)
        elif args.command == "table2":
            from rfl.reporting.tables import table2
            table2(io.read_json(args.spec), args.out_csv, args.runs)
        elif args.command == "reproduction":
            from rfl.reporting.reproduction import write_report
            write_report(io.read_json(args.spec), args.out_md)
    except ConfigError as exc:
        print(f"rfl: error: {exc}", file=sys.stderr)
        return 2
    except (DataUnavailableError, ChecksumMismatchError) as exc:
        print(f"rfl: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
