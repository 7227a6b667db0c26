"""The Flower strategies under faulty clients, through their hooks (no network, no engine).

Each round, every participant's reply is drawn from a seeded mix of faults: none, no reply,
a late reply (delivered in a later round), NaN or infinite entries, the wrong shape, off the
manifold (off T_{x_t}M for RFedAGS's zeta), a wrong round number, no round number, no
array, an error reply, the SuperLink's "Node Unavailable" reply in the node's place, a NaN
reply followed by a good one; and the round's replies carry
extra ones: a second (different) reply of an agent already counted, a reply of an agent not
drawn this round, a reply of a node of no agent. ``configure_train`` / ``aggregate_train``
run every round on these replies, in a shuffled arrival order, and

(a) every round completes, with the participants, accepted and dropped counts of the round;
(b) the iterates equal the plain per-agent reference loop (``rfl.testing.reference_loops``)
    run with the same draws and with the dropped agents absent from the round they were
    dropped in, weighted by the participation scheme written out here (N_j / sum of the
    present agents' N for ``uniform`` and ``full``; 1 / (S rho) for ``bernoulli``; zero in a
    Bernoulli round nobody joined); a round with every reply dropped keeps x_t (the loop's
    empty sum of updates, R_{x_t}(0) = x_t);
(c) the replies dropped are exactly the faulty ones, each with one log line naming its
    round, agent and reason.

The valid replies are what the client computes (``rfl.flower.local.Agent`` and the
ClientApp's ``_reply``, which echoes the round).

Tolerance of (b): 1e-12 times the iterates' scale, the strategy contract's bound between a
vectorised strategy and its reference loop (``rfl.testing.strategy``), fixed before these
runs. The two compute the same sums and maps in another order (single-point pymanopt maps and
a Python sum against the batched maps and a BLAS matrix-vector product): a few ulps per
operation of O(1) values, except the sphere's Log_{x_t}(x) of nearly equal points
(arccos-based), which loses digits in proportion to 1 / |Log_{x_t}(x)|, so RFedAvg and
RFedSVRG differ by more than RFedAGS; the runs contract towards the minimiser at step size
0.5, which keeps the differences from growing over the rounds. A wrong weight, an accepted
bad reply or a dropped good one moves the iterates by orders of magnitude more.
"""

from __future__ import annotations

import logging
import re
from collections import Counter

import numpy as np
import pytest

pytest.importorskip("flwr", reason="Flower is not installed (pip install -e \".[flower]\")")

from flwr.app import ConfigRecord, Error, Message, MessageType, Metadata, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID

from rfl import runner
from rfl.algorithms.sampling import AgentSampler
from rfl.algorithms.stepsize import Fixed
from rfl.flower.client import _reply
from rfl.flower.local import REPLY_KEY, Agent
from rfl.flower.server import with_dropped
from rfl.flower.strategies import STRATEGIES, to_record
from rfl.random import stream
from rfl.testing.reference_loops import REFERENCE_LOOPS

S, N, D = 6, 20, 8
DATASET = {"name": "cpesph", "problem": "cpesph", "seed": 11, "instance": "faults",
           "params": {"d": D, "nu": 0.1, "S": S, "N": N}}
GEOMETRY = {"retraction": "normalize", "transport": "parallel"}
ALPHA, K, B = 0.5, 2, 5
RHO = 0.6
CASES = {   # name: (algorithm, participation, rounds)
    "rfedags_uniform": ("rfedags", 4, 260),
    "rfedavg_bernoulli": ("rfedavg", {"scheme": "bernoulli", "rho": RHO}, 300),
    "rfedsvrg_full": ("rfedsvrg", None, 200),
}
NODE0 = 100                     # agent j is node NODE0 + j
STRANGER_NODE = 999             # a node of no agent of the run

#: a participant's own reply: its fault, and the reason the server must give (None: counted)
FAULTS = {
    "ok": None, "missing": "no reply", "late": "no reply",
    "nan": "has NaN or infinite entries", "inf": "has NaN or infinite entries",
    "shape": "has shape", "off": None,           # off: set per algorithm below
    "wrong_round": "says round", "no_round": "no round number", "no_array": "no array",
    "error": "the client failed", "unavailable": "the SuperLink answered for the node",
    "bad_then_good": "has NaN or infinite entries",
}
OFF_REASON = {"zeta": "is not in the tangent space at x_t", "x": "is off the manifold"}
KIND_P = {"ok": 0.36, "missing": 0.06, "late": 0.06, "nan": 0.06, "inf": 0.05, "shape": 0.06,
          "off": 0.07, "wrong_round": 0.05, "no_round": 0.04, "no_array": 0.04, "error": 0.03,
          "unavailable": 0.02, "bad_then_good": 0.10}
DROPPED = {k for k in FAULTS if k not in ("ok", "bad_then_good")}   # absent from the round
EXTRA_REASON = {"duplicate": "a second reply of agent", "stranger": "not a participant",
                "stale": "not to round", "unknown": "serves no agent"}
LINE = re.compile(r"round (\d+): dropped the (\S+) reply of node (\d+)(?: \(agent (\d+)\))?: (.*); "
                  r"the round proceeds with the others$")


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    npz = tmp_path_factory.mktemp("faults") / "cpesph.npz"
    runner.generate_data(DATASET, npz)
    return runner.load_problem(DATASET, npz, GEOMETRY)


def spec_of(case):
    algorithm, participation, rounds = CASES[case]
    return {"experiment": "flower_faults", "run_id": case, "seed": 3, "rounds": rounds,
            "dataset": DATASET, "geometry": GEOMETRY, "step": {"rule": "fixed", "alpha": ALPHA},
            "algorithm": {"name": algorithm, "K": K, "batch_size": B, "participation": participation}}


class ClientReplies:
    """The replies of correct clients (rfl.flower.local.Agent + the ClientApp's _reply) and
    their corruptions; also the grid of RFedSVRG's first exchange (every gradient valid)."""

    def __init__(self, problem):
        self.agents = {j: Agent(problem, j, j) for j in range(S)}
        self.m = problem.manifold

    def node_agent(self, msg):
        return self.agents[msg.metadata.dst_node_id - NODE0]

    def send_and_receive(self, messages, timeout=None):      # the grid of the query exchange
        out = []
        for msg in messages:
            agent = self.node_agent(msg)
            x = np.asarray(msg.content["arrays"]["x"].numpy(), dtype=float)
            out.append(_reply(msg, agent, {"g": agent.full_gradient(x)}))
        return out

    def train(self, msg):
        agent = self.node_agent(msg)
        cfg = msg.content["config"]
        arrays = msg.content["arrays"]
        g_ref = np.asarray(arrays["g_ref"].numpy(), dtype=float) if "g_ref" in arrays else None
        value = agent.train(np.asarray(arrays["x"].numpy(), dtype=float), cfg, g_ref)
        return agent, value

    def reply(self, msg, kind, rng, key, x_t):
        """The reply of the node of ``msg`` with fault ``kind``."""
        agent, value = self.train(msg)
        if kind == "error":
            return Message(Error(code=0, reason="the ClientApp raised"), reply_to=msg)
        if kind == "unavailable":     # the SuperLink's reply for a node without heartbeats
            m = msg.metadata
            meta = Metadata(run_id=m.run_id, message_id="", src_node_id=SUPERLINK_NODE_ID,
                            dst_node_id=SUPERLINK_NODE_ID, reply_to_message_id=m.message_id,
                            group_id=m.group_id, created_at=m.created_at, ttl=m.ttl,
                            message_type=m.message_type)
            return Message(error=Error(code=5, reason="Error: Node Unavailable"), metadata=meta)
        if kind == "nan" or kind == "inf":
            value = value.copy()
            value.flat[rng.integers(value.size)] = np.nan if kind == "nan" else -np.inf
        elif kind == "shape":
            value = value.ravel()[:-1].copy() if rng.random() < 0.5 else np.stack([value, value])
        elif kind == "off":
            value = value + 0.1 * x_t if key == "zeta" else 1.5 * value
        elif kind == "no_array":
            return _reply(msg, agent, {"y": value})
        out = _reply(msg, agent, {key: value})
        if kind == "wrong_round":
            metrics = out.content.metric_records["metrics"]
            metrics["round"] = int(metrics["round"]) + int(rng.choice([-1, 1, 7]))
        elif kind == "no_round":
            del out.content.metric_records["metrics"]["round"]
        return out

    def other_valid(self, msg, rng, key, x_t):
        """A reply of the node of ``msg`` with another valid array (a point of the sphere,
        or a vector of T_{x_t}M), for a duplicate or a stranger."""
        agent = self.node_agent(msg)
        noise = 0.05 * rng.standard_normal(x_t.shape)
        if key == "zeta":
            value = self.m.projection(x_t[None], noise[None])[0]
        else:
            value = (x_t + noise) / np.linalg.norm(x_t + noise)
        return _reply(msg, agent, {key: value})


def instruction(strategy, node, server_round, x_t, cfg):
    """The training message the server would have sent to ``node`` (to forge replies of
    nodes it did not ask)."""
    content = RecordDict({"arrays": to_record(x=x_t), "config": cfg})
    return Message(content=content, dst_node_id=int(node), message_type=MessageType.TRAIN,
                   group_id=str(server_round))


def drive(problem, case, seed=0):
    """Run the case's rounds through the strategy's hooks with faulty replies: (the iterates
    x_1..x_T, the strategy, what each round must log [(round, agent or None, reason)],
    the dropped agents per round, the number of faulty replies)."""
    spec = spec_of(case)
    alg = runner.make_algorithm(spec, problem)
    name = spec["algorithm"]["name"]
    key = REPLY_KEY[name]
    clients = ClientReplies(problem)
    strategy = STRATEGIES[name](alg, {j: NODE0 + j for j in range(S)}, problem.local_sizes,
                                {"problem": "cpesph"})
    strategy.sampler = AgentSampler(stream(spec["seed"], "sampling", "faults", case),
                                    problem.local_sizes, B, alg.participation)
    rng = np.random.default_rng(seed)
    kinds = list(KIND_P)
    p = np.array([KIND_P[k] for k in kinds])
    x = problem.initial_point(stream(spec["seed"], "init", "cpesph"))
    arrays = to_record(x=x)
    xs, expected, absent, late, faulty = [], [], [], {}, 0
    for t in range(spec["rounds"]):
        r = t + 1
        messages = list(strategy.configure_train(r, arrays, ConfigRecord(), clients))
        for msg in messages:                  # the id a grid gives a message it pushes
            msg.metadata.__dict__["_message_id"] = f"train-{r}-{msg.metadata.dst_node_id}"
        x_t = x
        primary, secondary, gone = [], [], set()
        participants = sorted(m.metadata.dst_node_id - NODE0 for m in messages)
        for msg in messages:
            j = msg.metadata.dst_node_id - NODE0
            kind = kinds[rng.choice(len(kinds), p=p)]
            reason = OFF_REASON[key] if kind == "off" else FAULTS[kind]
            if kind in DROPPED:
                gone.add(j)
            if reason is not None:
                expected.append((r, j, reason))
                faulty += 1
            if kind == "missing":
                continue
            if kind == "late":            # arrives 1..3 rounds later, answering round r
                late.setdefault(r + int(rng.integers(1, 4)), []).append((j, clients.reply(msg, "ok", rng, key, x_t)))
                continue
            if kind == "bad_then_good":
                primary.append(clients.reply(msg, "nan", rng, key, x_t))
                secondary.append((len(primary) - 1, clients.reply(msg, "ok", rng, key, x_t)))
                continue
            primary.append(clients.reply(msg, kind, rng, key, x_t))
            if kind == "ok" and rng.random() < 0.3:          # a second, different reply
                secondary.append((len(primary) - 1, clients.other_valid(msg, rng, key, x_t)))
                expected.append((r, j, EXTRA_REASON["duplicate"]))
                faulty += 1
        cfg = messages[0].content["config"] if messages else ConfigRecord({"round": r})
        for j, reply in late.pop(r, []):
            primary.append(reply)
            expected.append((r, j, EXTRA_REASON["stale"]))
            faulty += 1
        others = [j for j in range(S) if j not in participants]
        if others and rng.random() < 0.5:
            j = int(rng.choice(others))
            primary.append(clients.other_valid(instruction(strategy, NODE0 + j, r, x_t, cfg), rng, key, x_t))
            expected.append((r, j, EXTRA_REASON["stranger"]))
            faulty += 1
        if rng.random() < 0.3:
            msg = instruction(strategy, STRANGER_NODE, r, x_t, cfg)
            primary.append(_reply(msg, clients.agents[0], {key: x_t}))
            expected.append((r, None, EXTRA_REASON["unknown"]))
            faulty += 1
        order = list(rng.permutation(len(primary)))
        replies = [primary[i] for i in order]
        for first, reply in secondary:       # after its agent's first reply, anywhere later
            at = order.index(first) + 1
            pos = int(rng.integers(at, len(replies) + 1))
            replies.insert(pos, reply)
            order.insert(pos, -1)
        arrays, metrics = strategy.aggregate_train(r, replies)
        assert (metrics["participants"], metrics["dropped"]) == (len(participants), len(gone)), f"round {r}"
        assert metrics["accepted"] == len(participants) - len(gone)
        x = np.asarray(arrays["x"].numpy(), dtype=float)
        xs.append(x)
        absent.append(gone)
    return np.stack(xs), strategy, expected, absent, faulty


class Absent:
    """The run's draws (participants from the scheme, mini-batches by counter) with the agents
    ``absent[t]`` removed from round t, and the scheme's weights written out: N_j / sum of the
    present N (uniform, full), 1 / (S rho) (bernoulli), 0 in a round nobody joined."""

    def __init__(self, sampler, absent, participation):
        self.inner, self.absent, self.participation = sampler, absent, participation
        self.key, self.draw = sampler.key, 0
        self.local_sizes, self.batch_size = sampler.local_sizes, sampler.batch_size
        self.t = 0

    def participants(self):
        drawn = self.inner.participants()
        self.empty = isinstance(self.participation, dict) and getattr(self.inner.scheme, "_empty", False)
        present = np.array([j for j in drawn if j not in self.absent[self.t]], dtype=int)
        self.t += 1
        return present

    def weights(self, local_sizes, agents):
        if isinstance(self.participation, dict):                    # bernoulli, rho
            return np.array([0.0 if self.empty else 1.0 / (S * RHO) for _ in agents])
        n = np.array([float(local_sizes[j]) for j in agents])
        return n / n.sum() if len(agents) else n


def oracle(problem, case, absent):
    spec = spec_of(case)
    algorithm, participation, rounds = CASES[case]
    sampler = AgentSampler(stream(spec["seed"], "sampling", "faults", case), problem.local_sizes,
                           B, participation)
    x0 = problem.initial_point(stream(spec["seed"], "init", "cpesph"))
    xs = REFERENCE_LOOPS[algorithm](problem, x0, Fixed(ALPHA), K, rounds,
                                    Absent(sampler, absent, participation))
    return np.stack(xs[1:])


class Lines(logging.Handler):
    """The messages of the flwr logger's records, in order."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.fixture(scope="module")
def runs(problem, task_identity):
    """Each case driven once: {case: (iterates, strategy, expected, absent, faulty, log)}."""
    out = {}
    logger = logging.getLogger("flwr")
    for case in CASES:
        lines = Lines()
        logger.addHandler(lines)
        try:
            out[case] = (*drive(problem, case), lines.messages)
        finally:
            logger.removeHandler(lines)
    return out


REASONS = sorted({v for v in FAULTS.values() if v} | set(OFF_REASON.values())
                 | set(EXTRA_REASON.values()))


def reason_kind(why: str) -> str:
    """The one entry of REASONS that the reason ``why`` contains."""
    (kind,) = [k for k in REASONS if k in why]
    return kind


@pytest.mark.parametrize("case", list(CASES))
def test_every_round_completes_with_its_counts(runs, case):
    xs, strategy, _, absent, _, _ = runs[case]
    rounds = CASES[case][2]
    assert xs.shape == (rounds, D + 1) and np.all(np.isfinite(xs))     # x in S^d, R^(d+1)
    assert [r["round"] for r in strategy.rounds] == list(range(1, rounds + 1))
    assert [r["dropped"] for r in strategy.rounds] == [len(a) for a in absent]
    assert all(r["accepted"] == r["participants"] - r["dropped"] for r in strategy.rounds)
    # the run table's column: 0 for round 0, then each round's dropped participants
    assert list(with_dropped(strategy.rounds, rounds + 1)) == [0] + [len(a) for a in absent]
    assert list(with_dropped(strategy.rounds, 3)) == [0] + [len(a) for a in absent[:2]]


@pytest.mark.parametrize("case", list(CASES))
def test_iterates_equal_the_simulator_with_the_dropped_agents_absent(runs, problem, case):
    xs, _, _, absent, _, _ = runs[case]
    want = oracle(problem, case, absent)
    scale = max(1.0, float(np.abs(want).max()))
    for t in range(len(want)):
        np.testing.assert_allclose(xs[t], want[t], rtol=0, atol=1e-12 * scale,
                                   err_msg=f"{case}: round {t + 1}")
    assert np.abs(xs[-1] - xs[0]).max() > 1e-3                 # the run moves


@pytest.mark.parametrize("case", list(CASES))
def test_the_dropped_replies_are_the_faulty_ones_one_log_line_each(runs, case):
    _, strategy, expected, _, faulty, messages = runs[case]
    lines = [LINE.match(m) for m in messages if "dropped the" in m]
    assert lines and all(lines), [m for m in messages if "dropped the" in m and not LINE.match(m)][:3]
    logged = [(int(m[1]), None if m[4] is None else int(m[4]), m[5]) for m in lines]
    assert [(d["round"], d["agent"], d["reason"]) for d in strategy.refusals] == logged
    assert all(m[2] == "train" for m in lines)
    # the node named is the agent's (the forged node: its own id, no agent)
    assert all(int(m[3]) == (STRANGER_NODE if m[4] is None else NODE0 + int(m[4])) for m in lines)
    assert len(logged) == len(expected) == faulty
    assert (Counter((r, j, reason_kind(why)) for r, j, why in logged)
            == Counter((r, j, reason_kind(why)) for r, j, why in expected))
    # a round with every reply dropped says so, and keeps x_t
    for r in strategy.rounds:
        if r["accepted"] == 0:
            assert f"round {r['round']}: no valid reply; x_{{t+1}} = x_t" in messages


def test_more_than_a_thousand_faulty_replies_of_every_kind(runs):
    total = Counter()
    for case in CASES:
        _, strategy, expected, _, faulty, _ = runs[case]
        assert faulty == len(expected) == len(strategy.refusals)
        total.update(reason_kind(why) for _, _, why in expected)
    assert sum(total.values()) >= 1000, total
    assert set(total) == set(REASONS)                          # every kind occurred
    # rounds with every reply dropped occurred, and rounds with all replies counted
    counts = [r for case in CASES for r in runs[case][1].rounds]
    assert any(r["accepted"] == 0 for r in counts) and any(r["dropped"] == 0 for r in counts)


# ---- unequal local sizes: the weights over the accepted agents ----------------------
SIZES = np.array([3, 5, 7, 11, 13, 17])


def tangent(m, x, rng):
    return m.projection(x[None], rng.standard_normal(x.shape)[None])[0]


def strategy_with_sizes(problem, name, correction=None):
    spec = spec_of({"rfedags": "rfedags_uniform", "rfedavg": "rfedavg_bernoulli",
                    "rfedsvrg": "rfedsvrg_full"}[name])
    spec["algorithm"]["participation"] = None
    if correction:
        spec["algorithm"]["correction"] = correction
    alg = runner.make_algorithm(spec, problem)
    strategy = STRATEGIES[name](alg, {j: NODE0 + j for j in range(S)}, SIZES, {"problem": "cpesph"})
    strategy.sampler = AgentSampler(np.random.default_rng(5), SIZES, 1, None)
    return strategy


def test_unequal_sizes_are_renormalised_over_the_accepted_agents(problem, task_identity):
    """N = (3, 5, 7, 11, 13, 17), every agent drawn, agent 1 sends a NaN and agent 4 nothing:
    x_1 = R_{x_0}(sum_{j in {0, 2, 3, 5}} N_j zeta^j / 38) (the sphere's retraction: the
    normalised sum). One round of O(1) values: a few ulps apart at most."""
    m = problem.manifold
    strategy = strategy_with_sizes(problem, "rfedags")
    rng = np.random.default_rng(8)
    x0 = problem.initial_point(rng)
    messages = list(strategy.configure_train(1, to_record(x=x0), ConfigRecord(), None))
    zeta = {j: 0.3 * tangent(m, x0, rng) for j in range(S)}
    replies = []
    for msg in messages:
        j = msg.metadata.dst_node_id - NODE0
        if j == 4:
            continue
        value = zeta[j].copy()
        if j == 1:
            value[2] = np.nan
        replies.append(_reply(msg, Agent(problem, j, j), {"zeta": value}))
    arrays, metrics = strategy.aggregate_train(1, replies[::-1])
    kept = [0, 2, 3, 5]
    step = sum(SIZES[j] * zeta[j] for j in kept) / sum(SIZES[j] for j in kept)
    want = (x0 + step) / np.linalg.norm(x0 + step)
    np.testing.assert_allclose(arrays["x"].numpy(), want, rtol=0, atol=1e-14)
    assert (metrics["participants"], metrics["accepted"], metrics["dropped"]) == (6, 4, 2)
    assert [(r["agent"], r["reason"]) for r in strategy.refusals] == [
        (1, "array 'zeta' has NaN or infinite entries"), (4, "no reply")]


class Gradients:
    """The grid of RFedSVRG's first exchange: agent j replies g_j (agent 2: a NaN)."""

    def __init__(self, problem, g):
        self.problem, self.g, self.asked = problem, g, []

    def send_and_receive(self, messages, timeout=None):
        out = []
        for msg in messages:
            j = msg.metadata.dst_node_id - NODE0
            self.asked.append(j)
            value = self.g[j].copy()
            if j == 2:
                value[0] = np.nan
            out.append(_reply(msg, Agent(self.problem, j, j), {"g": value}))
        return out


@pytest.mark.parametrize("correction", ["all_agents", "participants"])
def test_a_dropped_gradient_of_rfedsvrg(problem, task_identity, correction):
    """Agent 2's grad f_2(x_t) is a NaN: it is dropped (phase full-gradient), grad f(x_t) is
    sum_{j != 2} N_j g_j / sum_{j != 2} N_j (the all-agents gradient renormalised, or the
    participants' mean with the scheme's N-proportional weights: the same here, every agent
    drawn), and with correction "participants" agent 2 gets no training message and counts
    as dropped in the round."""
    m = problem.manifold
    strategy = strategy_with_sizes(problem, "rfedsvrg", correction)
    rng = np.random.default_rng(9)
    x0 = problem.initial_point(rng)
    g = {j: tangent(m, x0, rng) for j in range(S)}
    grid = Gradients(problem, g)
    messages = list(strategy.configure_train(1, to_record(x=x0), ConfigRecord(), grid))
    assert sorted(grid.asked) == list(range(S))
    trained = sorted(msg.metadata.dst_node_id - NODE0 for msg in messages)
    assert trained == ([0, 1, 3, 4, 5] if correction == "participants" else list(range(S)))
    kept = [0, 1, 3, 4, 5]
    want = sum(SIZES[j] * g[j] for j in kept) / sum(SIZES[j] for j in kept)
    for msg in messages:
        np.testing.assert_allclose(msg.content["arrays"]["g_ref"].numpy(), want, rtol=0, atol=1e-15)
    assert [(r["phase"], r["agent"], r["reason"]) for r in strategy.refusals] == [
        ("full-gradient", 2, "array 'g' has NaN or infinite entries")]
    replies = [_reply(msg, Agent(problem, msg.metadata.dst_node_id - NODE0, 0), {"x": x0})
               for msg in messages]
    _, metrics = strategy.aggregate_train(1, replies)
    dropped = 1 if correction == "participants" else 0
    assert (metrics["participants"], metrics["dropped"]) == (6, dropped)
