"""An experiment's method settings against its source's: its ``source`` declaration (config
schema, ``$defs/source``) compared with what the config runs. Size is ``rfl.size``'s.

A declaration names the source (``ref``), the source's ``settings`` (each a ``value`` and
``at``, the paper section or the script and line it is read from) and, for each setting the
experiment runs otherwise, a ``reason``:

    source:
      ref: PCAStief_Syn_numagentincreas.m
      settings:
        step: {value: {rule: fixed, alpha: 4.0e-2}, at: "PCAStief_Syn_numagentincreas.m:52"}
        retraction: {value: qr, at: "line 11: stiefelfactory's default retraction"}
      reasons: {retraction: "..."}

The settings (what rfl reads from the experiment, ``effective``):

- ``step``: the step rule with its parameters (``{rule: fixed, alpha}`` or ``{rule:
  decaying, alpha0, beta, dec}``), in rfl's cost units;
- ``retraction``, ``transport``: the geometry (the manifold's first name when not set);
- ``time``: the simulated-time model, as ``{round, factor, stragglers: "<n> of <S>"}``
  (``none`` without one);
- ``<algorithm>.participation``: the participation schemes of the experiment's methods of
  that algorithm (``full``, ``uniform``, or the scheme's name), one name or a list;
- ``<algorithm>.<option>``: an option the algorithm declares (its default where a method
  does not set it), one value or a list.

``deviations`` lists every declared setting whose value differs; ``errors`` the config
errors (an unknown setting, a deviation without a reason, a reason for a setting that does
not deviate); ``describe_settings`` words them for the report, e.g. "step alpha 0.3 (source
0.04; reason: <why>); retraction polar (source qr; reason: <why>) (source: <ref>)".
"""

from __future__ import annotations

import math

#: the settings read from the experiment itself (the others are <algorithm>.<name>)
EXPERIMENT_SETTINGS = ("step", "retraction", "transport", "time")
AT_SOURCE = "at the source's settings"
UNDECLARED = "no source settings declared"


def _dataset_class(config: dict, exp: dict):
    from rfl.registry import PROBLEMS

    return PROBLEMS[config["datasets"][exp["dataset"]]["problem"]]


def _n_agents(config: dict, exp: dict) -> int:
    ds = config["datasets"][exp["dataset"]]
    return len(_dataset_class(config, exp).local_sizes_from(ds["params"]))


def _one_or_list(values: list):
    """Distinct values in first-seen order: the value itself when there is one."""
    out = []
    for v in values:
        if not any(_same(v, w) for w in out):
            out.append(v)
    return out[0] if len(out) == 1 else out


def _scheme(p) -> str:
    """A participation's scheme name: ``full`` (every agent), ``uniform`` (s agents), or the
    scheme's ``scheme``."""
    if p is None:
        return "full"
    if isinstance(p, int) and not isinstance(p, bool):
        return "uniform"
    return p.get("scheme", "?")


def effective(config: dict, experiment: str, key: str):
    """What ``experiment`` runs for the setting ``key`` (module docstring); raises KeyError
    for a key that names nothing the experiment runs."""
    from rfl import sweeps
    from rfl.registry import ALGORITHMS

    exp = config["experiments"][experiment]
    if key == "step":
        return dict(exp["step"]) if exp.get("step") is not None else None
    if key in ("retraction", "transport"):
        manifold = _dataset_class(config, exp).manifold_class
        names = manifold.RETRACTIONS if key == "retraction" else manifold.TRANSPORTS
        return (exp.get("geometry") or {}).get(key) or names[0]
    if key == "time":
        spec = exp.get("time")
        if not spec:
            return None
        stragglers = (spec.get("cost") or {}).get("stragglers") or {}
        n = len(stragglers.get("agents", []))
        return {"round": spec["round"], "factor": stragglers.get("factor", 1),
                "stragglers": f"{n} of {_n_agents(config, exp)}"}
    algorithm, _, name = key.partition(".")
    methods = [m for m in exp["methods"] if m["algorithm"] == algorithm]
    if not name or not methods:
        raise KeyError(key)
    if name == "participation":
        return _one_or_list([_scheme(p) for m in methods for p in sweeps.participations(m)])
    options = dict(ALGORITHMS[algorithm].options)
    if name not in options:
        raise KeyError(key)
    return _one_or_list([m.get(name, options[name].get("default")) for m in methods])


def allowed_keys(config: dict, experiment: str) -> list[str]:
    """The settings ``experiment`` can declare: EXPERIMENT_SETTINGS, then for each of its
    algorithms ``<algorithm>.participation`` (federated ones) and ``<algorithm>.<option>``."""
    from rfl.registry import ALGORITHMS

    keys = list(EXPERIMENT_SETTINGS)
    for name in dict.fromkeys(m["algorithm"] for m in config["experiments"][experiment]["methods"]):
        alg = ALGORITHMS[name]
        keys += [f"{name}.participation"] * bool(alg.federated) + [f"{name}.{o}" for o in alg.options]
    return keys


def _same(a, b) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    return a == b


def _same_setting(actual, source) -> bool:
    """Equal values; lists (participation schemes, option values) as sets."""
    if isinstance(actual, list) and isinstance(source, list) and not any(isinstance(v, (dict, list)) for v in actual + source):
        return all(any(_same(a, s) for s in source) for a in actual) and \
            all(any(_same(a, s) for a in actual) for s in source)
    return _same(actual, source)


def deviations(config: dict, experiment: str) -> list[tuple[str, object, object, str | None]]:
    """(key, actual, source, reason or None) for every declared setting of ``experiment``
    whose value differs from what it runs, in declaration order. Empty without a ``source``."""
    src = config["experiments"][experiment].get("source") or {}
    reasons = src.get("reasons") or {}
    out = []
    for key, declared in (src.get("settings") or {}).items():
        actual = effective(config, experiment, key)
        if _same_setting(actual, declared["value"]) or _reading(declared, actual) is not None:
            continue                                   # the source's value, or one of its readings
        out.append((key, actual, declared["value"], reasons.get(key)))
    return out


# ---- readings of an ambiguous source --------------------------------------------------------
#: the settings whose readings can run as variants of an experiment (``apply``)
READABLE = ("step", "retraction", "transport")


def _reading(declared: dict, actual) -> int | None:
    """The index of ``actual`` among the declared setting's ``readings`` (None if it is none)."""
    return next((i for i, r in enumerate(declared.get("readings") or []) if _same_setting(actual, r)), None)


def apply(exp: dict, key: str, value) -> dict:
    """A copy of experiment ``exp`` that runs ``value`` for the setting ``key`` (READABLE, or
    ``<algorithm>.<option>``: set on every method of that algorithm)."""
    import copy

    out = copy.deepcopy(exp)
    if key == "step":
        out["step"] = copy.deepcopy(value)
    elif key in ("retraction", "transport"):
        out.setdefault("geometry", {})[key] = value
    else:
        algorithm, _, option = key.partition(".")
        for m in out["methods"]:
            if m["algorithm"] == algorithm:
                m[option] = copy.deepcopy(value)
    return out


def variant_name(experiment: str, index: int) -> str:
    """The experiment that runs reading ``index`` (from 0) of an ambiguous setting."""
    return f"{experiment}_reading{index}"


def expand_readings(config: dict) -> dict:
    """``config`` with, for every experiment whose source declares ``readings`` for a setting,
    one variant experiment per reading it does not run (``variant_name``, right after it): the
    same experiment with that reading (``apply``), marked ``reading_of: {experiment, setting}``.
    Figures, tables and claims name the experiment itself; the report judges each claim again
    on the variants (``rfl.claims.judge``). Idempotent."""
    out = {}
    for name, exp in config["experiments"].items():
        out[name] = exp
        if exp.get("reading_of"):
            continue
        for key, declared in ((exp.get("source") or {}).get("settings") or {}).items():
            runs = _reading(declared, effective(config, name, key))
            for i, value in enumerate(declared.get("readings") or []):
                if i != runs and variant_name(name, i) not in config["experiments"]:
                    variant = apply(exp, key, value)
                    variant["reading_of"] = {"experiment": name, "setting": key}
                    out[variant_name(name, i)] = variant
    config["experiments"] = out
    return config


def readings(config: dict, experiment: str) -> list[tuple[str, str, str]]:
    """(setting, the reading in words, the experiment that runs it) for every reading of every
    ambiguous setting of ``experiment``, the one it runs itself included; empty without one."""
    exp = config["experiments"][experiment]
    out = []
    for key, declared in ((exp.get("source") or {}).get("settings") or {}).items():
        if not declared.get("readings"):
            continue
        runs = _reading(declared, effective(config, experiment, key))
        for i, value in enumerate(declared["readings"]):
            where = experiment if i == runs else variant_name(experiment, i)
            if where in config["experiments"]:
                out.append((key, _reading_text(key, value, declared["readings"]), where))
    return out


def _reading_text(key: str, value, all_readings: list) -> str:
    """A reading in words by what tells it from the others: "step beta 10"."""
    if isinstance(value, dict) and all(isinstance(r, dict) for r in all_readings):
        fields = [k for k in value if any(not _same(value.get(k), r.get(k)) for r in all_readings)]
        return f"{key} " + ", ".join(f"{k} {_text(value[k])}" for k in fields)
    return f"{key} {_text(value)}"


def errors(config: dict) -> list[str]:
    """Config errors of every experiment's ``source``, one line each naming the experiment and
    the key: a setting the experiment cannot declare, a deviation from the source without a
    reason, a reason for a setting that is not declared or does not deviate."""
    msgs = []
    for name, exp in config["experiments"].items():
        src = exp.get("source")
        if not src:
            continue
        where = f"config key experiments.{name}.source"
        allowed = allowed_keys(config, name)
        settings = src.get("settings") or {}
        bad = [k for k in settings if k not in allowed]
        msgs += [f"{where}.settings.{k}: {k!r} is no setting of this experiment; allowed: "
                 f"{', '.join(allowed)}" for k in bad]
        if bad:
            continue
        bad = [(k, path) for k, v in settings.items()
               for path in _non_finite(v["value"], ["value"]) + _non_finite(v.get("readings"), ["readings"])]
        msgs += [f"{where}.settings.{k}.{'.'.join(map(str, path))}: not a finite number; allowed: a "
                 f"finite number" for k, path in bad]
        if bad:
            continue
        for key, declared in settings.items():
            r = declared.get("readings")
            readable = key in READABLE or ("." in key and not key.endswith(".participation"))
            if r is not None and (not readable or len(r) < 2
                                  or any(_same(a, b) for i, a in enumerate(r) for b in r[i + 1:])):
                msgs.append(f"{where}.settings.{key}.readings: {_text(r)}; allowed: two or more distinct "
                            f"values, on {', '.join(READABLE)} or an <algorithm>.<option>")
        reasons = src.get("reasons") or {}
        off = {key for key, *_ in deviations(config, name)}
        for key, actual, value, reason in deviations(config, name):
            if reason is None:
                msgs.append(f"{where}.settings.{key}: the experiment runs {_text(actual)}, the "
                            f"source {_text(value)} ({settings[key]['at']}); allowed: the "
                            f"source's value, or a reason at {where}.reasons.{key}")
        for key in reasons:
            if key not in off:
                why = "declares no such setting" if key not in settings else "runs the source's value"
                msgs.append(f"{where}.reasons.{key}: a reason, but the experiment {why}; "
                            f"allowed: reasons for the settings that deviate "
                            f"({', '.join(sorted(off)) or 'none'})")
    return msgs


def _non_finite(v, path: list) -> list[list]:
    """The paths of the NaN and infinite numbers in a declared value (the schema leaves values
    free, so ``rfl.schema``'s finite numbers do not reach them)."""
    if isinstance(v, float) and not math.isfinite(v):
        return [path]
    if isinstance(v, dict):
        return [p for k, x in v.items() for p in _non_finite(x, path + [k])]
    if isinstance(v, list):
        return [p for i, x in enumerate(v) for p in _non_finite(x, path + [i])]
    return []


def _text(v) -> str:
    if isinstance(v, dict):
        return ", ".join(f"{k} {_text(x)}" for k, x in v.items() if k != "rule") \
            if "rule" in v and len(v) > 1 else ", ".join(f"{k} {_text(x)}" for k, x in v.items())
    if isinstance(v, list):
        return "[" + ", ".join(_text(x) for x in v) + "]"
    if isinstance(v, float):
        return f"{v:g}"
    return "none" if v is None else str(v)


def words(key: str, actual, source, reason: str | None = None) -> str:
    """One deviation: "step alpha 0.3 (source 0.04)"; a dict compared field by field (a step
    of another rule in full); the reason after "; reason: "."""
    why = f"; reason: {reason}" if reason else ""
    if isinstance(actual, dict) and isinstance(source, dict) and actual.get("rule") == source.get("rule"):
        fields = [k for k in dict.fromkeys([*source, *actual]) if not _same(actual.get(k), source.get(k))]
        diff = ", ".join(f"{k} {_text(actual.get(k))}" for k in fields)
        return f"{key} {diff} (source {', '.join(_text(source.get(k)) for k in fields)}{why})"
    rule = lambda v: f"{v['rule']} " if isinstance(v, dict) and "rule" in v else ""  # noqa: E731
    return f"{key} {rule(actual)}{_text(actual)} (source {rule(source)}{_text(source)}{why})"


def describe_experiment(config: dict, experiment: str) -> str:
    """The deviations of one experiment in words, "at the source's settings (<ref>)", or
    UNDECLARED."""
    src = config["experiments"][experiment].get("source")
    if not src:
        return UNDECLARED
    devs = deviations(config, experiment)
    read = [f"{_reading_text(key, effective(config, experiment, key), d['readings'])} (one of the "
            f"source's readings: {', '.join(_reading_text(key, r, d['readings'])[len(key) + 1:] for r in d['readings'])})"
            for key, d in (src.get("settings") or {}).items() if d.get("readings")]
    if not devs and not read:
        return f"{AT_SOURCE} (source: {src['ref']})"
    return "; ".join([words(*d) for d in devs] + read) + f" (source: {src['ref']})"


def describe_settings(config: dict, experiments) -> str:
    """How ``experiments`` (names; e.g. those a claim reads) compare with their sources'
    settings: one phrase when they agree ("step alpha 0.3 (source 0.04; reason: ...) (source: <ref>)"),
    else "<exp>, <exp>: <phrase>; <exp>: <phrase>"."""
    groups: dict[str, list[str]] = {}
    for e in experiments:
        groups.setdefault(describe_experiment(config, e), []).append(e)
    if len(groups) == 1:
        return next(iter(groups))
    return "; ".join(f"{', '.join(names)}: {phrase}" for phrase, names in groups.items())


def deviation_records(config: dict, experiments) -> list[dict]:
    """The deviations of ``experiments`` as records for ``claims.json``: experiment, key,
    actual, source, reason."""
    return [{"experiment": e, "key": k, "actual": a, "source": s, "reason": r}
            for e in experiments for k, a, s, r in deviations(config, e)]
