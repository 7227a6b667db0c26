"""Parameter sweeps: a list where a config allows one expands into one run per value.

An experiment's ``batch_size`` and each parameter of its ``step`` (alpha, alpha0, beta, dec),
and any option a method's algorithm declares (its ``options``), may be a list; so may a
method's ``participation`` (K and the seeds are lists already). The cross product of the lists
gives the experiment's runs. The swept values of options, batch size and step are a run's
*setting*: ``((name, value), ...)`` in a fixed order (the algorithm's options in declaration
order, then ``batch_size``, then the step's parameters). The setting goes into the run id
(``setting_tag``: ``_server_step0p5_alpha0p003``), the legend label (``setting_label``) and the
run's spec (``spec["sweep"]``, [[name, value], ...]); a config without sweeps has no setting, and its run ids and
specs are those it always had. A swept participation or K needs no setting: the run id and the
method key hold them already.

A run's random draws do not depend on its setting: they are keyed by (seed, experiment) only
(``rfl.algorithms.sampling.Draws``), so the runs of one seed that differ only in swept values
see the same agents and samples (common random numbers), and a run of a sweep is the run of
the same config written without lists, number for number.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re

#: the step parameters that may be swept, in the order a setting lists them
STEP_PARAMS = ("alpha", "alpha0", "beta", "dec")
#: the short name of a swept value in run ids and legend labels (others keep their own)
TOKEN = {"batch_size": "B"}
#: what may be a list (a sweep), for messages
SWEEPABLE = ("K", "participation", "batch_size", "the step's parameters "
             f"({', '.join(STEP_PARAMS)})", "an algorithm's options")


def _accepts_list(schema: dict | None) -> bool:
    """Whether a value under ``schema`` may itself be a list (then a list is a value, and a
    sweep is a list of lists)."""
    if not isinstance(schema, dict):
        return False
    types = schema.get("type")
    types = [types] if isinstance(types, str) else list(types or [])
    return "array" in types


def is_sweep(value, schema: dict | None = None) -> bool:
    """Whether ``value`` (of a key whose single value has JSON schema ``schema``) is a sweep."""
    if not isinstance(value, list):
        return False
    return not _accepts_list(schema) or (bool(value) and all(isinstance(v, list) for v in value))


def number_text(v) -> str:
    """A number in the shortest exact form: an int as is, a float that is an integer below
    1e15 as that integer (1.0 -> "1"), else the shorter of Python's shortest repr and a compact
    exponent form (0.003 -> "3e-3", 0.5 -> "0.5", 1e-05 -> "1e-5"). Two different numbers never
    share a text; an int and the float of equal value do."""
    if isinstance(v, int):
        return str(v)
    v = float(v)
    if not math.isfinite(v):        # refused by the config; named, not raised on, while it checks
        return repr(v)
    if v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    plain = repr(v)
    for p in range(17):
        sci = f"{v:.{p}e}"
        if float(sci) == v:
            break
    mantissa, exponent = sci.split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    compact = f"{mantissa}e{int(exponent)}"
    return compact if len(compact) < len(plain) else plain


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _id_number(v) -> str:
    """A number in a run id: Python's shortest repr (positional where it is, e.g. 0.003; else
    the compact exponent form of ``number_text``), an integer-valued float as that integer,
    with '.' written 'p' and '-' written 'm' (as the participation tags write them)."""
    text = number_text(v)
    if isinstance(v, float) and math.isfinite(v) and "e" in text and "e" not in repr(v):
        text = repr(v)
    return text.replace(".", "p").replace("-", "m").replace("+", "")


def value_text(v) -> str:
    """``v`` as it stands in a run id, in letters, digits and '_' only (a file name and a
    Snakemake path on every system): a number as ``_id_number`` (0.003 -> "0p003", 1e-05 ->
    "1em5", -2 -> "m2"); true, false, null; a list as "H" and a short hash of its values; a
    string with every character but letters, digits and '_' written X<hex> per UTF-8 byte, and
    its first character so written too where it would read as a number or a list (a digit, 'm',
    'H') or the string is "true", "false" or "null". A number, a bool, null, a list and a
    string never share a text, nor do two numbers or two strings."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if _is_number(v):
        return _id_number(v)
    if isinstance(v, (list, tuple)):
        return "H" + hashlib.sha256(json.dumps(v, sort_keys=True, default=str).encode()).hexdigest()[:8]
    text = str(v)
    out = []
    for i, ch in enumerate(text):
        keep = re.fullmatch(r"[A-Za-z0-9_]", ch) and ch != "X"
        if i == 0 and (ch.isdigit() or ch in "mH" or text in ("true", "false", "null")):
            keep = False
        out.append(ch if keep else "".join(f"X{b:02X}" for b in ch.encode("utf-8")))
    return "".join(out) or "X"


def label_text(v) -> str:
    """``v`` in a legend label: a number as ``number_text``, anything else as written."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return number_text(v) if _is_number(v) else str(v)


def token(name: str) -> str:
    return TOKEN.get(name, name)


def setting_tag(setting) -> str:
    """The part of a run id naming a setting: ``_<name><value>`` per swept value ('' for none)."""
    return "".join(f"_{token(k)}{value_text(v)}" for k, v in setting)


def setting_label(setting) -> str:
    """A setting in words for a legend or a report: "server_step=0.5, alpha=3e-3"."""
    return ", ".join(f"{token(k)}={label_text(v)}" for k, v in setting)


def swept(exp: dict, method: dict, options: dict) -> list[tuple[str, list]]:
    """(name, values) of every swept value of ``method`` in ``exp``, in setting order;
    ``options``: the method's algorithm's declared options (name -> JSON schema)."""
    out = [(k, method[k]) for k, sub in options.items() if k in method and is_sweep(method[k], sub)]
    if isinstance(exp.get("batch_size"), list):
        out.append(("batch_size", exp["batch_size"]))
    step = exp.get("step") or {}
    out += [(k, step[k]) for k in STEP_PARAMS if isinstance(step.get(k), list)]
    return out


def settings(exp: dict, method: dict, options: dict, federated: bool = True) -> list[tuple]:
    """Every setting of ``method`` in ``exp``: the cross product of its swept values, in
    order (the last name varies fastest); ``[()]`` when nothing is swept. A centralised
    method takes no batch size or step: only its options are swept."""
    lists = swept(exp, method, options)
    if not federated:
        lists = [(k, v) for k, v in lists if k in options]
    names = [k for k, _ in lists]
    return [tuple(zip(names, combo)) for combo in itertools.product(*(v for _, v in lists))]


def is_swept(exp: dict) -> bool:
    """Whether some run of experiment ``exp`` (of a validated config) has a setting."""
    from rfl.registry import ALGORITHMS

    return any(settings(exp, m, dict(ALGORITHMS[m["algorithm"]].options),
                        ALGORITHMS[m["algorithm"]].federated) != [()] for m in exp["methods"])


def participations(method: dict) -> list:
    """The participation values of ``method``: its list, or its one value."""
    p = method.get("participation")
    return list(p) if isinstance(p, list) else [p]


def apply(setting, algorithm: dict, step: dict | None) -> tuple[dict, dict | None]:
    """(algorithm, step) of a run with the swept values of ``setting`` set in them."""
    algorithm, step = dict(algorithm), (dict(step) if step is not None else None)
    for k, v in setting:
        if k in STEP_PARAMS and step is not None and k in step:
            step[k] = v
        elif k == "batch_size":
            algorithm["batch_size"] = v
        else:
            algorithm[k] = v
    return algorithm, step


def duplicates(values: list) -> list:
    """The values that stand more than once in ``values`` (equal as numbers: 1 and 1.0 are
    one value; true is no number)."""
    seen, out = [], []
    for v in values:
        key = (type(v) is bool, v)
        if key in seen and v not in out:
            out.append(v)
        seen.append(key)
    return out
