"""Markdown tables and PNG plots for benchmark results (shared by the benchmark scripts)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable, Sequence

_LABELS = {"recall@1": "R@1", "recall@5": "R@5", "recall@10": "R@10", "ndcg@5": "nDCG@5",
           "ndcg@10": "nDCG@10", "mrr": "MRR", "hit_rate@1": "domain hit@1", "hit_rate@5": "domain hit@5",
           "all_gold@5": "all gold @5", "all_gold@10": "all gold @10"}


def figure(x: Any, digits: int = 3) -> str:
    """A float to ``digits`` places; anything else as it is."""
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def short_file(name: str) -> str:
    """A data file's name without its family's prefix (StableToolBench's, APIBench's)."""
    return name.removeprefix("stabletoolbench_").removeprefix("apibench_")


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table; cells are str()-ed."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def bold_best(values: dict[str, float], higher: bool = True, fmt: Callable[[float], str] = "{:.3f}".format,
              exclude: Sequence[str] = ()) -> dict[str, str]:
    """Format each value; the best among the non-excluded keys (ties too) in bold."""
    cand = [v for k, v in values.items() if k not in exclude and not math.isnan(v)]
    best = (max(cand) if higher else min(cand)) if cand else None
    return {k: (f"**{fmt(v)}**" if best is not None and k not in exclude and fmt(v) == fmt(best) else fmt(v))
            for k, v in values.items()}


def versions_block(results: dict[str, Any]) -> str:
    v = results["versions"]
    return ", ".join(f"{k} {val}" for k, val in v.items())


def load_line(results: dict[str, Any]) -> str:
    la = results.get("load_average") or {}
    if not la.get("start"):
        return ""
    return (f"Machine load average (1/5/15 min) at start {la['start']}, at end {la.get('end')} "
            f"on {__import__('os').cpu_count()} CPUs: other processes shared the CPUs, so latencies are upper bounds.")


def write_report(results: dict[str, Any], out: Path, plots: bool = True) -> None:
    """report.md (+ recall_at_k.png, latency_quality.png) for a retrieval results dict."""
    methods = list(results["methods"])
    parts = ["# Retriever comparison", "",
             f"Command: `{results['command']}`  ",
             f"Wall time: {results['wall_seconds']:.0f} s" + (" (quick sample)" if results["quick"] else "") + "  ",
             f"Versions: {versions_block(results)}  ", load_line(results), ""]
    if results.get("sample"):
        smp = results["sample"]
        parts += [f"Quick sample ({smp['note']}): queries = {smp['queries']}; records = {smp['records']}.", ""]
    if results.get("default_fusion"):
        parts.append(f"The router's shipped hybrid fusion is `{results['default_fusion']}`; "
                     "`hybrid_split` uses it with sub-query splitting on.")
    if results.get("model"):
        parts.append(f"The router's embedding model: `{results['model']}`.")
    if results.get("methods_skipped"):
        parts.append("Skipped methods: " + "; ".join(f"`{k}`: {v}" for k, v in results["methods_skipped"].items()))
    if results.get("datasets_missing"):
        parts.append("Datasets whose files are missing: " + ", ".join(results["datasets_missing"]))
    parts += ["", "Methods: " + "; ".join(f"`{k}` = {v}" for k, v in results["methods"].items()), "",
              "Latency is per query (p50/p95 over the evaluated queries, after one warm-up query; "
              f"torch threads: {results.get('torch_threads', 'default (2)')}). Build time and "
              "peak memory are for building the method's index over the corpus (router rows share one build; "
              "dense embeddings come from the router's embedding cache when warm). Peak heap is tracemalloc "
              "(Python and numpy allocations; torch and faiss internals are not traced). Tokens: cl100k tokens of "
              "the top-5 tools' OpenAI schemas, mean per query, vs all tools of the corpus.", ""]
    parts += _headline(results, methods)
    parts += _multi_tool_headline(results, methods)
    for name, d in results["datasets"].items():
        parts += _dataset_section(name, d, methods, results)
    (out / "report.md").write_text("\n".join(parts) + "\n", encoding="utf-8")
    if plots:
        plot_recall_curves(results, out / "recall_at_k.png")
        plot_latency_quality(results, out / "latency_quality.png")


def _headline(results: dict[str, Any], methods: list[str]) -> list[str]:
    rows = []
    for name, d in results["datasets"].items():
        nd = bold_best({m: d["methods"][m]["metrics"]["ndcg@5"] for m in methods if m in d["methods"]},
                       exclude=["oracle"])
        rc = bold_best({m: d["methods"][m]["metrics"]["recall@5"] for m in methods if m in d["methods"]},
                       exclude=["oracle"])
        rows.append([f"{name} ({d['n_queries']} q / {d['n_records']} tools)"] +
                    [f"{nd[m]} / {rc[m]}" if m in nd else "–" for m in methods])
    out = ["## Headline: nDCG@5 / Recall@5", "", md_table(["dataset"] + methods, rows), ""]
    summ = results.get("summary", {})
    if summ:
        srow = [["mean over datasets"] + [
            f"{summ[m]['mean_over_datasets']['ndcg@5']:.3f} / {summ[m]['mean_over_datasets']['recall@5']:.3f}"
            if m in summ else "–" for m in methods]]
        if any("mean_stabletoolbench" in v for v in summ.values()):
            srow.append(["StableToolBench mean (4 files)"] + [
                f"{summ[m]['mean_stabletoolbench']['ndcg@5']:.3f} / {summ[m]['mean_stabletoolbench']['recall@5']:.3f}"
                if "mean_stabletoolbench" in summ.get(m, {}) else "–" for m in methods])
        out += [md_table(["summary"] + methods, srow), ""]
    return out


def _multi_tool_headline(results: dict[str, Any], methods: list[str]) -> list[str]:
    """All gold @10 / nDCG@5 of the multi-tool requests of each dataset that has them."""
    rows = []
    for name, d in results["datasets"].items():
        groups = {m: d["methods"][m].get("by_gold_count", {}) for m in methods if m in d["methods"]}
        multi = {m: g["multi-tool"] for m, g in groups.items() if "multi-tool" in g}
        if not multi:
            continue
        n = next(iter(multi.values()))["queries"]
        ag = bold_best({m: v["all_gold@10"] for m, v in multi.items()}, exclude=["oracle"])
        nd = bold_best({m: v["ndcg@5"] for m, v in multi.items()}, exclude=["oracle"])
        rows.append([f"{name} ({n} multi-tool q)"] + [f"{ag[m]} / {nd[m]}" if m in multi else "–" for m in methods])
    if not rows:
        return []
    return ["## Multi-tool requests: all gold @10 / nDCG@5", "",
            "Requests with several gold tools only (each dataset's section also gives its single-tool "
            "requests apart): all gold @10 = the share of them whose every gold tool is in the top 10.", "",
            md_table(["dataset"] + methods, rows), ""]


def _gold_count_table(d: dict[str, Any], ms: list[str]) -> list[str]:
    """Single-tool and multi-tool requests apart (benchmarks/retrieval/completeness.py)."""
    groups = [g for g in ("single-tool", "multi-tool")
              if any(g in d["methods"][m].get("by_gold_count", {}) for m in ms)]
    if "multi-tool" not in groups:
        return []
    keys = ("ndcg@5", "all_gold@5", "all_gold@10")
    header = ["method"] + [f"{g} {_LABELS.get(k, k)}" for g in groups for k in keys]
    cols = {(g, k): bold_best({m: d["methods"][m]["by_gold_count"][g][k] for m in ms
                               if g in d["methods"][m].get("by_gold_count", {})}, exclude=["oracle"])
            for g in groups for k in keys}
    rows = [[f"`{m}`"] + [cols[(g, k)].get(m, "–") for g in groups for k in keys] for m in ms]
    first = next(d["methods"][m]["by_gold_count"] for m in ms if "multi-tool" in d["methods"][m].get("by_gold_count", {}))
    counts = ", ".join(f"{first[g]['queries']} {g}" for g in groups if g in first)
    return [f"Single-tool and multi-tool requests apart ({counts}):", "", md_table(header, rows), ""]


def _dataset_section(name: str, d: dict[str, Any], methods: list[str], results: dict[str, Any]) -> list[str]:
    ms = [m for m in methods if m in d["methods"]]
    metric_keys = list(results["metrics"])
    has_dom = any("domain_metrics" in d["methods"][m] for m in ms)
    dom_keys = list(results["domain_metrics"]) if has_dom else []
    cols: dict[str, dict[str, str]] = {}
    for key in metric_keys:
        cols[key] = bold_best({m: d["methods"][m]["metrics"][key] for m in ms}, exclude=["oracle"])
    for key in dom_keys:
        cols[key] = bold_best({m: d["methods"][m]["domain_metrics"][key] for m in ms}, exclude=["oracle"])
    f1 = "{:.1f}".format
    f2 = "{:.2f}".format
    cols["p50"] = bold_best({m: d["methods"][m]["latency_ms"]["p50"] for m in ms}, False, f2, ["oracle"])
    cols["p95"] = bold_best({m: d["methods"][m]["latency_ms"]["p95"] for m in ms}, False, f2, ["oracle"])
    cols["build"] = bold_best({m: d["methods"][m]["build_seconds"] for m in ms}, False, f2, ["oracle"])
    cols["heap"] = bold_best({m: d["methods"][m]["peak_heap_mb"] for m in ms}, False, f1, ["oracle"])
    cols["tok"] = {m: f"{d['methods'][m]['tokens']['top5_mean']:.0f}" for m in ms}
    header = ["method"] + [_LABELS[k] for k in metric_keys + dom_keys] + [
        "p50 ms", "p95 ms", "build s", "peak heap MB", "top-5 tokens"]
    rows = [[f"`{m}`"] + [cols[k][m] for k in metric_keys + dom_keys + ["p50", "p95", "build", "heap", "tok"]]
            for m in ms]
    all_tokens = d["methods"][ms[0]]["tokens"]["all_tools"] if ms else 0
    sampled = f"{d['n_queries']} of {d['n_queries_total']} queries" if d["n_queries"] < d["n_queries_total"] \
        else f"{d['n_queries']} queries"
    tools = f"{d['n_records']} tools" if d.get("n_records_total", d["n_records"]) == d["n_records"] \
        else f"{d['n_records']} of {d['n_records_total']} tools (sampled)"
    out = [f"## {name}", "", f"{sampled}, {tools} (all tools' schemas: {all_tokens} tokens), "
           f"{d['mean_relevant']:.2f} gold tools per query.", ""]
    out += [f"- {n}" for n in d["notes"]] + ["", md_table(header, rows), ""]
    out += _gold_count_table(d, ms)
    sig = d.get("significance") or {}
    if sig.get("pairs"):
        keys = list(next(iter(sig["pairs"].values())))
        srows = [[pair] + [f"{v[k]['delta']:+.3f} (p={v[k]['p']:.3g}){' *' if v[k]['p'] < 0.05 else ''}"
                           for k in keys] for pair, v in sig["pairs"].items()]
        out += [f"Significance ({sig['test']}; * = p < 0.05): difference of the means", "",
                md_table(["pair"] + [_LABELS.get(k, k) for k in keys], srows), ""]
    return out


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_recall_curves(results: dict[str, Any], path: Path) -> None:
    plt = _pyplot()
    names = list(results["datasets"])
    if not names:
        return
    cols = min(4, len(names))
    rows = math.ceil(len(names) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names):
        for m, st in results["datasets"][name]["methods"].items():
            curve = st["recall_curve"]
            ax.plot(range(1, len(curve) + 1), curve, label=m, linestyle=":" if m == "oracle" else "-")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("k", fontsize=8)
        ax.set_ylabel("Recall@k", fontsize=8)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 8), fontsize=8)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_latency_quality(results: dict[str, Any], path: Path) -> None:
    """p50 latency vs nDCG@5: one point per (method, dataset), method means as large markers."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for i, m in enumerate(results["methods"]):
        if m == "oracle":
            continue
        xs, ys = [], []
        for d in results["datasets"].values():
            if m in d["methods"]:
                xs.append(max(d["methods"][m]["latency_ms"]["p50"], 1e-3))
                ys.append(d["methods"][m]["metrics"]["ndcg@5"])
        if not xs:
            continue
        color = f"C{i % 10}"
        ax.scatter(xs, ys, s=14, alpha=0.45, color=color)
        gx = math.exp(sum(math.log(x) for x in xs) / len(xs))
        ax.scatter([gx], [sum(ys) / len(ys)], s=110, color=color, edgecolor="black", label=m)
    ax.set_xscale("log")
    ax.set_xlabel("route latency p50 per query (ms, log)")
    ax.set_ylabel("nDCG@5")
    ax.set_title("Latency vs quality (small: one dataset; large: mean)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
