"""``rfl bench``: a method against the built-in baselines on the suite's problems.

    suite.py        the standard instance of each problem at each size (smoke, default, paper)
    plan.py         the jobs of one benchmark: methods x problems, specs and paths (BenchPlan)
    tuning.py       the step rule, the same for every method (smallest final loss, tuning seed)
    leaderboard.py  per problem and method: final excess risk across seeds, budget to reach
                    accuracy levels, wall time (CSV, Markdown, sortable HTML)
    profile.py      the Dolan-More performance profile across problems
    execute.py      the jobs in one process (``rfl bench``); rules/bench.smk runs the same jobs
                    through Snakemake
"""
