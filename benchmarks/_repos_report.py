"""The printed report of repos_quality.py: per repository, overall, and per named set beside semble.

A set's figures are means of per-repository means (semble's summary rule), per category; beside
them semble's published figures over the same repositories, and, in hybrid mode, how many of the
set's repositories SAI scores below semble (and how many by more than BELOW_BY), with the spread
of SAI's per-repository figures.
"""

from __future__ import annotations

import math
from typing import Protocol

CATEGORIES = ("semantic", "architecture", "symbol")
BELOW_BY = 0.10  # a repository this far under semble is a clear loss, not noise


class Scored(Protocol):
    """One query's outcome in one mode, as the report reads it."""

    @property
    def category(self) -> str: ...

    mode: str
    ndcg: float
    first_in_target: bool
    files: int


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def fmt(value: float | None) -> str:
    return "    -" if value is None or math.isnan(value) else f"{value:5.3f}"


def print_row(label: str, cells: list[str], *extra: str) -> None:
    if label == "semble" and not any(c.strip() != "-" for c in cells):
        return  # no published figure covers the queries that ran
    print(f"  {label:<10} {cells[0]:>6}  " + "  ".join(f"{v:>12}" for v in cells[1:])
          + "".join(f"  {v:>11}" for v in extra))


def repo_figures(outcomes: list[Scored], mode: str) -> dict[str, float]:
    """A repository's mean NDCG@10 in one mode: 'all' and per category (NaN where none ran)."""
    mine = [o for o in outcomes if o.mode == mode]
    out = {"all": mean([o.ndcg for o in mine])}
    out.update({c: mean([o.ndcg for o in mine if o.category == c]) for c in CATEGORIES})
    return out


def print_repo(name: str, outcomes: list[Scored], n_queries: int, modes: list[str], published: dict | None,
               whole: bool, cats_whole: set[str]) -> None:
    cats = [c for c in CATEGORIES if any(o.category == c for o in outcomes)]
    print(f"\n{name}: {n_queries} queries   NDCG@10 (semble's published figure where the same queries ran)")
    print_row("mode", ["all", *cats], "1st in file", "files/top10")
    for mode in modes:
        figures = repo_figures(outcomes, mode)
        mine = [o for o in outcomes if o.mode == mode]
        share = mean([float(o.first_in_target) for o in mine])
        files = mean([float(o.files) for o in mine])
        print_row(mode, [fmt(figures["all"]), *(fmt(figures[c]) for c in cats)], f"{share:.2f}", f"{files:.1f}")
    if published:
        row = [fmt(published["ndcg10"]) if whole else "    -"]
        row += [fmt(published["by_category"].get(c)) if c in cats_whole else "    -" for c in cats]
        print_row("semble", row)


def set_means(by_repo: dict[str, list[Scored]], names: list[str], mode: str) -> dict[str, float]:
    """Mean over the repositories of their per-repository figures ('all' and per category)."""
    per = [repo_figures(by_repo[n], mode) for n in names]
    return {k: mean([f[k] for f in per if not math.isnan(f[k])]) for k in ("all", *CATEGORIES)}


def semble_means(published: dict[str, dict], names: list[str]) -> dict[str, float]:
    out = {"all": mean([published[n]["ndcg10"] for n in names])}
    for c in CATEGORIES:
        out[c] = mean([published[n]["by_category"][c] for n in names if c in published[n]["by_category"]])
    return out


def print_summary(title: str, by_repo: dict[str, list[Scored]], names: list[str], modes: list[str],
                  published: dict[str, dict], whole: bool, cats_whole: set[str]) -> None:
    """One block of means (a whole run, or one named set), semble's beside, and the losses to semble."""
    print(f"\n{title} ({len(names)} repos; mean of per-repo means, as semble's summary)")
    print_row("mode", ["all", *CATEGORIES], "1st in file", "files/top10")
    for mode in modes:
        m = set_means(by_repo, names, mode)
        share = mean([mean([float(o.first_in_target) for o in by_repo[n] if o.mode == mode]) for n in names])
        files = mean([mean([float(o.files) for o in by_repo[n] if o.mode == mode]) for n in names])
        print_row(mode, [fmt(m["all"]), *(fmt(m[c]) for c in CATEGORIES)], f"{share:.2f}", f"{files:.1f}")
    if not all(n in published for n in names):
        return
    theirs = semble_means(published, names)
    print_row("semble", [fmt(theirs["all"]) if whole else "    -",
                         *(fmt(theirs[c]) if c in cats_whole else "    -" for c in CATEGORIES)])
    if whole and "hybrid" in modes:
        mine = {n: repo_figures(by_repo[n], "hybrid")["all"] for n in names}
        gaps = {n: mine[n] - published[n]["ndcg10"] for n in names}
        below = sorted((n for n in names if gaps[n] < 0), key=gaps.__getitem__)
        far = [n for n in below if gaps[n] < -BELOW_BY]
        print(f"  hybrid below semble in {len(below)} of {len(names)} (by more than {BELOW_BY:.2f} in {len(far)})"
              + (": " + ", ".join(f"{n} {gaps[n]:+.3f}" for n in below) if below else "")
              + f"; SAI per repo {min(mine.values()):.3f}-{max(mine.values()):.3f}")


def print_overall(by_repo: dict[str, list[Scored]], modes: list[str], published: dict[str, dict],
                  whole: bool, cats_whole: set[str], sets: dict[str, tuple[str, ...]]) -> None:
    """The run's means, then each named set the run covers (all of it, or the part that ran)."""
    names = sorted(by_repo)
    alone = [label for label, members in sets.items() if set(members) == set(names)]
    title = f"overall: set {alone[0]}" if alone else "overall"
    print_summary(title, by_repo, names, modes, published, whole, cats_whole)
    for label, members in sets.items():
        ran = [n for n in members if n in by_repo]
        if ran and len(ran) < len(names):
            part = "" if len(ran) == len(members) else f", {len(ran)} of its {len(members)}"
            print_summary(f"set {label}{part}", by_repo, ran, modes, published, whole, cats_whole)
