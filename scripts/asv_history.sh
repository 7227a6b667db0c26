#!/usr/bin/env bash
# The asv dashboard over the last N commits, offline-ready:
#
#     scripts/asv_history.sh [N] [REV] [--every K]
#
# 1. benchmarks the quick subset (benchmarks/quick.regex: the CPESph RFedAGS round at K = 5..30,
#    the sampler, one RFedAGS round on CPESph, MBCFSti, kPCA and multitask) on the last N
#    (default 6) first-parent commits of REV (default main) that change what asv installs
#    (rfl/, pyproject.toml; a commit that changes only README, tests or benchmarks installs the
#    same package), every K-th of them with --every K, in asv's own virtualenv (asv.conf.json;
#    created on first use from PyPI) with the benchmark code of this checkout; commits already
#    benchmarked on this machine are skipped (--skip-existing-successful);
# 2. `asv publish` writes the dashboard to .asv/html;
# 3. scripts/asv_dashboard.py vendor replaces its CDN scripts and styles by verified copies from
#    npm (cache .asv/npm-cache, mirror $RFL_NPM_MIRROR), so it renders offline;
# 4. scripts/asv_dashboard.py check renders the CPESph round's graph in headless Chromium without
#    network (skipped with a note when Chromium is absent) and needs min(N, 5) points.
# View it with `asv preview` (or any static file server on .asv/html).
# Cost, measured on this project's shared 2-core machine (timings there are not figures): creating
# the environment and benchmarking one commit took 3 min 10 s wall (97 CPU-s) at load ~7; seven
# more commits took 22 min wall at load 17-20, 5.4 CPU-min in all (~45 CPU-s a commit): on an
# idle machine expect about a minute a commit, so 5-10 commits fit well within an hour.
set -euo pipefail
cd "$(dirname "$0")/.."

n=6; rev=main; every=1; pos=0
while [ $# -gt 0 ]; do
    case "$1" in
        --every) every="${2:?--every needs a number}"; shift 2 ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) if [ $pos -eq 0 ]; then n="$1"; else rev="$1"; fi; pos=$((pos + 1)); shift ;;
    esac
done
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "asv_history: N must be a positive integer, not '$n'" >&2; exit 2; }
[[ "$every" =~ ^[1-9][0-9]*$ ]] || { echo "asv_history: --every must be a positive integer, not '$every'" >&2; exit 2; }
git rev-parse -q --verify "$rev^{commit}" > /dev/null \
    || { echo "asv_history: REV '$rev' is not a commit of this repository" >&2; exit 2; }

hashes=$(mktemp); trap 'rm -f "$hashes"' EXIT
git rev-list --first-parent "$rev" -- rfl pyproject.toml > "$hashes"
awk -v k="$every" -v n="$n" '(NR - 1) % k == 0 && c++ < n' "$hashes" > "$hashes.n" && mv "$hashes.n" "$hashes"
echo "+ asv run over $(wc -l < "$hashes") commits of $rev: $(cut -c1-8 "$hashes" | tr '\n' ' ')"
asv machine --yes > /dev/null
# a commit whose rfl lacks what a benchmark imports records that benchmark as failed (no point)
asv run --skip-existing-successful --show-stderr --bench "$(cat benchmarks/quick.regex)" \
    "HASHFILE:$hashes" || echo "asv_history: some benchmarks failed (their commits have no point)" >&2
asv publish
python scripts/asv_dashboard.py vendor
if python -c 'import sys; sys.path.insert(0, "scripts"); import check_report; sys.exit(check_report.find_chromium() is None)'; then
    python scripts/asv_dashboard.py check --min-points "$(( n < 5 ? n : 5 ))"
else
    echo "asv_history: no Chromium on PATH: the offline rendering was not checked" >&2
fi
echo "dashboard: $(pwd)/.asv/html (asv preview)"
