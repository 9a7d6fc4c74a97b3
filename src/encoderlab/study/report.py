"""The study report: one self-contained HTML page and the same content as Markdown.

`write_report(study_dir)` reads only the study folder, so it runs as the last node of a study and
again at any time (`encoderlab study report DIR`), also on a study that is partly finished
(missing numbers are said to be missing). It writes `report/report.html` (figures embedded as
base64 PNG, no external file or script, so it can be mailed or archived), `report/report.md`,
and `report/figures/NAME.png` each with `NAME.csv` holding the numbers drawn, plus
`report/results.json` with the table and claims as data.

Sections: configuration, compute spent (per node kind and per pretraining run), the results table
(mean ± 95% t-interval over fine-tuning seeds at the LR chosen on validation, and the paired
difference against the baseline with its p-value), the paper's claims with a generated verdict,
and every figure with its numbers. Nothing in it depends on the time it was written, so the same
folder always gives the same report.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
from pathlib import Path

from encoderlab.atomic import write_json_atomic
from encoderlab.study.results import (
    ALL,
    StudyData,
    check_claims,
    data_efficiency,
    load_study,
    lr_curves,
    mask_ratio_curve,
    results_table,
)
from encoderlab.study.runner import compute_records, node_dir


def write_report(study_dir: Path, figures: bool = True) -> Path:
    """Write the report of the study in `study_dir`; returns the path of report.html.

    `figures=False` skips drawing (tests of the graph machinery that only need the numbers)."""
    study_dir = Path(study_dir)
    data = load_study(study_dir)
    out = study_dir / "report"
    (out / "figures").mkdir(parents=True, exist_ok=True)
    table = results_table(data)
    claims = check_claims(data, table)
    drawn = _figures(data, table, study_dir, out / "figures") if figures else []
    figures = [f for f in drawn if f is not None]
    compute = _compute_summary(data, study_dir)
    sections = _sections(data, table, claims, compute, figures)
    _write_text(out / "report.md", _markdown(data, sections))
    _write_text(out / "report.html", _html(data, sections, out))
    write_json_atomic(
        out / "results.json",
        {"table": {m: table["cells"][m] for m in table["models"]}, "claims": claims, "compute": compute},
    )
    return out / "report.html"


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


# --------------------------------------------------------------------------- content


def _result_columns(table: dict) -> tuple[list[str], list[str]]:
    """Columns of the results table and their headers: families, then the tasks of families with more
    than one task. A family of one task is headed by it ("SC: tweets"), and Avg is left out when there is
    one family, so no column repeats another."""
    family_of = {t: s["family"] for per in table["per_task"].values() for t, s in per.items()}
    tasks_of = {f: [t for t in table["tasks"] if family_of.get(t) == f] for f in table["families"]}
    families = [f for f in table["families"] if f != ALL or len(table["families"]) > 2]
    cols, headers = [], []
    for f in families:
        alone = tasks_of[f][0] if len(tasks_of[f]) == 1 else None
        cols.append(f)
        headers.append("Avg" if f == ALL else f"{f.upper()}: {alone}" if alone else f.upper())
    for t in table["tasks"]:
        if len(tasks_of.get(family_of.get(t), [])) > 1:
            cols.append(t)
            headers.append(t)
    return cols, headers


def _cell(cell: dict | None, baseline: bool) -> str:
    if not cell:
        return "–"
    hw = cell.get("half_width")
    text = f"{cell['mean']:.2f}" + (f" ± {hw:.2f}" if hw is not None else "")
    vs = cell.get("vs_baseline")
    if vs is not None:
        sig = vs["ci_low"] is not None and (vs["ci_low"] > 0 or vs["ci_high"] < 0)
        text += f" ({vs['mean']:+.2f}, p={vs['p_value']:.2g}{'*' if sig else ''})"
    elif baseline:
        text += " (baseline)"
    return text


def _task_list(ev: dict, table: dict) -> str:
    """The evaluated tasks: those the spec names, else the whole suite's, as far as results show them."""
    if ev["tasks"]:
        return ", ".join(ev["tasks"])
    return "all" + (f" ({', '.join(table['tasks'])})" if table["tasks"] else "")


def _run_steps(run: dict, data: StudyData) -> str:
    """A run's pretraining steps as resolved (the first pretraining seed's node); none for a start model
    evaluated as is."""
    if not run.get("recipe"):
        return "0 (as is)"
    node = next(n for n in data.nodes if n.kind == "pretrain" and n.name.split("/")[1] == run["name"])
    return f"{node.config['steps']:,}"


def _settings(run: dict) -> str:
    """A run's recipe parameters and RunConfig overrides, as the Runs table shows them."""
    items = {**run.get("params", {}), **run.get("overrides", {})}
    return " ".join(f"{k}={v}" for k, v in items.items()) or "–"


def _sections(
    data: StudyData, table: dict, claims: list[dict], compute: dict, figures: list[dict]
) -> list[tuple]:
    """(title, kind, payload) blocks shared by the HTML and Markdown renderers."""
    spec = data.spec
    ev = spec["eval"]
    finished = len([n for n in data.nodes if n.kind != "report" and n.name in data.markers])
    config_rows = [
        ["study", spec["name"]],
        ["scale", f"{spec['scale']} ({spec.get('hardware', '')})"],
        ["model size", str(spec.get("size") or "as the start model")],
        [
            "steps / seq len / micro-batch / grad accum",
            " / ".join(
                str(spec.get(k) or "recipe default")
                for k in ("steps", "seq_len", "micro_batch", "grad_accum")
            ),
        ],
        ["pretraining seeds", ", ".join(map(str, spec["seeds"]))],
        [
            "data",
            "; ".join(
                f"{d['name']}: {'+'.join(d['corpus'])}, tokenizer {d['tokenizer']}, max docs {d['max_docs']}, seed {d['seed']}"
                for d in spec["data"]
            ),
        ],
        [
            "evaluation",
            f"suite {ev['suite']}, tasks {_task_list(ev, table)}, LRs {', '.join(f'{x:g}' for x in ev['lrs'])}, seeds {', '.join(map(str, ev['seeds']))}",
        ],
        ["nodes finished", f"{finished} of {len(data.nodes) - 1} (besides this report)"],
    ]
    run_rows = [
        [
            r.get("label") or r["name"],
            r["name"],
            r.get("recipe") or "(evaluated as is)",
            _settings(r),
            r.get("init") or "scratch",
            r["group"],
            _run_steps(r, data),
        ]
        for r in spec["runs"]
    ]
    cols, headers = _result_columns(table)
    result_rows = [
        [data.label(m)] + [_cell(table["cells"][m].get(c), m == table["baseline"]) for c in cols]
        for m in table["models"]
    ]
    compute_rows = [
        [k, _num(v["tokens"]), _num(v["flops"]), f"{v['wall_s']:.1f}", f"{v['cpu_s']:.1f}", str(v["nodes"])]
        for k, v in [*compute["by_kind"].items(), ("total", compute["total"])]
    ]
    run_compute = [
        [
            data.label(r["run"]),
            _num(r["tokens"]),
            str(r.get("budget") and _num(r["budget"])),
            _num(r["flops"]),
            f"{r['wall_s']:.1f}",
            r["note"],
        ]
        for r in compute["runs"]
    ]
    return [
        ("Configuration", "table", (["setting", "value"], config_rows)),
        ("Runs", "table", (["label", "id", "recipe", "settings", "start", "group", "steps"], run_rows)),
        (
            "Compute spent",
            "table",
            (["node kind", "tokens", "FLOPs", "wall s", "CPU s", "nodes"], compute_rows),
        ),
        (
            "Compute per pretraining run",
            "table",
            (["run", "tokens seen", "token budget", "FLOPs", "wall s", "note"], run_compute),
        ),
        (
            "",
            "text",
            f"FLOPs: {compute['flops_method']}. CPU s counts every thread of the process (and finished child "
            "processes): on a shared machine it says more than the wall time about how long a node takes alone.",
        ),
        (
            "Results",
            "table",
            (
                ["model", *headers],
                result_rows,
            ),
        ),
        (
            "",
            "text",
            "Mean ± 95% t-interval over fine-tuning seeds, test score at the learning rate chosen on validation "
            "per task; a family is the mean of its tasks. In parentheses: the paired difference to the baseline over the "
            "same seeds and its p-value (* where the 95% interval of the difference excludes 0).",
        ),
        ("Claims of the papers at this scale", "list", [f"**{c['text']}.** {c['sentence']}" for c in claims]),
        ("Figures", "figures", figures),
    ]


def _num(x) -> str:
    if x is None:
        return "–"
    return (
        f"{x:.3g}"
        if isinstance(x, float) and (abs(x) >= 1e6 or (x and abs(x) < 1e-2))
        else f"{x:,}"
        if isinstance(x, int)
        else f"{x:.3g}"
    )


def _compute_summary(data: StudyData, study_dir: Path) -> dict:
    """Totals per node kind and per pretraining run, from the compute records."""
    by_kind: dict[str, dict] = {}
    graph = data.nodes
    records = compute_records(study_dir, graph)
    for r in records:
        k = by_kind.setdefault(
            r["kind"], {"tokens": None, "flops": None, "wall_s": 0.0, "cpu_s": 0.0, "nodes": 0}
        )
        for field in ("tokens", "flops"):
            if r.get(field) is not None:
                k[field] = (k[field] or 0) + r[field]
        k["wall_s"] += r.get("wall_s") or 0.0
        k["cpu_s"] += r.get("cpu_s") or 0.0
        k["nodes"] += 1
    total = {"tokens": None, "flops": None, "wall_s": 0.0, "cpu_s": 0.0, "nodes": 0}
    for k in by_kind.values():
        for field in ("tokens", "flops"):
            if k[field] is not None:
                total[field] = (total[field] or 0) + k[field]
        total["wall_s"] += k["wall_s"]
        total["cpu_s"] += k["cpu_s"]
        total["nodes"] += k["nodes"]
    runs = []
    for r in records:
        if r["kind"] != "pretrain":
            continue
        node = next(n for n in graph if n.name == r["node"])
        budget = node.config.get("tokens")
        note = (
            ""
            if budget is None or r.get("tokens") in (None, budget)
            else "tokens seen differ from the budget"
        )
        runs.append(
            {
                "run": r["node"].split("/", 1)[1],
                "tokens": r.get("tokens"),
                "budget": budget,
                "flops": r.get("flops"),
                "wall_s": r.get("wall_s") or 0.0,
                "note": note,
            }
        )
    methods = sorted({r["flops_method"] for r in records if r.get("flops_method")})
    return {
        "by_kind": by_kind,
        "total": total,
        "runs": runs,
        "flops_method": "; ".join(methods) or "not recorded",
    }


# --------------------------------------------------------------------------- figures


def _figures(data: StudyData, table: dict, study_dir: Path, folder: Path) -> list[dict | None]:
    import matplotlib

    matplotlib.use("Agg")
    return [
        _fig_results(data, table, folder),
        _fig_curve(
            data,
            folder,
            "data_efficiency",
            data_efficiency(data),
            "step",
            "pretraining step",
            "Data efficiency: score against pretraining step",
            family=ALL,
        ),
        _fig_curve(
            data,
            folder,
            "lr_stability",
            lr_curves(data),
            "lr",
            "fine-tuning learning rate",
            "Fine-tuning LR sensitivity (mean test score over tasks)",
            logx=True,
        ),
        _fig_mask_ratio(mask_ratio_curve(data, table), folder),
        *[_fig_cka(r, folder) for r in data.results_of("cka").values()],
        _fig_loss(data, study_dir, folder),
    ]


def _figure(name: str, title: str, caption: str, png: Path, rows: list[dict]) -> dict:
    """A figure as the report renders it: its PNG, and the numbers behind it (CSV beside the PNG)."""
    return {
        "name": name,
        "title": title,
        "caption": caption,
        "png": png,
        "csv": f"figures/{name}.csv",
        "rows": rows,
    }


def _save(fig, folder: Path, name: str, rows: list[dict], title: str, caption: str) -> dict:
    png = folder / f"{name}.png"
    fig.savefig(png, dpi=90, bbox_inches="tight", metadata={"Software": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    with open(folder / f"{name}.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return _figure(name, title, caption, png, rows)


def _err(rows: list[dict]) -> list[list[float]]:
    lo = [r["mean"] - r["ci_low"] if r["ci_low"] is not None else 0.0 for r in rows]
    hi = [r["ci_high"] - r["mean"] if r["ci_high"] is not None else 0.0 for r in rows]
    return [lo, hi]


def _fig_results(data: StudyData, table: dict, folder: Path) -> dict | None:
    import matplotlib.pyplot as plt

    rows = [
        {
            "model": data.label(m),
            "family": f,
            "mean": c["mean"],
            "ci_low": c["ci_low"],
            "ci_high": c["ci_high"],
            "n": c["n"],
        }
        for m in table["models"]
        for f in table["families"]
        if (c := table["cells"][m].get(f))
    ]
    if not rows:
        return None
    models = list(dict.fromkeys(r["model"] for r in rows))
    fams = table["families"]
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(fams) * max(1, len(models)) / 2), 4))
    width = 0.8 / len(models)
    for i, m in enumerate(models):
        mine = {r["family"]: r for r in rows if r["model"] == m}
        xs = [j + i * width for j, f in enumerate(fams) if f in mine]
        sel = [mine[f] for f in fams if f in mine]
        ax.bar(xs, [r["mean"] for r in sel], width, yerr=_err(sel), capsize=3, label=m)
    ax.set_xticks([j + width * (len(models) - 1) / 2 for j in range(len(fams))])
    ax.set_xticklabels(["Avg" if f == ALL else f.upper() for f in fams])
    ax.set_ylabel("test score (task metric, %)")
    ax.legend(fontsize=8)
    ax.set_title("Results per task family (mean ± 95% CI over seeds)")
    return _save(
        fig,
        folder,
        "results",
        rows,
        "Results per family",
        "Test score at the LR chosen on validation, averaged over the family's tasks; bars are 95% t-intervals over fine-tuning seeds.",
    )


def _fig_lines(folder: Path, name: str, rows: list[dict], title: str, caption: str, **axes) -> dict | None:
    """A line figure drawn by `analysis.plots.line_panels` (PNG + CSV + JSON), as a report figure."""
    from encoderlab.analysis.plots import line_panels

    if len({r[axes["x"]] for r in rows}) < 2:
        return None
    png = line_panels(
        rows, folder / name, y="mean", panel=None, band=("ci_low", "ci_high"), title=title, **axes
    )
    return _figure(name, title, caption, png, rows)


def _fig_curve(
    data: StudyData,
    folder: Path,
    name: str,
    rows: list[dict],
    x: str,
    xlabel: str,
    title: str,
    family: str | None = None,
    logx: bool = False,
) -> dict | None:
    rows = [
        {**r, "model": data.label(r["model"])} for r in rows if family is None or r.get("family") == family
    ]
    caption = "Points are means over fine-tuning seeds; bands are 95% t-intervals."
    return _fig_lines(
        folder, name, rows, title, caption,
        x=x, series="model", xlabel=xlabel, ylabel="mean test score over tasks (%)", xlog=logx,
    )  # fmt: skip


def _fig_mask_ratio(rows: list[dict], folder: Path) -> dict | None:
    rows = [
        {**r, "ratio_pct": 100 * r["ratio"], "family": "Avg" if r["family"] == ALL else r["family"].upper()}
        for r in rows
    ]
    caption = "Score per family against the MLM masking ratio of each run."
    return _fig_lines(
        folder, "mask_ratio", rows, "Masking-ratio sensitivity", caption,
        x="ratio_pct", series="family", xlabel="MLM masking ratio (%)", ylabel="test score (%)",
    )  # fmt: skip


def _fig_cka(result: dict, folder: Path) -> dict | None:
    import matplotlib.pyplot as plt

    div = result.get("divergence")
    if not div:
        return None
    noise = result.get("noise_divergence")
    layers = list(range(len(div)))
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(layers, div, marker="o", label=f"{result['a']} vs {result['b']}")
    if noise:
        ax.plot(layers, noise, marker="s", linestyle="--", label="seed noise")
    ax.set_xlabel("layer (0 = embeddings output)")
    ax.set_ylabel("divergence 1 − linear CKA")
    ax.set_title(f"CKA divergence per layer: {result['a']} vs {result['b']}")
    ax.legend(fontsize=8)
    rows = [
        {
            "layer": i,
            "divergence": d,
            "noise_divergence": noise[i] if noise else None,
            "ratio": (result.get("ratio") or [None] * len(div))[i],
        }
        for i, d in enumerate(div)
    ]
    name = f"cka_{result['a']}".replace("/", "_")
    return _save(
        fig,
        folder,
        name,
        rows,
        f"CKA divergence: {result['a']} vs {result['b']}",
        "Linear CKA (float64) of mean-pooled hidden states per layer on held-out texts; the dashed line is the divergence between two runs that differ only in seed.",
    )


def _fig_loss(data: StudyData, study_dir: Path, folder: Path) -> dict | None:
    """Pretraining loss against tokens seen, from each run's metrics.jsonl."""
    import matplotlib.pyplot as plt

    rows = []
    for n in data.nodes:
        res = data.markers.get(n.name, {}).get("result", {})
        if n.kind != "pretrain" or not res.get("metrics"):
            continue
        path = node_dir(study_dir, n) / res["metrics"]
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("loss") is not None and math.isfinite(rec["loss"]):
                rows.append(
                    {
                        "model": data.label(n.name.split("/", 1)[1]),
                        "step": rec.get("step"),
                        "loss": rec["loss"],
                        "objective": rec.get("objective", ""),
                    }
                )
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model]
        ax.plot([r["step"] for r in mine], [r["loss"] for r in mine], label=model)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("training loss (nats/token, own objective)")
    ax.set_title("Pretraining loss")
    ax.legend(fontsize=8)
    return _save(
        fig,
        folder,
        "pretraining_loss",
        rows,
        "Pretraining loss",
        "Each run's loss on its own objective (MLM and CLM losses are not comparable to each other).",
    )


# --------------------------------------------------------------------------- rendering


def _markdown(data: StudyData, sections: list[tuple]) -> str:
    spec = data.spec
    lines = [f"# Study {spec['name']} at scale {spec['scale']}", "", spec["description"], ""]
    for title, kind, payload in sections:
        if title:
            lines += [f"## {title}", ""]
        if kind == "table":
            head, rows = payload
            lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
        elif kind == "text":
            lines.append(payload)
        elif kind == "list":
            lines += [f"- {item}" for item in payload] or ["(none)"]
        elif kind == "figures":
            for f in payload:
                lines += [
                    f"### {f['title']}",
                    "",
                    f"![{f['title']}](figures/{f['png'].name})",
                    "",
                    f"{f['caption']} Numbers: [{f['csv']}]({f['csv']}).",
                    "",
                ]
                lines += _md_numbers(f["rows"])
            if not payload:
                lines.append("(no figure yet: no finished results)")
        lines.append("")
    return "\n".join(lines)


def _md_numbers(rows: list[dict], limit: int = 40) -> list[str]:
    head = list(rows[0])
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_short(r[h]) for h in head) + " |" for r in rows[:limit]]
    if len(rows) > limit:
        out.append(f"\n({len(rows) - limit} more rows in the CSV)")
    return [*out, ""]


def _short(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem auto;max-width:72rem;color:#1d2330;padding:0 1rem}
h1{border-bottom:3px solid #3b6fb6;padding-bottom:.3rem}h2{margin-top:2rem;color:#23446f}
table{border-collapse:collapse;margin:.5rem 0;font-size:.9rem}td,th{border:1px solid #c7cfdb;padding:.25rem .5rem;text-align:left}
th{background:#e8eef7}tr:nth-child(even) td{background:#f6f8fb}li{margin:.4rem 0}
figure{margin:1rem 0;padding:.5rem;border:1px solid #dde3ec;background:#fbfcfe}img{max-width:100%}
details{margin:.3rem 0 1rem}figcaption{font-size:.9rem;color:#444}
"""


def _md_inline(text: str) -> str:
    """Escape, then render **bold** (the only markup the sections use)."""
    parts = html.escape(text).split("**")
    return "".join(f"<strong>{p}</strong>" if i % 2 else p for i, p in enumerate(parts))


def _html(data: StudyData, sections: list[tuple], out: Path) -> str:
    spec = data.spec
    body = [
        f"<h1>Study {html.escape(spec['name'])} at scale {html.escape(spec['scale'])}</h1>",
        f"<p>{html.escape(spec['description'])}</p>",
    ]
    for title, kind, payload in sections:
        if title:
            body.append(f"<h2>{html.escape(title)}</h2>")
        if kind == "table":
            body.append(_html_table(*payload))
        elif kind == "text":
            body.append(f"<p>{html.escape(payload)}</p>")
        elif kind == "list":
            body.append("<ul>" + "".join(f"<li>{_md_inline(i)}</li>" for i in payload) + "</ul>")
        elif kind == "figures":
            for f in payload:
                b64 = base64.b64encode(f["png"].read_bytes()).decode()
                head = list(f["rows"][0])
                numbers = _html_table(head, [[_short(r[h]) for h in head] for r in f["rows"]])
                body.append(
                    f'<figure><h3>{html.escape(f["title"])}</h3><img alt="{html.escape(f["title"])}" src="data:image/png;base64,{b64}">'
                    f"<figcaption>{html.escape(f['caption'])} Numbers: <code>{html.escape(f['csv'])}</code>.</figcaption>"
                    f"<details><summary>numbers behind the figure</summary>{numbers}</details></figure>"
                )
            if not payload:
                body.append("<p>(no figure yet: no finished results)</p>")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>encoderlab study {html.escape(spec['name'])} ({html.escape(spec['scale'])})</title><style>{_CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    buf = io.StringIO()
    buf.write(
        "<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr></thead><tbody>"
    )
    for row in rows:
        buf.write("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>")
    buf.write("</tbody></table>")
    return buf.getvalue()


def report_node(ctx, figures: bool = True) -> dict:
    """The graph's last node: write the report of the study folder."""
    path = write_report(ctx.study_dir, figures=figures)
    return {"path": str(path.relative_to(ctx.study_dir))}
