"""Fail on a speed regression of the quick asv subset: a commit against its parent.

    python scripts/asv_regression.py [--base REV] [--head REV] [--factor F] [--no-run]

Benchmarks the quick subset (``benchmarks/quick.regex``) on BASE (default: HEAD's first parent)
and HEAD in asv's own virtualenv (asv.conf.json), the two commits' rounds interleaved
(``asv run --interleave-rounds``: a burst of load on the shared machine slows both sides, not
one), then compares them as ``asv continuous`` does (``asv compare --factor F``): a benchmark
has regressed when HEAD's time exceeds F times BASE's *and* asv's statistics call the two
sample sets different, or when it fails on HEAD and not on BASE. Any regression: exit status 1,
with asv's table of the changed benchmarks. A benchmark that fails on BASE (HEAD's benchmark
code needs something BASE lacks) is not comparable and does not fail the check, so this does not
reuse ``asv continuous``, which stops on any failed benchmark before comparing.

F = 2 was chosen before any number was seen: CI runs on 2 cores shared with other jobs, where a
co-tenant's burst can stretch single samples severalfold, while the regressions this check
exists for (a compiled kernel or vectorised path lost to a per-agent Python loop, an O(B)
sampler turned O(N)) cost 3x to 100x (bench_speedup's reference loops). --no-run compares
results already in .asv/results. A regression found is measured again (both commits, afresh) and
fails the check only if the second run finds one too: a burst of load that hit one side of one
run rarely hits it twice, a real slow-down does. Bad arguments: one line, exit status 2.

Measured on the project's shared 2-core machine at load 15-20 (timings there are not figures):
two commits with the same rfl code, 6 min 7 s wall, 91 CPU-s, largest ratio 1.13, no regression;
a commit doing the sampler's work 5 times, found in both runs (10 min 45 s wall for the two).
The environment already existed; a fresh clone first creates it (pip, from PyPI or its cache).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUICK = ROOT / "benchmarks" / "quick.regex"
FACTOR = 2.0


def _rev(name: str) -> str:
    done = subprocess.run(["git", "rev-parse", "-q", "--verify", f"{name}^{{commit}}"], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"asv_regression: error: {name} is not a commit of this repository")
    return done.stdout.strip()


def run(base: str, head: str, regex: str) -> int:
    """``asv run`` of the quick subset on both commits, rounds interleaved; asv's exit status."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(f"{base}\n{head}\n")
    try:
        return subprocess.run(["asv", "run", "--interleave-rounds", "--show-stderr", "--bench", regex,
                               f"HASHFILE:{f.name}"], cwd=ROOT).returncode
    finally:
        Path(f.name).unlink()


def compare(base: str, head: str, factor: float, config: Path = ROOT / "asv.conf.json",
            machine: str | None = None) -> bool:
    """Print asv's comparison of the two commits' results (``asv compare --factor``, on
    ``machine``, default this one); whether any benchmark worsened."""
    from asv.commands.compare import Compare
    from asv.config import Config
    from asv.machine import Machine

    conf = Config.load(str(config))
    worsened, _ = Compare.print_table(conf, base, head, factor=factor, split=True, only_changed=False,
                                      sort="ratio", machine=machine or Machine.get_unique_machine_name(),
                                      commit_names={base: base[:8], head: head[:8]})
    return worsened


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", help="the reference commit (default: HEAD's first parent)")
    ap.add_argument("--head", default="HEAD")
    ap.add_argument("--factor", type=float, default=FACTOR)
    ap.add_argument("--no-run", action="store_true", help="compare the results already stored")
    args = ap.parse_args(argv)
    if not args.factor > 1:
        print(f"asv_regression: error: --factor must be > 1, not {args.factor}", file=sys.stderr)
        return 2
    try:
        head = _rev(args.head)
        base = _rev(args.base or f"{head}^1")
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    regex = QUICK.read_text().strip()
    attempts = 1 if args.no_run else 2
    for attempt in range(1, attempts + 1):
        if not args.no_run:
            code = run(base, head, regex)
            if code not in (0, 2):          # 2: some benchmark failed; compare() says on which side
                print(f"asv_regression: error: asv run exited with {code}", file=sys.stderr)
                return 1
        worsened = compare(base, head, args.factor)
        if not worsened or attempt == attempts:
            break
        print(f"asv_regression: {head[:8]} looks slower than {base[:8]}; measuring both again to confirm")
    print(f"asv_regression: {head[:8]} against {base[:8]}, factor {args.factor:g}: "
          + ("REGRESSION (benchmarks marked + or ! above"
             + (", in two runs in a row)" if attempts == 2 else ")") if worsened else "no regression"))
    return 1 if worsened else 0


if __name__ == "__main__":
    sys.exit(main())
