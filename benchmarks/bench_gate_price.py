"""What does the promotion gate cost, and what does it save? Offline, on a predicts run.

A dream promotes its leader only when the paired interval of the leader's quality gain over
the incumbent excludes zero (``DreamConfig.require_gain``, on by default). That keeps a
leader that replay overrates from being deployed, and it also keeps one that replay rates
rightly when a few trees cannot show it. Which happens more is a question about online
outcomes. ``bench_replay_predicts.py`` runs every candidate of its dreams online (10 paired
seeds a history) and keeps each history's store: this script dreams over each history again,
with the gate and without it (the same studies, so the same candidates), and reports each
rule's pick against π_1 online from the logged runs, without running anything online.

With the gate, the dream must give the logged pick back (the script stops if it does not:
other code or other trees). Without it, the pick is the leader on V whenever it gains
quality (no promotion on cost alone stays). The outcome unit is the predicts section's: a
run's best standardised by π_1's online runs (0 is π_1's typical run, 1 one run-to-run
spread above it).

Usage: ``python benchmarks/bench_gate_price.py --log LOG --stores DIR``, where LOG is what a
predicts run printed and DIR its ``--stores`` folder.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_replay_predicts as predicts  # noqa: E402
from _predicts_logs import load_logged, offline_parser, write_offline_section  # noqa: E402
from _predicts_stats import PickVersusInitial, pick_versus_initial  # noqa: E402
from dreamrsi.core.policy import PolicySpec  # noqa: E402

RULES = ("gate", "no gate")
"""The dream as it runs (its interval must exclude zero), and the same dream without it."""


@dataclass(frozen=True, slots=True)
class Picked:
    """One history's pick under each rule (its place among the logged candidates)."""

    h: int
    picks: dict[str, int]
    labels: dict[str, str]


def repick(log: Path, stores: Path) -> tuple[dict[str, Any], list[Picked],
                                               dict[str, PickVersusInitial]]:
    """Every logged history dreamt again under each rule; the log's settings, each history's
    picks, and each rule's pick against π_1 online.

    Raises:
        ValueError: The log and stores disagree (as :func:`load_logged` says), or the gated
            dream does not give the logged candidates and pick back.
    """
    settings, histories = load_logged(log, stores)
    args = predicts.logged_args(settings)
    config = predicts.dream_config(args)
    initial = PolicySpec.from_json(settings["initial"])
    configs = {"gate": replace(config, require_gain=True),
               "no gate": replace(config, require_gain=False)}
    out = []
    for logged in histories:
        picks, labels = {}, {}
        for rule, rule_config in configs.items():
            item = predicts.dream_over(logged.h, args, initial, logged.folder,
                                       logged.item["runs"], 0.0, rule_config)
            if [c["spec"] for c in item["candidates"]] != \
                    [c["spec"] for c in logged.item["candidates"]]:
                raise ValueError(f"history {logged.h}: the dream over {logged.folder} builds "
                                 "other candidates than the log's (other code or settings)")
            if rule == "gate" and item["pick"] != logged.item["pick"]:
                raise ValueError(f"history {logged.h}: the gated dream picks other than the "
                                 "log's (other code or settings)")
            picks[rule] = logged.index(item["pick"])
            labels[rule] = PolicySpec.from_json(item["pick"]).label()
        out.append(Picked(logged.h, picks, labels))
    versus = {rule: pick_versus_initial(
        [logged.online[p.picks[rule]] for logged, p in zip(histories, out, strict=True)],
        [logged.online[logged.initial] for logged in histories],
        [p.picks[rule] == logged.initial for logged, p in zip(histories, out, strict=True)],
        settings["seed"]) for rule in RULES}
    return settings, out, versus


def summarise(settings: dict[str, Any], picked: list[Picked],
              versus: dict[str, PickVersusInitial]) -> str:
    """The section's text."""
    rows = ["| rule | pick − π_1 online | promoted | beat π_1 | did worse |",
            "|---|---:|---:|---:|---:|"]
    for rule in RULES:
        v = versus[rule]
        rows.append(f"| {rule} | **{v.mean.value:+.2f}** [{v.mean.low:+.2f}, "
                    f"{v.mean.high:+.2f}] | {len(picked) - v.kept} of {len(picked)} | "
                    f"{v.wins} | {v.losses} |")
    per = ["| history | " + " | ".join(f"pick with {r}" for r in RULES) + " | "
           + " | ".join(f"{r}: − π_1" for r in RULES) + " |",
           "|---:|" + "---|" * len(RULES) + "---:|" * len(RULES)]
    per += [f"| {p.h} | " + " | ".join(f"`{p.labels[r]}`" for r in RULES) + " | "
            + " | ".join(f"{versus[r].per_history[i]:+.2f}" for r in RULES) + " |"
            for i, p in enumerate(picked)]
    recorder = settings.get("recorder") or PolicySpec.from_json(settings["initial"]).label()
    return "\n".join([
        f"Source: the log and kept stores of a `bench_replay_predicts.py` run (task "
        f"`{settings['task']}`, {settings['context']} elites of the earlier trees as context, "
        f"histories recorded by `{recorder}`, "
        f"{settings.get('history_budget') or settings['budget']} attempts a run). Each "
        "history dreamt again with the dream's gate (the paired interval of the leader's "
        "quality gain must exclude zero; it gave every logged pick back) and without it (the "
        "leader on V, when it gains quality); each pick's logged online runs against π_1's "
        "on the same seeds, in units of π_1's online spread (mean over histories, two-level "
        "bootstrap 95% interval). Nothing run online here.", "", *rows, "", *per])


def main() -> None:
    parser = offline_parser(__doc__.splitlines()[0])
    args = parser.parse_args()
    try:
        settings, picked, versus = repick(args.log, args.stores)
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    text = summarise(settings, picked, versus)
    print(text)
    if not args.no_section:
        write_offline_section("gate-price", "What the promotion gate costs and saves",
                              settings, len(picked), text, "bench_gate_price.py")


if __name__ == "__main__":
    main()
