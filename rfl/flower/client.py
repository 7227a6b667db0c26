"""The ClientApp: one agent of any registered rfl problem.

A node serves agent j = node_config["agent"] (deployment: ``flower-supernode --node-config
"agent=3 data-file='/data/agent3.npz'"``), or node_config["partition-id"] under the
simulation engine. Its data are the arrays of node_config["data-file"] (default: the file
the server names in its messages, i.e. the workflow's results/data/<dataset>/<instance>.npz),
loaded with the problem class the server names (``rfl.registry.PROBLEMS``, so a plug-in
problem works once installed on the node); a file holding a single agent is that agent's
own data. Every message carries the problem's name, params, geometry and default data file,
so a fresh ClientApp process can serve any message of the run.

Messages (content "arrays" ArrayRecord, "config" ConfigRecord):
* query phase "hello" -> metrics {agent, num-examples};
* query phase "full-gradient" -> arrays {g: grad f_j(x)}, metrics {agent, num-examples,
  round} (RFedSVRG's first exchange);
* train -> arrays {zeta} (RFedAGS) or {x} (RFedAvg, RFedSVRG), metrics {agent, num-examples,
  round}; ``round``, the server round the message names, lets the server drop a reply
  to an earlier round;
* evaluate -> metrics {agent, num-examples, cost: f_j(x)}.

``faults`` ({experiment: {agent: "nan" | "shape" | "off-manifold"}}) makes those agents
corrupt their replies in the runs of that experiment: the server's refusal of bad input is
tested with it.
"""

from __future__ import annotations

import numpy as np
from flwr.app import Array, ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from rfl.flower.local import REPLY_KEY, Agent

FAULTS = ("nan", "shape", "off-manifold")


def agent_of(msg: Message, context: Context) -> Agent:
    cfg = msg.content["config"]
    nc = context.node_config
    if "agent" in nc:
        agent = int(nc["agent"])
    elif "partition-id" in nc:
        agent = int(nc["partition-id"])
    else:
        raise ValueError("this SuperNode does not say which agent it serves: start it with "
                         "--node-config \"agent=<j> data-file='<path.npz>'\"")
    data_file = str(nc.get("data-file", cfg["data-file"]))
    return Agent.from_file(str(cfg["problem"]), str(cfg["params"]), str(cfg["geometry"]),
                           data_file, agent)


def _reply(msg: Message, agent: Agent, arrays: dict | None = None, **metrics) -> Message:
    cfg = msg.content["config"]
    if "round" in cfg:                               # the round this reply answers
        metrics["round"] = int(cfg["round"])
    content = {"metrics": MetricRecord({"agent": agent.agent, "num-examples": agent.n_local, **metrics})}
    if arrays:
        content["arrays"] = ArrayRecord({k: Array(np.ascontiguousarray(v)) for k, v in arrays.items()})
    return Message(content=RecordDict(content), reply_to=msg)


def _corrupt(value: np.ndarray, fault: str, manifold) -> np.ndarray:
    if fault == "nan":
        out = value.copy()
        out.flat[0] = np.nan
        return out
    if fault == "shape":
        return value.ravel()[:-1].copy()
    if fault == "off-manifold":
        return 2.0 * value + 1.0
    raise ValueError(f"fault {fault!r}; allowed: {', '.join(FAULTS)}")


def make_client_app(faults: dict | None = None) -> ClientApp:
    """The ClientApp (``faults``: see the module docstring; None for a correct client)."""
    faults = {str(e): {int(j): v for j, v in per.items()} for e, per in (faults or {}).items()}
    for per in faults.values():
        for v in per.values():
            if v not in FAULTS:
                raise ValueError(f"fault {v!r}; allowed: {', '.join(FAULTS)}")
    app = ClientApp()

    def fault(msg, agent):
        return faults.get(str(msg.content["config"].get("experiment", "")), {}).get(agent.agent)

    def _x(msg):
        return np.asarray(msg.content["arrays"]["x"].numpy(), dtype=float)

    @app.query()
    def query(msg: Message, context: Context) -> Message:
        agent = agent_of(msg, context)
        phase = str(msg.content["config"]["phase"])
        if phase == "hello":
            return _reply(msg, agent)
        if phase == "full-gradient":
            g = agent.full_gradient(_x(msg))
            if fault(msg, agent):
                g = _corrupt(g, fault(msg, agent), agent.manifold)
            return _reply(msg, agent, {"g": g})
        raise ValueError(f"query phase {phase!r}; allowed: hello, full-gradient")

    @app.train()
    def train(msg: Message, context: Context) -> Message:
        agent = agent_of(msg, context)
        cfg = msg.content["config"]
        arrays = msg.content["arrays"]
        g_ref = np.asarray(arrays["g_ref"].numpy(), dtype=float) if "g_ref" in arrays else None
        value = agent.train(_x(msg), cfg, g_ref)
        if fault(msg, agent):
            value = _corrupt(value, fault(msg, agent), agent.manifold)
        return _reply(msg, agent, {REPLY_KEY[str(cfg["algorithm"])]: value})

    @app.evaluate()
    def evaluate(msg: Message, context: Context) -> Message:
        agent = agent_of(msg, context)
        return _reply(msg, agent, cost=agent.local_cost(_x(msg)))

    return app
