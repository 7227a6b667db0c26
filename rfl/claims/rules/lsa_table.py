"""``lsa_table``: a measurement, no verdict: the federated TD(0) study's table
(``paper_tables/fedlsa_bias.csv``, ``rfl.reporting.lsa``) for the claim's experiments, as the
report shows it: ``bias`` (predicted norm(bias)^2, FedLSA's plateau, its relative error,
SCAFFLSA's last value and factor: ``rfl.reporting.lsa.display``) or ``stationary`` (the pool
oracle's bias^2 / variance / plateau predictions, FedLSA's plateau +- se and z:
``display_pool``)."""

from __future__ import annotations

from rfl.reporting.lsa import display, display_pool

from ..lsa_cells import cells, no_table
from ..rule import Evidence, Judgement, Rule


class LsaTable(Rule):
    name = "lsa_table"
    summary = "measurement: the FedLSA / SCAFFLSA table of the claim's cells"
    judges = False
    params_schema = {"type": "object", "additionalProperties": False, "properties": {
        "columns": {"enum": ["bias", "stationary"], "default": "bias"}}}

    def describe(self, p: dict) -> str:
        return ("the cells of paper_tables/fedlsa_bias.csv that these experiments ran ("
                + ("predicted bias, FedLSA's plateau, SCAFFLSA" if p["columns"] == "bias" else
                   "predicted stationary error, FedLSA's plateau +- its seed standard error") + ")")

    def judge(self, ev: Evidence, p: dict) -> Judgement:
        t = cells(ev)
        if t is None or t.empty:
            return no_table(None)
        shown = display(t) if p["columns"] == "bias" else display_pool(t)
        return Judgement(None, shown.to_dict("records"))
