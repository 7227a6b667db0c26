"""RFedAGS, RFedAvg and RFedSVRG as Flower message-API strategies.

A round (``configure_train`` -> replies -> ``aggregate_train``):

1. the server draws the participants with the run's sampler (the simulator's
   ``AgentSampler``; Flower's own node sampling is not reproducible) and sends the draw
   number of the round's first local step (``rfl.flower.sampling.round_draw``: t 2^32);
2. each participant's node gets x_t as ``ArrayRecord({"x": ...})`` and a ConfigRecord
   (algorithm, t, alpha_t, K, B, key, draw), runs its local work (``rfl.flower.local``) and
   replies with zeta^j in T_{x_t}M (RFedAGS) or its last iterate x^j_{t,K} (RFedAvg,
   RFedSVRG), and its N_j as "num-examples";
3. the server checks every reply (an error reply, a missing array, a wrong shape, a
   non-finite entry, a point off the manifold or a vector off T_{x_t}M is refused with a
   message naming the node and agent), orders the accepted ones by agent id, weights them
   by ``sampler.weights`` (N_j-proportional, renormalised over the accepted agents) and
   aggregates with rfl's functions (``retract_weighted_stream`` / ``tangent_mean``).

RFedSVRG exchanges two messages per round: ``configure_train`` first asks the reference
agents for grad f_j(x_t) (a "query" message), forms grad f(x_t) = sum_j p_j grad f_j(x_t),
and sends it with the training messages. The agents asked are all S agents
(``correction="all_agents"``, Li & Ma's grad f) or the round's participants
(``correction="participants"``), as the in-process RFedSVRG's ``correction`` option says.

``configure_evaluate`` / ``aggregate_evaluate`` give the federated cost
F(x) = sum_j p_j f_j(x) from every agent's local cost.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import numpy as np
from flwr.app import (
    Array,
    ArrayRecord,
    ConfigRecord,
    Message,
    MessageType,
    MetricRecord,
    RecordDict,
)
from flwr.common.logger import log
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from rfl.algorithms.aggregation import (
    retract_weighted_stream,
    tangent_mean,
    weighted_mean,
)
from rfl.flower.local import REPLY_KEY
from rfl.flower.sampling import round_draw

#: how far a returned point may be from the manifold, or a returned vector from T_{x_t}M
#: (relative to its norm), before it is refused: the run table's divergence tolerance
TOLERANCE = 1e-8


def to_record(**arrays) -> ArrayRecord:
    return ArrayRecord({k: Array(np.ascontiguousarray(v, dtype=float)) for k, v in arrays.items()})


class RiemannianStrategy(Strategy):
    """The shared server side: seeded participation, reply checks, weighted aggregation.

    algorithm: the run's in-process strategy (an ``rfl.algorithms`` FederatedStrategy: its
    manifold, step size, K, B and cost counts); nodes: {agent j: node id}; local_sizes: (S,)
    N_j as the nodes reported them; problem_config: the strings every message carries so a
    client can load its problem (problem, params, geometry, data-file).
    """

    name: str

    def __init__(self, algorithm, nodes: dict[int, int], local_sizes, problem_config: dict,
                 timeout: float | None = None):
        self.algorithm = algorithm
        self.manifold = algorithm.manifold
        self.nodes = dict(nodes)
        self.agent_of = {n: j for j, n in nodes.items()}
        self.local_sizes = np.asarray(local_sizes, dtype=int)
        self.problem_config = dict(problem_config)
        self.timeout = timeout
        self.sampler = None          # set by the round driver: the run's AgentSampler
        self.refusals: list[dict] = []
        self.last_counts = (0, 0)
        self._pending = None

    # ---- messages -------------------------------------------------------------------
    def _config(self, **extra) -> ConfigRecord:
        return ConfigRecord({**self.problem_config, "algorithm": self.name, **extra})

    def _messages(self, agents, content: RecordDict, message_type: str) -> list[Message]:
        return [Message(content=content, message_type=message_type, dst_node_id=self.nodes[int(j)])
                for j in agents]

    def _round_config(self, t: int) -> ConfigRecord:
        alg = self.algorithm
        draw = round_draw(t, alg.K)
        return self._config(t=int(t), alpha=float(alg.step_size(t)), K=int(alg.K),
                            B=int(alg.batch_size), key=str(int(self.sampler.key)), draw=int(draw))

    # ---- reply checks ----------------------------------------------------------------
    def refuse(self, server_round: int, node: int, agent, reason: str) -> None:
        who = f"node {node}" + (f" (agent {agent})" if agent is not None else "")
        log(logging.WARNING, "round %s: refused the reply of %s: %s; the round proceeds "
            "with the others", server_round, who, reason)
        self.refusals.append({"round": int(server_round), "node": int(node),
                              "agent": None if agent is None else int(agent), "reason": reason})

    def accepted(self, server_round: int, replies: Iterable[Message], key: str, expected_agents,
                 check) -> tuple[np.ndarray, np.ndarray]:
        """The checked replies, ordered by agent id: (agents (a,), arrays (a, *point_shape))."""
        want = set(int(j) for j in expected_agents)
        got = {}
        shape = self.manifold.point_shape
        for msg in replies:
            node = int(msg.metadata.src_node_id)
            agent = self.agent_of.get(node)
            if agent is None or agent not in want:
                self.refuse(server_round, node, agent, "not a participant of this round")
                continue
            if msg.has_error():
                self.refuse(server_round, node, agent, f"the client failed: {msg.error.reason}")
                continue
            record = msg.content.array_records.get("arrays") if msg.has_content() else None
            if record is None or key not in record:
                self.refuse(server_round, node, agent, f"no array {key!r} in the reply")
                continue
            try:
                value = np.asarray(record[key].numpy(), dtype=float)
            except (TypeError, ValueError) as exc:
                self.refuse(server_round, node, agent, f"array {key!r} unreadable ({exc})")
                continue
            if value.shape != shape:
                self.refuse(server_round, node, agent,
                            f"array {key!r} has shape {value.shape}, expected {shape}")
                continue
            if not np.all(np.isfinite(value)):
                self.refuse(server_round, node, agent, f"array {key!r} has NaN or infinite entries")
                continue
            why = check(value)
            if why:
                self.refuse(server_round, node, agent, f"array {key!r} {why}")
                continue
            if agent in got:
                self.refuse(server_round, node, agent, "a second reply for the same agent")
                continue
            got[agent] = value
        for j in sorted(want - set(got)):
            if not any(r["agent"] == j and r["round"] == server_round for r in self.refusals):
                self.refuse(server_round, self.nodes[j], j, "no reply")
        agents = np.array(sorted(got), dtype=int)
        values = np.stack([got[j] for j in agents]) if agents.size else np.empty((0, *shape))
        return agents, values

    def on_manifold(self, x: np.ndarray) -> str | None:
        d = float(self.manifold.distance_from_manifold(x[None])[0])
        return None if d <= TOLERANCE else f"is off the manifold (distance {d:.3g} > {TOLERANCE:g})"

    def tangent_at(self, x_t: np.ndarray):
        def check(u):
            base = x_t[None]
            gap = float(np.linalg.norm(u - self.manifold.projection(base, u[None])[0]))
            scale = 1.0 + float(np.linalg.norm(u))
            return None if gap <= TOLERANCE * scale else (
                f"is not in the tangent space at x_t (off by {gap:.3g})")
        return check

    def weights(self, agents: np.ndarray) -> np.ndarray:
        return self.sampler.weights(self.local_sizes, agents)

    # ---- Strategy -----------------------------------------------------------------
    def summary(self) -> None:
        log(logging.INFO, "rfl %s on Flower: %d agents, K=%d, B=%d, participation=%s", self.name,
            len(self.nodes), self.algorithm.K, self.algorithm.batch_size,
            self.algorithm.participation)

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                        grid: Grid) -> Iterable[Message]:
        """Round t = server_round - 1 from x_t = arrays["x"]: messages to the participants."""
        if self.sampler is None:
            raise RuntimeError("the strategy has no sampler: drive it with rfl.flower.server "
                               "(FlowerRounds / server_main), or set strategy.sampler to the run's "
                               "AgentSampler before the first round")
        t = server_round - 1
        x_t = np.asarray(arrays["x"].numpy(), dtype=float)
        agents = self.sampler.participants()
        cfg = self._round_config(t)
        payload = {"x": x_t, **self.extra_payload(server_round, x_t, agents, grid)}
        self._pending = (x_t, agents)
        content = RecordDict({"arrays": to_record(**payload), "config": cfg})
        return self._messages(agents, content, MessageType.TRAIN)

    def extra_payload(self, server_round, x_t, agents, grid) -> dict:
        return {}

    def aggregate_train(self, server_round: int, replies: Iterable[Message]):
        x_t, agents = self._pending
        key = REPLY_KEY[self.name]
        check = self.tangent_at(x_t) if key == "zeta" else self.on_manifold
        ok, values = self.accepted(server_round, replies, key, agents, check)
        self.last_counts = self.counts(agents)
        if ok.size == 0:
            log(logging.WARNING, "round %s: no valid reply; x stays at x_t", server_round)
            return to_record(x=x_t), MetricRecord({"accepted": 0, "refused": int(agents.size)})
        x_next = self.aggregate(x_t, values, self.weights(ok))
        return to_record(x=x_next), MetricRecord({"accepted": int(ok.size),
                                                  "refused": int(agents.size - ok.size)})

    def counts(self, agents) -> tuple[int, int]:
        """(sample gradients, floats) of the round, as the in-process strategy counts them."""
        return self.algorithm.local_work(agents), self.algorithm.floats_per_round(agents.shape[0])

    def configure_evaluate(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                           grid: Grid) -> Iterable[Message]:
        """Every agent evaluates its local cost f_j at arrays["x"]."""
        content = RecordDict({"arrays": ArrayRecord({"x": arrays["x"]}),
                              "config": self._config()})
        return self._messages(sorted(self.nodes), content, MessageType.EVALUATE)

    def aggregate_evaluate(self, server_round: int, replies: Iterable[Message]) -> MetricRecord | None:
        """F(x) = sum_j p_j f_j(x), p_j = N_j / sum N (every agent's reply needed)."""
        costs = {}
        for msg in replies:
            agent = self.agent_of.get(int(msg.metadata.src_node_id))
            if agent is None or msg.has_error():
                continue
            c = float(msg.content.metric_records["metrics"]["cost"])
            if np.isfinite(c):
                costs[agent] = c
        if len(costs) != len(self.nodes):
            return None
        agents = np.array(sorted(costs))
        w = self.local_sizes[agents] / self.local_sizes[agents].sum()
        return MetricRecord({"cost": float(weighted_mean(w, np.array([costs[j] for j in agents])))})


class RFedAGSStrategy(RiemannianStrategy):
    """RFedAGS (Algorithm 1): x_{t+1} = R_{x_t}(sum_j p_j zeta^j), line 13."""

    name = "rfedags"

    def aggregate(self, x_t, zeta, w):
        return retract_weighted_stream(self.manifold, x_t, zeta, w)


class RFedAvgStrategy(RiemannianStrategy):
    """RFedAvg: x_{t+1} = Exp_{x_t}(sum_j p_j Exp_{x_t}^{-1}(x^j_{t,K})), paper (3.3)."""

    name = "rfedavg"

    def aggregate(self, x_t, points, w):
        return tangent_mean(self.manifold, x_t, points, w)


class RFedSVRGStrategy(RFedAvgStrategy):
    """RFedSVRG: a first exchange for grad f(x_t) = sum_j p_j grad f_j(x_t), then the
    variance-reduced local steps and the tangent mean (Li & Ma, Algorithm 1)."""

    name = "rfedsvrg"

    def __init__(self, algorithm, *args, **kwargs):
        super().__init__(algorithm, *args, **kwargs)
        # the in-process strategy's choice (its ``correction`` option where it has one)
        self.correction = str(getattr(algorithm, "correction", "participants"))
        if self.correction not in ("participants", "all_agents"):
            raise ValueError(f"RFedSVRG correction = {self.correction!r}; allowed: participants, all_agents")

    def extra_payload(self, server_round, x_t, agents, grid):
        ref = np.arange(len(self.nodes)) if self.correction == "all_agents" else agents
        content = RecordDict({"arrays": to_record(x=x_t),
                              "config": self._config(phase="full-gradient")})
        replies = grid.send_and_receive(self._messages(ref, content, MessageType.QUERY),
                                        timeout=self.timeout)
        ok, g = self.accepted(server_round, replies, "g", ref, self.tangent_at(x_t))
        if ok.size == 0:
            raise RuntimeError(f"round {server_round}: no valid grad f_j(x_t) reply")
        self._reference = ok
        return {"g_ref": weighted_mean(self.weights(ok), g)}

    def counts(self, agents):
        """The local steps plus N_j sample gradients per reference agent for grad f_j(x_t)."""
        _, floats = super().counts(agents)
        return self.algorithm.local_work(agents) + int(self.local_sizes[self._reference].sum()), floats


STRATEGIES = {cls.name: cls for cls in (RFedAGSStrategy, RFedAvgStrategy, RFedSVRGStrategy)}
