"""What the workflow changes in Snakemake's own process (rules/common.smk calls ``tune``).

Snakemake runs in one process beside the jobs and competes with them for the cores; two of its
habits cost the full default run minutes of CPU, measured with py-spy on the smoke run:

- **Benchmark sampling.** Every job's ``benchmark:`` record samples the job's process tree twice
  a second for its first 15 s, then every 30 s; each sample reads /proc/<pid>/smaps_rollup of
  every process of the tree. With a few hundred short jobs that was about half of Snakemake's
  CPU time (49 % of its active samples). Here every 30 s from the start: the record's wall time
  ``s`` is measured, not sampled, and the peak memory the reports use is each job's own exact
  high-water mark, which every rfl job prints with its CPU record (rfl.cli,
  rfl.reporting.performance).
- **Input sizes.** At every scheduling pass the scheduler asks the size of every input of every
  ready job (``JobScheduler.update_input_sizes``), to prefer, among jobs of equal priority,
  those with the largest inputs. A ready job's inputs are finished outputs whose size does not
  change, so a size once known is kept: each file is asked once (34 % of Snakemake's active
  samples in the smoke run went to asking again).

Each change is applied only where this Snakemake has what it changes; another version keeps
its own behaviour (``tune`` returns what it changed).
"""

from __future__ import annotations


def _benchmark_sampling() -> bool:
    try:
        import snakemake.benchmark as benchmark
        benchmark.BENCHMARK_INTERVAL_SHORT = benchmark.BENCHMARK_INTERVAL
    except (ImportError, AttributeError):
        return False
    return True


def known_sizes_first(update):
    """``JobScheduler.update_input_sizes`` that asks only for the inputs whose size is not known
    yet (absent from ``self._input_sizes``, or None: the file did not exist when asked): it
    passes on the jobs with such an input, and is not called when there is none."""
    async def update_input_sizes(self, jobs):
        """Snakemake's, asked only for the jobs with an input of unknown size."""
        known = self._input_sizes
        unknown = [job for job in jobs if any(known.get(f) is None for f in job.input)]
        if unknown:              # (none: nothing to ask, and no pruning of the known sizes)
            await update(self, unknown)

    update_input_sizes.rfl_tuned = True
    update_input_sizes.rfl_original = update
    return update_input_sizes


def _input_sizes() -> bool:
    try:
        from snakemake.scheduling.job_scheduler import JobScheduler
        update = JobScheduler.update_input_sizes
    except (ImportError, AttributeError):
        return False
    if not getattr(update, "rfl_tuned", False):
        JobScheduler.update_input_sizes = known_sizes_first(update)
    return True


def tune() -> list[str]:
    """Apply both changes to this process's Snakemake; the names of those applied."""
    return [name for name, change in (("benchmark sampling", _benchmark_sampling),
                                      ("input sizes", _input_sizes)) if change()]
