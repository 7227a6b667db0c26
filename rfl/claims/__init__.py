"""Claims as declarations: each claim of a paper, declared in the config with the rule that
judges it (``rfl.claims.rules``), is judged from result files and rendered into the report.

``verdicts``: the four verdicts and how cases combine; ``curves``: statistics of excess-risk
curves; ``rule``: the ``Rule`` component, ``Evidence`` and ``Judgement``; ``judge``: judging
every declared claim and rendering it.
"""
