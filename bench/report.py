"""Write the benchmark report: tables into docs/benchmarks.md, PNG plots beside it.

    .venv/bin/python -m bench.report --ycsb bench/results/ycsb-latest.json \
        --sweep bench/results/sweep-latest.json --doc docs/benchmarks.md --images docs/img

The report replaces only the part of the document between the two `make bench` marker
lines (added at the end the first time), so the hand-written history around it stays.
Plots: throughput and p50/p99 per workload and target; latency against offered load
(the sweep); server CPU per operation by process.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import orjson

BEGIN = "<!-- make bench: generated section begins (bench/report.py rewrites it) -->"
END = "<!-- make bench: generated section ends -->"


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def _ok(results: dict[str, Any]) -> dict[str, Any]:
    return {t: r for t, r in results.items() if "error" not in r}


def plot_ycsb(ycsb: dict[str, Any], path: Path) -> None:
    plt = _plt()
    results = _ok(ycsb["results"])
    workloads = ycsb["config"]["workloads"]
    targets = list(results)
    fig, (ax_tp, ax_lat) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / max(len(targets), 1)
    for i, target in enumerate(targets):
        xs = [w + i * width for w in range(len(workloads))]
        ws = [results[target]["workloads"][w] for w in workloads]
        ax_tp.bar(xs, [w["ops_per_s"] for w in ws], width, label=target)
        ax_lat.bar(xs, [w["latency"]["p99_ms"] for w in ws], width, label=f"{target} p99", alpha=0.45)
        ax_lat.bar(xs, [w["latency"]["p50_ms"] for w in ws], width, label=f"{target} p50")
    for ax in (ax_tp, ax_lat):
        ax.set_xticks([w + width * (len(targets) - 1) / 2 for w in range(len(workloads))])
        ax.set_xticklabels([f"YCSB {w.upper()}" for w in workloads])
    ax_tp.set_ylabel("operations per second")
    ax_tp.set_title("Throughput (32 in flight)")
    ax_lat.set_ylabel("latency (ms)")
    ax_lat.set_title("Latency p50 (solid) and p99 (light)")
    ax_tp.legend(fontsize=8)
    ax_lat.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_sweep(sweep: dict[str, Any], path: Path) -> None:
    plt = _plt()
    fig, (ax_lat, ax_rate) = plt.subplots(1, 2, figsize=(12, 4.5))
    for target, result in _ok(sweep["results"]).items():
        points = result["points"]
        achieved = [p["ops_per_s"] for p in points]
        (line,) = ax_lat.plot(achieved, [p["latency"]["p50_ms"] for p in points], "o-", label=f"{target} p50")
        ax_lat.plot(
            achieved,
            [p["latency"]["p99_ms"] for p in points],
            "s--",
            color=line.get_color(),
            label=f"{target} p99",
        )
        ax_rate.plot([p["offered_ops_per_s"] for p in points], achieved, "o-", label=target)
    ax_lat.set_yscale("log")
    ax_lat.set_xlabel("achieved operations per second")
    ax_lat.set_ylabel("latency from scheduled start (ms, log)")
    ax_lat.set_title(f"Latency against load (YCSB {sweep['workload'].upper()})")
    ax_lat.legend(fontsize=8)
    top = max(sweep["rates"])
    ax_rate.plot([0, top], [0, top], ":", color="grey", label="offered = achieved")
    ax_rate.set_xlabel("offered operations per second")
    ax_rate.set_ylabel("achieved operations per second")
    ax_rate.set_title("Throughput follows the offered load until saturation")
    ax_rate.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def cpu_by_process(workload: dict[str, Any]) -> dict[str, float]:
    """Server CPU µs per operation by process, processes of one role added up."""
    ops = workload["ops"] or 1
    out: dict[str, float] = {}
    for process, seconds in workload.get("server_cpu_by_process", {}).items():
        role = process.split()[-1] if process.startswith("python storage") else process
        role = "storage nodes" if role.startswith("storage-") else role
        role = "dynalite (node)" if role == "node" else role
        out[role] = out.get(role, 0.0) + seconds / ops * 1e6
    return {k: v for k, v in out.items() if v >= 0.05}


def plot_cpu(ycsb: dict[str, Any], path: Path) -> None:
    plt = _plt()
    results = _ok(ycsb["results"])
    workloads = ycsb["config"]["workloads"]
    bars = [(t, w) for t in results for w in workloads]
    fig, ax = plt.subplots(figsize=(12, 4.5))
    processes = sorted({p for t, w in bars for p in cpu_by_process(results[t]["workloads"][w])})
    bottoms = [0.0] * len(bars)
    for process in processes:
        heights = [cpu_by_process(results[t]["workloads"][w]).get(process, 0.0) for t, w in bars]
        ax.bar(range(len(bars)), heights, bottom=bottoms, label=process)
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    ax.set_xticks(range(len(bars)))
    ax.set_xticklabels([f"{t}\n{w.upper()}" for t, w in bars], fontsize=7)
    ax.set_ylabel("server CPU µs per operation")
    ax.set_title("Server CPU per operation, by process")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def sweep_table(sweep: dict[str, Any]) -> str:
    lines = [
        "| target | offered ops/s | achieved ops/s | p50 ms | p99 ms | p99.9 ms | errors | server CPU µs/op |",
        "|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for target, result in sweep["results"].items():
        if "error" in result:
            lines.append(f"| {target} | not run: {result['error']} | | | | | | |")
            continue
        for p in result["points"]:
            cpu = p["server_cpu_us_per_op"]
            lines.append(
                f"| {target} | {p['offered_ops_per_s']:.0f} | {p['ops_per_s']:.0f} | {p['latency'].get('p50_ms', float('nan')):.2f} | "
                f"{p['latency'].get('p99_ms', float('nan')):.2f} | {p['latency'].get('p99_9_ms', float('nan')):.2f} | "
                f"{sum(p['errors'].values()) or 0} | {'n/a' if cpu is None else f'{cpu:.0f}'} |"
            )
    return "\n".join(lines)


def cpu_table(ycsb: dict[str, Any]) -> str:
    results = _ok(ycsb["results"])
    rows = [
        (t, w, cpu_by_process(results[t]["workloads"][w]))
        for t in results
        for w in ycsb["config"]["workloads"]
    ]
    processes = sorted({p for _, _, c in rows for p in c})
    lines = ["| target | workload | " + " | ".join(processes) + " |", "|---|---|" + "---:|" * len(processes)]
    for target, workload, cpu in rows:
        cells = " | ".join(f"{cpu[p]:.0f}" if p in cpu else "" for p in processes)
        lines.append(f"| {target} | {workload.upper()} | {cells} |")
    return "\n".join(lines)


def _in_flight(cfg: dict[str, Any]) -> str:
    levels = cfg.get("concurrency_levels") or ()
    if levels:
        return f"each target's peak over {', '.join(map(str, levels))} requests in flight"
    return f"{cfg['concurrency']} requests in flight"


def section(ycsb: dict[str, Any], sweep: dict[str, Any] | None, images: str) -> str:
    machine = ycsb.get("machine", {})
    cfg = ycsb["config"]
    parts = [
        BEGIN,
        "## Latest `make bench`",
        "",
        f"Run of {ycsb['started'][:16].replace('T', ' ')} UTC; {machine.get('cpus', '?')} cores, "
        f"{_in_flight(cfg)}, {cfg['records']} items of {cfg['item_bytes']} bytes, "
        f"{cfg['duration_s']:.0f} s per workload, {cfg['rounds']} round(s) (medians). Raw results: `bench/results/`.",
        "",
        "### Throughput and latency, Partita and dynalite in the same run",
        "",
        ycsb["table_markdown"],
        "",
    ]
    if ycsb.get("curves_markdown"):
        parts += [
            "Each workload at each number of requests in flight, ops/s (p99 ms); each target's "
            "figure above is its peak:",
            "",
            ycsb["curves_markdown"],
            "",
        ]
    parts += [
        f"![throughput and latency per workload]({images}/bench-ycsb.png)",
        "",
        "### Server CPU per operation, by process (µs)",
        "",
        cpu_table(ycsb),
        "",
        f"![server CPU per operation by process]({images}/bench-cpu.png)",
        "",
    ]
    if sweep is not None:
        parts += [
            f"### Latency against offered load (YCSB {sweep['workload'].upper()}, {sweep['seconds']:.0f} s per rate)",
            "",
            "Requests start on a schedule at the offered rate; latency counts from the scheduled start, so "
            "queueing in a saturated server shows (no coordinated omission). Latency should stay flat while "
            "the achieved rate follows the offered one (the paper's figures 5 and 6).",
            "",
            sweep_table(sweep),
            "",
            f"![latency against offered load]({images}/bench-sweep.png)",
            "",
        ]
    parts.append(END)
    return "\n".join(parts)


def replace_section(document: str, generated: str) -> str:
    if BEGIN in document and END in document:
        head, rest = document.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        return head + generated + tail
    return document.rstrip("\n") + "\n\n" + generated + "\n"


def write_report(ycsb_path: Path, sweep_path: Path | None, doc: Path, images: Path) -> None:
    ycsb = orjson.loads(ycsb_path.read_bytes())
    sweep = orjson.loads(sweep_path.read_bytes()) if sweep_path is not None else None
    images.mkdir(parents=True, exist_ok=True)
    plot_ycsb(ycsb, images / "bench-ycsb.png")
    plot_cpu(ycsb, images / "bench-cpu.png")
    if sweep is not None:
        plot_sweep(sweep, images / "bench-sweep.png")
    relative = images.resolve().relative_to(doc.resolve().parent).as_posix()
    generated = section(ycsb, sweep, relative)
    doc.write_text(replace_section(doc.read_text() if doc.exists() else "# Benchmarks\n", generated))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__.split("\n\n")[0])
    p.add_argument("--ycsb", type=Path, required=True)
    p.add_argument("--sweep", type=Path)
    p.add_argument("--doc", type=Path, default=Path("docs/benchmarks.md"))
    p.add_argument("--images", type=Path, default=Path("docs/img"))
    a = p.parse_args(argv)
    write_report(a.ycsb, a.sweep, a.doc, a.images)
    print(f"wrote {a.doc} and plots in {a.images}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
