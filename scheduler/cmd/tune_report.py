"""What ``scheduler-manage tune`` prints and writes: the table, the JSON
document (DESIGN §14) and the best configuration's file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scheduler.cmd import output

if TYPE_CHECKING:
    from scheduler.tuning import session as session_mod

#: The figures of the table, in order.
TABLE_ROWS = ("placed", "rejected", "hosts_used_peak", "hot_host_minutes",
              "vm_hot_minutes", "overload_core_minutes", "p95_host_cpu",
              "cpu_stddev_mean", "migrations")


def _trial(trial) -> dict:
    from scheduler.tuning import search

    return {"number": trial.number, "state": trial.state.name,
            "values": dict(trial.params),
            "figures": trial.user_attrs.get("figures"),
            "feasible": search.feasible(trial),
            **({"error": trial.user_attrs["error"]}
               if "error" in trial.user_attrs else {})}


def document(session: session_mod.Session,
             outcome: session_mod.Outcome) -> dict:
    """The JSON form: ``baseline`` and ``best`` each with their
    ``search`` and ``holdout`` figures, ``best_values``, ``trials``."""
    objective = session.objective
    return {
        "study": session.study_name, "storage": session.storage_url,
        "workload": session.caption,
        "objective": {"minimise": list(objective.figures),
                      "max_rejected": objective.max_rejected,
                      "max_migrations": objective.max_migrations},
        "holdout": session.holdout_label,
        "holdout_seed": session.holdout_settings.seed,
        "baseline": outcome.baseline, "best": outcome.best,
        "best_trial": outcome.best_number,
        "improved": improved(session, outcome),
        "best_values": outcome.best_values,
        "pareto_front": outcome.front,
        "trials": [_trial(t) for t in outcome.trials],
    }


def _change(base: float, value: float) -> str:
    if not base:
        return "" if not value else "new"
    return f"{(value - base) / base:+.0%}"


def improved(session: session_mod.Session,
             outcome: session_mod.Outcome) -> bool:
    """Whether the best beat the baseline on the searched workload: a
    space need not hold the baseline, and its best may be worse."""
    name = session.objective.figures[0]
    return (outcome.best is not None and outcome.best["search"][name]
            < outcome.baseline["search"][name])


def table(session: session_mod.Session,
          outcome: session_mod.Outcome) -> str:
    """The baseline and the best side by side, on the searched workload
    and on the hold-out, then the best's values."""
    base, best = outcome.baseline, outcome.best
    done = sum(1 for t in outcome.trials if t.state.name == "COMPLETE")
    lines = [f"study {session.study_name}: {done} trials completed on "
             f"{session.caption}"]
    if best is None:
        lines.append("no trial kept within the limits (rejected <= "
                     f"{session.objective.max_rejected:g}, migrations <= "
                     f"{session.objective.max_migrations:g}); nothing to "
                     "recommend")
        return "\n".join(lines)
    rows = [[name, base["search"][name], best["search"][name],
             _change(base["search"][name], best["search"][name]),
             base["holdout"][name], best["holdout"][name],
             _change(base["holdout"][name], best["holdout"][name])]
            for name in TABLE_ROWS]
    lines.append(output.table(
        ["figure", "baseline", f"best (trial {outcome.best_number})",
         "change", "baseline, hold-out", "best, hold-out", "change"],
        rows))
    lines.append(f"hold-out: {session.holdout_label}")
    if not improved(session, outcome):
        lines.append(f"no trial beat the baseline's "
                     f"{session.objective.figures[0]}: keep the baseline")
    lines.append("best values: " + ", ".join(
        f"{key} = {value:g}" if isinstance(value, float)
        else f"{key} = {value}"
        for key, value in outcome.best_values.items()))
    return "\n".join(lines)


def conf_file(session: session_mod.Session,
              outcome: session_mod.Outcome) -> str:
    """The best configuration: only the searched options, after a
    comment naming the workload, the trials and the figures."""
    from scheduler.tuning import space as space_mod

    name = session.objective.figures[0]
    base = outcome.baseline
    files = ", ".join(session.config_files) or "the defaults"
    comment = [f"scheduler-manage tune, study {session.study_name}: "
               f"{len(outcome.trials)} trials on {session.caption}.",
               f"Read after the baseline ({files}).", ""]
    if outcome.best is None:
        return space_mod.conf_text({}, comment + [
            "No trial kept within the limits: nothing to recommend."])
    if not improved(session, outcome):
        return space_mod.conf_text({}, comment + [
            f"No trial beat the baseline's {name}: keep the baseline."])
    best = outcome.best
    searched, held = ((base[part][name], best[part][name])
                      for part in ("search", "holdout"))
    comment += [
        f"{name}: baseline {searched[0]:g}, this {searched[1]:g} "
        f"({_change(*searched)}) on the searched workload;",
        f"hold-out ({session.holdout_label}): baseline {held[0]:g}, "
        f"this {held[1]:g} ({_change(*held)}).",
        f"rejected {best['search']['rejected']} (baseline "
        f"{base['search']['rejected']}), migrations "
        f"{best['search']['migrations']} (baseline "
        f"{base['search']['migrations']})."]
    texts = space_mod.option_values(session.dimensions, outcome.best_values,
                                    session.baseline_conf)
    return space_mod.conf_text(texts, comment)
