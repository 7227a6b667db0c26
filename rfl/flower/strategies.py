"""RFedAGS, RFedAvg and RFedSVRG as Flower message-API strategies.

A round (``configure_train`` -> replies -> ``aggregate_train``):

1. the server draws the participants with the run's sampler (the simulator's
   ``AgentSampler``; Flower's own node sampling is not reproducible) and sends the draw
   number of the round's first local step (``rfl.flower.sampling.round_draw``: t 2^32);
2. each participant's node gets x_t as ``ArrayRecord({"x": ...})`` and a ConfigRecord
   (algorithm, t, alpha_t, K, B, key, draw), runs its local work (``rfl.flower.local``) and
   replies with zeta^j in T_{x_t}M (RFedAGS) or its last iterate x^j_{t,K} (RFedAvg,
   RFedSVRG), and its N_j as "num-examples";
3. the server checks every reply (``RiemannianStrategy.accepted``) and drops, with one log
   line naming the round, the node, the agent and the reason, a reply that is: from a node
   of no agent of the run; for another round (its message group, or the round number the
   client echoes, is not the current round: a late reply of an earlier round, or a wrong
   round number); from an agent not drawn this round; a second reply of an agent already
   counted this round; an error reply; without the array; of the wrong shape; with a NaN or
   an infinite entry; a point off the manifold or a vector off T_{x_t}M (``TOLERANCE``). A
   participant with no reply at all is logged as "no reply"; the error reply the SuperLink
   sends for a node it lost ("Node Unavailable") is logged as that node's agent's. The accepted replies, ordered
   by agent id, are weighted by the participation scheme's weights over the accepted agents
   (``sampler.weights(N, accepted)``: what the in-process simulator computes for a round
   whose participants are the accepted agents, i.e. with the dropped ones absent) and
   aggregated with rfl's functions (``retract_weighted_stream`` / ``tangent_mean``). A
   round whose every reply is dropped keeps x_{t+1} = x_t (the empty sum of updates is the
   zero vector). ``rounds`` records per round the participants drawn, accepted and dropped
   (the run table's ``dropped`` column), ``refusals`` every dropped reply.

RFedSVRG exchanges two messages per round: ``configure_train`` first asks the reference
agents for grad f_j(x_t) (a "query" message), forms grad f(x_t) = sum_j p_j grad f_j(x_t),
and sends it with the training messages. The agents asked are all S agents
(``correction="all_agents"``, Li & Ma's grad f = sum_i N_i grad f_i / sum N, renormalised
over the accepted gradients) or the round's participants (``correction="participants"``, the
scheme's weights over the accepted ones; a participant whose gradient is dropped is left out
of the round's training), as the in-process RFedSVRG's ``correction`` option says.

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
from rfl.participation.base import proportional_weights

#: how far a returned point may be from the manifold, or a returned vector from T_{x_t}M
#: (relative to its norm), before it is refused: the run table's divergence tolerance
TOLERANCE = 1e-8


def to_record(**arrays) -> ArrayRecord:
    return ArrayRecord({k: Array(np.ascontiguousarray(v, dtype=float)) for k, v in arrays.items()})


class ForNode:
    """An error reply the SuperLink sent for a node (e.g. "Node Unavailable" once the node
    stops its heartbeats): the message as it is, marked as not the node's own."""

    def __init__(self, msg: Message):
        self.msg = msg

    def __getattr__(self, name):
        return getattr(self.msg, name)


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
        self.refusals: list[dict] = []   # every dropped reply: round, phase, node, agent, reason
        self.rounds: list[dict] = []     # per round: participants, accepted, dropped
        self.last_counts = (0, 0)
        self._pending = None
        self._sent: list[Message] = []

    # ---- messages -------------------------------------------------------------------
    def _config(self, **extra) -> ConfigRecord:
        return ConfigRecord({**self.problem_config, "algorithm": self.name, **extra})

    def _messages(self, agents, content: RecordDict, message_type: str,
                  server_round: int | None = None) -> list[Message]:
        """One message per agent; ``server_round`` as the message group (a reply carries it)."""
        group = None if server_round is None else str(int(server_round))
        return [Message(content=content, message_type=message_type, dst_node_id=self.nodes[int(j)],
                        group_id=group) for j in agents]

    def _round_config(self, server_round: int) -> ConfigRecord:
        alg = self.algorithm
        t = server_round - 1
        draw = round_draw(t, alg.K)
        return self._config(round=int(server_round), t=int(t), alpha=float(alg.step_size(t)),
                            K=int(alg.K), B=int(alg.batch_size), key=str(int(self.sampler.key)),
                            draw=int(draw))

    # ---- reply checks ----------------------------------------------------------------
    def refuse(self, server_round: int, node: int, agent, reason: str, phase: str = "train") -> None:
        """Drop one reply: a log line (round, node, agent, reason) and a ``refusals`` record."""
        who = f"node {node}" + (f" (agent {agent})" if agent is not None else "")
        log(logging.WARNING, "round %s: dropped the %s reply of %s: %s; the round proceeds "
            "with the others", server_round, phase, who, reason)
        self.refusals.append({"round": int(server_round), "phase": phase, "node": int(node),
                              "agent": None if agent is None else int(agent), "reason": reason})

    @staticmethod
    def reply_round(msg: Message, server_round: int) -> str | None:
        """Why ``msg`` does not answer round ``server_round`` (None when it does): its message
        group (Flower's, set by ``_messages``) and the round number the client echoes in its
        metrics (absent from an error reply) must both be ``server_round``."""
        group = msg.metadata.group_id
        if group != str(server_round):
            return f"a reply to round {group or '(none)'}, not to round {server_round} (late or stale)"
        if msg.has_error():
            return None
        metrics = msg.content.metric_records.get("metrics") if msg.has_content() else None
        if metrics is None or "round" not in metrics:
            return "no round number in the reply"
        if metrics["round"] != server_round:
            return f"says round {metrics['round']}, not round {server_round}"
        return None

    def accepted(self, server_round: int, replies: Iterable[Message], key: str, expected_agents,
                 check, phase: str = "train", sent=None) -> tuple[np.ndarray, np.ndarray]:
        """The valid replies of the agents ``expected_agents`` to round ``server_round``, one
        per agent (its first valid one), ordered by agent id: (agents (a,), arrays
        (a, *point_shape)); every other reply is dropped (``refuse``), and each expected agent
        of whom no reply to this round's message came (a late one of an earlier round does not
        count) is logged as "no reply"."""
        want = set(int(j) for j in expected_agents)
        got: dict[int, np.ndarray] = {}
        heard: set[int] = set()
        # the agent of each message sent (its id is set when the grid pushes it): the SuperLink
        # answers for a node it lost with an error reply of its own node id
        sent = {m.metadata.message_id: self.agent_of.get(int(m.metadata.dst_node_id))
                for m in (sent or ()) if m.metadata.message_id}
        for msg in replies:
            node = int(msg.metadata.src_node_id)
            agent = self.agent_of.get(node)
            if agent is None and msg.has_error() and msg.metadata.reply_to_message_id in sent:
                agent = sent[msg.metadata.reply_to_message_id]
                node = self.nodes[agent]
                msg = ForNode(msg)
            why, value = self.reply_value(server_round, msg, agent, want, got, key, check)
            if msg.metadata.group_id == str(server_round):     # a reply to this round's message
                heard.add(agent)
            if why is not None:
                self.refuse(server_round, node, agent, why, phase)
            else:
                got[agent] = value
        for j in sorted(want - heard):
            self.refuse(server_round, self.nodes[j], j, "no reply", phase)
        agents = np.array(sorted(got), dtype=int)
        shape = self.manifold.point_shape
        values = np.stack([got[j] for j in agents]) if agents.size else np.empty((0, *shape))
        return agents, values

    def reply_value(self, server_round, msg, agent, want, got, key, check):
        """(why the reply is dropped, None) or (None, its array ``point_shape``)."""
        if agent is None:
            return "a node that serves no agent of this run", None
        why = self.reply_round(msg, server_round)
        if why:
            return why, None
        if agent not in want:
            return "not a participant of this round", None
        if agent in got:
            return f"a second reply of agent {agent} this round (its first is counted)", None
        if msg.has_error():
            who = "the SuperLink answered for the node" if isinstance(msg, ForNode) else "the client failed"
            return f"{who}: {msg.error.reason}", None
        record = msg.content.array_records.get("arrays") if msg.has_content() else None
        if record is None or key not in record:
            return f"no array {key!r} in the reply", None
        try:
            value = np.asarray(record[key].numpy(), dtype=float)
        except (TypeError, ValueError) as exc:
            return f"array {key!r} unreadable ({exc})", None
        shape = self.manifold.point_shape
        if value.shape != shape:
            return f"array {key!r} has shape {value.shape}, expected {shape}", None
        if not np.all(np.isfinite(value)):
            return f"array {key!r} has NaN or infinite entries", None
        why = check(value)
        if why:
            return f"array {key!r} {why}", None
        return None, value

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
        x_t = np.asarray(arrays["x"].numpy(), dtype=float)
        agents = self.sampler.participants()
        cfg = self._round_config(server_round)
        self._sampled = agents
        extra, trained = self.extra_payload(server_round, x_t, agents, grid)
        self._pending = (x_t, trained)
        content = RecordDict({"arrays": to_record(x=x_t, **extra), "config": cfg})
        self._sent = self._messages(trained, content, MessageType.TRAIN, server_round)
        return self._sent

    def extra_payload(self, server_round, x_t, agents, grid) -> tuple[dict, np.ndarray]:
        """Further arrays of the training messages, and the agents that get one."""
        return {}, agents

    def aggregate_train(self, server_round: int, replies: Iterable[Message]):
        """x_{t+1} from the valid replies (see the module docstring): (ArrayRecord {"x"},
        MetricRecord {participants, accepted, dropped})."""
        x_t, trained = self._pending
        sampled = self._sampled
        key = REPLY_KEY[self.name]
        check = self.tangent_at(x_t) if key == "zeta" else self.on_manifold
        ok, values = self.accepted(server_round, replies, key, trained, check, sent=self._sent)
        self.last_counts = self.counts(ok)
        counts = {"participants": int(sampled.size), "accepted": int(ok.size),
                  "dropped": int(sampled.size - ok.size)}
        self.rounds.append({"round": int(server_round), **counts})
        if ok.size == 0:
            log(logging.WARNING, "round %s: no valid reply; x_{t+1} = x_t", server_round)
            return to_record(x=x_t), MetricRecord(counts)
        x_next = self.aggregate(x_t, values, self.weights(ok))
        return to_record(x=x_next), MetricRecord(counts)

    def counts(self, agents) -> tuple[int, int]:
        """(sample gradients, floats) of the round as the in-process strategy counts them for
        a round of the agents ``agents`` (the accepted ones: the dropped count as absent)."""
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
                              "config": self._config(phase="full-gradient", round=int(server_round))})
        queries = self._messages(ref, content, MessageType.QUERY, server_round)
        replies = grid.send_and_receive(queries, timeout=self.timeout)
        ok, g = self.accepted(server_round, replies, "g", ref, self.tangent_at(x_t),
                              phase="full-gradient", sent=queries)
        self._reference = ok
        if ok.size == 0:
            log(logging.WARNING, "round %s: no valid grad f_j(x_t) reply; no training this round",
                server_round)
            return {}, ok
        if self.correction == "all_agents":       # grad f = sum_i N_i grad f_i / sum N
            w = proportional_weights(self.local_sizes, ok)
            trained = agents
        else:                                     # the round's mean: the accepted participants
            w = self.weights(ok)
            trained = ok
        return {"g_ref": weighted_mean(w, g)}, trained

    def counts(self, agents):
        """The local steps plus N_j sample gradients per reference agent for grad f_j(x_t)."""
        _, floats = super().counts(agents)
        return self.algorithm.local_work(agents) + int(self.local_sizes[self._reference].sum()), floats


STRATEGIES = {cls.name: cls for cls in (RFedAGSStrategy, RFedAvgStrategy, RFedSVRGStrategy)}
