"""The Markdown report of explore_mobilenetv1.py: every figure comes from the
run's data; the verdicts on the paper's findings are computed from them."""

from __future__ import annotations

import statistics

PLOTS = "explore/mobilenetv1"
DEPTHWISE = {"npu": "native (OP_DEPTH_CONV)", "per-channel": "emulated per channel", "cpu": "on the CPU"}


def _get(configurations: list[dict], **match) -> dict:
    found = [c for c in configurations if all(c[k] == v for k, v in match.items())]
    assert len(found) == 1, match
    return found[0]


def _depth(c: dict) -> int:
    return c["cycles_by_operation"]["npu"].get("DEPTH", 0)


def _tiled(c: dict, shapes: dict[str, tuple[int, int, int]]) -> int:
    """NPU layers that do not fit whole: split into channel tiles or row bands."""
    return sum(1 for x in c["layers"] if x["device"] == "mynpu" and (
        x["tiling"]["output_channels"] < shapes[x["name"]][0] or x["tiling"]["output_rows"] < shapes[x["name"]][1]))


def _m(cycles: float) -> str:
    return f"{cycles / 1e6:.2f} M"


def _refusals(recognised, reference: dict) -> list[str]:
    """One line per reason a layer with MACs stays on the CPU: layers (calls) and MACs."""
    rows = {x["name"]: x for x in reference["layers"]}
    reasons: dict[str, list] = {}
    for d in recognised.dispatches:
        if d.kind != "other" and rows[d.name]["device"] == "cpu":
            reasons.setdefault(rows[d.name]["reason"], []).append(d)
    return [f"`{reason}`: {sum(d.calls for d in found)} layers, {sum(d.macs * d.calls for d in found) / 1e6:.0f} M "
            "MACs" for reason, found in reasons.items()]


def _layers(count: int) -> str:
    return f"{count} layer is" if count == 1 else f"{count} layers are"


def _npu_coverage(npu_layers: int, reference: dict, refusals: list[str]) -> list[str]:
    """What the NPU runs, and why the rest stays on the CPU (if anything with MACs does)."""
    share = f"{npu_layers} of the 28 layers, {100 * reference['npu_mac_share']:.1f}% of the MACs"
    if not refusals:
        return [f"**What the NPU runs.** {share}, in every configuration with native depthwise (fewer where a "
                "layer cannot be tiled into the SRAM). The CPU keeps only dispatches without MACs: the input's "
                "copy, the classifier's average pool, and the softmax.", ""]
    return [f"**What the NPU runs.** {share}, in every configuration with native depthwise (fewer where a "
            "layer cannot be tiled into the SRAM); the other layers stay on the CPU for reasons of the layer "
            "recognition, not of the NPU:", "", *(f"- {line}" for line in refusals), "",
            "These cost the same CPU cycles in every configuration; the study below compares the NPU's cycles, "
            "which is what the paper's figure shows.", ""]


def _cpu_time_note(configurations: list[dict]) -> str:
    def span(depthwise_on_cpu: bool, digits: int) -> str:
        times = [c["total_us"] / 1000 for c in configurations if (c["depthwise"] == "cpu") == depthwise_on_cpu]
        return f"{min(times):,.{digits}f} to {max(times):,.{digits}f} ms"

    return (f"with the depthwise layers on the CPU an inference takes {span(True, 0)}, nearly all of it on the CPU; "
            f"with them on the NPU (native or emulated) {span(False, 1)}.")


def _placement(recognised, reference: dict) -> list[str]:
    lines = ["| # | dispatch | kind | MACs per call | calls | where | why not on the NPU |",
             "|---:|---|---|---:|---:|---|---|"]
    rows = {x["name"]: x for x in reference["layers"]}
    for i, d in enumerate(recognised.dispatches):
        x = rows[d.name]
        lines.append(f"| {i} | `{d.name.split('_dispatch_')[-1]}` | {d.kind} | {d.macs:,} | {d.calls} | "
                     f"{'NPU' if x['device'] == 'mynpu' else 'CPU'} | {x['reason']} |")
    return lines


def _sweep_table(configurations: list[dict], shapes) -> list[str]:
    lines = ["| configuration | depthwise | NPU cycles | CONV | POINTWISE | DEPTH | DENSE | tiled NPU layers | "
             "utilisation | CPU cycles | total (ms) |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in configurations:
        npu = c["cycles_by_operation"]["npu"]
        lines.append(f"| {c['label']} | {c['depthwise']} | {c['npu_cycles']:,} | {npu.get('CONV', 0):,} | "
                     f"{npu.get('POINTWISE', 0):,} | {npu.get('DEPTH', 0):,} | {npu.get('DENSE', 0):,} | "
                     f"{_tiled(c, shapes)} | {100 * c['utilisation']:.1f}% | {c['cpu_cycles']:,} | "
                     f"{c['total_us'] / 1000:,.1f} |")
    return lines


def _finding_parallelism(configurations, shapes) -> tuple[bool, list[str]]:
    """Holds when output parallelism is faster at 1 MiB and 256 MiB (few or no tiled layers) and input
    parallelism at 512 KiB, for every depthwise scenario and PE count."""
    lines = ["| depthwise | PEs | SRAM | tiled NPU layers | output (O) | input (I) | faster |",
             "|---|---:|---|---:|---:|---:|---|"]
    holds = True
    for depthwise in ("npu", "per-channel", "cpu"):
        for pes in (64, 128):
            for sram in (262144, 1024, 512):
                o = _get(configurations, depthwise=depthwise, pes=pes, sram_kib=sram, parallel="output")
                i = _get(configurations, depthwise=depthwise, pes=pes, sram_kib=sram, parallel="input")
                faster = "O" if o["npu_cycles"] < i["npu_cycles"] else "I"
                holds &= faster == ("I" if sram == 512 else "O")
                lines.append(f"| {depthwise} | {pes} | {o['label'].split('-')[0]} | {_tiled(o, shapes)} | "
                             f"{o['npu_cycles']:,} | {i['npu_cycles']:,} | {faster} |")
    return holds, lines


def _tile_example(configuration: dict, shapes) -> str:
    """The tiled NPU layer with the most MACs, and its tiles."""
    tiled = [x for x in configuration["layers"] if x["device"] == "mynpu" and (
        x["tiling"]["output_channels"] < shapes[x["name"]][0] or x["tiling"]["output_rows"] < shapes[x["name"]][1])]
    x = max(tiled, key=lambda layer: layer["macs"])
    c, h, w = shapes[x["name"]]
    return (f"`{x['name'].split('_dispatch_')[-1]}` ({c} output channels of {h}x{w}) runs in tiles of "
            f"{x['tiling']['output_channels']} channels and {x['tiling']['output_rows']} rows")


def _finding_depthwise(configurations) -> tuple[float, float, list[str]]:
    lines = ["| configuration | DEPTH native | DEPTH emulated | emulated / native | NPU cycles native | "
             "NPU cycles emulated |", "|---|---:|---:|---:|---:|---:|"]
    ratios = []
    for c in configurations:
        if c["depthwise"] != "npu":
            continue
        e = _get(configurations, depthwise="per-channel", pes=c["pes"], sram_kib=c["sram_kib"],
                 parallel=c["parallel"])
        ratio = _depth(e) / _depth(c)
        ratios.append(ratio)
        lines.append(f"| {c['label']} | {_depth(c):,} | {_depth(e):,} | {ratio:.1f}x | {c['npu_cycles']:,} | "
                     f"{e['npu_cycles']:,} |")
    return min(ratios), max(ratios), lines


def _finding_pes(configurations) -> tuple[bool, list[str]]:
    lines = ["| depthwise | parallelism | 1M-128 NPU cycles | 256M-64 NPU cycles | 128 PEs + 1 MiB faster by |",
             "|---|---|---:|---:|---:|"]
    holds = True
    for depthwise in ("npu", "per-channel", "cpu"):
        for parallel in ("output", "input"):
            a = _get(configurations, depthwise=depthwise, pes=128, sram_kib=1024, parallel=parallel)
            b = _get(configurations, depthwise=depthwise, pes=64, sram_kib=262144, parallel=parallel)
            holds &= a["npu_cycles"] < b["npu_cycles"]
            lines.append(f"| {depthwise} | {parallel} | {a['npu_cycles']:,} | {b['npu_cycles']:,} | "
                         f"{b['npu_cycles'] / a['npu_cycles']:.2f}x |")
    return holds, lines


def _pixels_table(configurations, pixels) -> list[str]:
    lines = ["| configuration | depthwise | best of O and I | output pixels (P) | P faster by | utilisation O / I / P |",
             "|---|---|---:|---:|---:|---|"]
    for p in pixels:
        o = _get(configurations, depthwise=p["depthwise"], pes=p["pes"], sram_kib=p["sram_kib"], parallel="output")
        i = _get(configurations, depthwise=p["depthwise"], pes=p["pes"], sram_kib=p["sram_kib"], parallel="input")
        best = min(o["npu_cycles"], i["npu_cycles"])
        lines.append(f"| {p['label']} | {p['depthwise']} | {best:,} | {p['npu_cycles']:,} | "
                     f"{best / p['npu_cycles']:.2f}x | {100 * o['utilisation']:.0f}% / {100 * i['utilisation']:.0f}% "
                     f"/ {100 * p['utilisation']:.0f}% |")
    return lines


def _scalesim(data: dict, configurations: list[dict], shapes) -> tuple[list[str], dict]:
    s = data["scalesim"]
    if s is None:
        return ["SCALE-Sim was not run (--no-scalesim)."], {}
    spec = s["spec"]
    rows, cols = spec["array"]
    ours = {p: _get(configurations, depthwise="npu", pes=rows * cols, sram_kib=1024, parallel=p)
            for p in ("output", "input")}
    pixels = _get(data["pixels"], depthwise="npu", pes=rows * cols, sram_kib=1024)
    layer = {p: {x["name"]: x for x in c["layers"]} for p, c in {**ours, "output-pixels": pixels}.items()}
    lines = [f"SCALE-Sim {rows}x{cols} weight-stationary array ({rows * cols} PEs), IFMAP/filter/OFMAP SRAM "
             f"{' / '.join(str(k) for k in spec['sram_kib'])} KiB (1 MiB in all), {spec['bandwidth']} words per "
             f"cycle to DRAM; npukit's mynpu with {rows * cols} PEs, 1 MiB, DMA {spec['bandwidth']} B/cycle, "
             "depthwise native. mynpu: the layer's cycles, DMA included (compute alone in brackets); SCALE-Sim: "
             "its total cycles with the stalls waiting for DRAM, and its compute cycles (total less stalls).", "",
             "| layer | MACs | mynpu O | mynpu I | mynpu P | SCALE-Sim total | SCALE-Sim stalls | SCALE-Sim compute | "
             "SCALE-Sim mapping efficiency | SCALE-Sim compute / mynpu P compute | SCALE-Sim seconds |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    total = {"output": 0, "input": 0, "output-pixels": 0, "scalesim": 0, "stalls": 0, "compute": 0}
    ratios: dict[str, list[float]] = {}
    for r in s["results"]:
        o, i, p = (layer[k][r["name"]] for k in ("output", "input", "output-pixels"))
        for key, x in (("output", o), ("input", i), ("output-pixels", p)):
            total[key] += x["cycles"]
        compute = r["cycles"] - r["stall_cycles"]
        total["scalesim"] += r["cycles"]
        total["stalls"] += r["stall_cycles"]
        total["compute"] += compute
        ratio = compute / p["compute_cycles"]
        ratios.setdefault(o["kind"], []).append(ratio)
        depthwise = " (one channel x %d)" % shapes[r["name"]][0] if o["kind"] == "depthwise" else ""
        lines.append(f"| `{r['name'].split('_dispatch_')[-1]}`{depthwise} | {o['macs']:,} | {o['cycles']:,} "
                     f"({o['compute_cycles']:,}) | {i['cycles']:,} | {p['cycles']:,} ({p['compute_cycles']:,}) | "
                     f"{r['cycles']:,} | {r['stall_cycles']:,} | {compute:,} | {r['mapping_efficiency']:.1f}% | "
                     f"{ratio:.2f} | {r['seconds']:.1f} |")
    lines.append(f"| all | | {total['output']:,} | {total['input']:,} | {total['output-pixels']:,} | "
                 f"{total['scalesim']:,} | {total['stalls']:,} | {total['compute']:,} | | | "
                 f"{sum(r['seconds'] for r in s['results']):.0f} |")
    seconds = [r["seconds"] for r in s["results"]]
    lines += ["", f"SCALE-Sim took {s['seconds']:.0f} s for these {len(seconds)} layers "
              f"({statistics.median(seconds):.1f} s median per layer, {min(seconds):.1f} to {max(seconds):.1f} s; "
              "its depthwise layers simulate one channel, which SCALE-Sim's own depthwise handling repeats per "
              "channel); `npukit explore` costs a layer-configuration in about a millisecond."]
    stalled = [f"`{r['name'].split('_dispatch_')[-1].split('_')[0]}` ({r['stall_cycles']:,})"
               for r in s["results"] if r["stall_cycles"]]
    return lines, {"ratios": ratios, "total": total, "stalled": stalled}


def _range(values: list[float]) -> str:
    return f"{min(values):.2f}" if len(values) == 1 else f"{min(values):.2f} to {max(values):.2f}"


def _scalesim_explained(figures: dict) -> list[str]:
    if not figures:
        return []
    ratios, total = figures["ratios"], figures["total"]
    return [
        "Where the two machines' models differ:", "",
        "- **Memory.** SCALE-Sim models the DRAM traffic its folds generate through three separate "
        "double-buffered scratchpads and stalls the array whenever that traffic exceeds the bandwidth; its "
        f"stalls are {100 * total['stalls'] / total['scalesim']:.0f}% of its cycles here, in "
        f"{', '.join(figures['stalled'])}. mynpu's DMA moves each tile once and the layer takes compute + DMA "
        "cycles (the larger of the two when it double-buffers), DMA cycles being bytes over bandwidth; its "
        "single SRAM also holds more of one operand than a third of it does.",
        "- **Mapping.** SCALE-Sim's weight-stationary array holds a block of `rows` reduction elements (input "
        "channels x kernel taps) by `columns` filters and streams the output pixels through it: "
        "`ceil(C*KH*KW / rows) x ceil(filters / columns)` folds, each as long as the pixels plus the array's fill "
        "and drain. mynpu's output parallelism puts output channels alone on the PEs, its input parallelism "
        "input channels alone; the output-pixels grid covers channels and pixels like the array, so it is the "
        "one to compare: SCALE-Sim's compute cycles over mynpu P's are "
        f"{_range(ratios.get('pointwise', [0]))} for the pointwise layers and "
        f"{_range(ratios.get('conv', [0]))} for the first convolution (its 27-element reduction fills two folds "
        "of 16 rows, 5 of them idle in the second).",
        "- **Depthwise.** SCALE-Sim has no depthwise mapping: it runs every channel as a one-channel, one-filter "
        "convolution (its 'DP' layers), filling 9 of the array's rows and one column (7% mapping efficiency); "
        "mynpu's OP_DEPTH_CONV puts the channels on the PEs. SCALE-Sim's depthwise layers take "
        f"{_range(ratios.get('depthwise', [0]))}x mynpu P's compute cycles: they are an emulation, like the "
        "per-channel scenario above.",
        "- **One pixel.** The classifier (a 1x1 convolution over one pixel) streams a single pixel through "
        "each of SCALE-Sim's folds, so the fill and drain of the array dominate "
        f"({_range(ratios.get('dense', [0]))}x mynpu's compute cycles); mynpu's instruction has no per-pass cost.",
        "- **Overheads.** mynpu counts 16 cycles per instruction and 8 per DMA; SCALE-Sim's skew is per fold. "
        "Neither models the requantization or the activation.", "",
        "So the two agree where both machines map a layer alike (pointwise layers on a full grid, compute "
        "cycles); they differ by the memory system and by the mappings each lacks (SCALE-Sim: depthwise and "
        "one-pixel layers; mynpu's O and I: layers with few channels on the parallel axis).",
    ]


def render(data: dict, recognised) -> str:
    doc = data["document"]
    configurations = doc["configurations"]
    shapes = {d.name: d.spec.ofm_chw for d in recognised.dispatches if d.spec is not None}
    reference = _get(configurations, depthwise="npu", pes=128, sram_kib=262144, parallel="output")
    cpu = doc["cpu"]
    sweep = statistics.median(data["sweep_seconds"])
    rate = doc["layers"] * len(configurations) / sweep
    npu_layers = sum(d.calls for d in recognised.dispatches if d.spec is not None)
    parallel_holds, parallel_lines = _finding_parallelism(configurations, shapes)
    low, high, depth_lines = _finding_depthwise(configurations)
    pes_holds, pes_lines = _finding_pes(configurations)
    o512 = _get(configurations, depthwise="npu", pes=64, sram_kib=512, parallel="output")
    i512 = _get(configurations, depthwise="npu", pes=64, sram_kib=512, parallel="input")
    o1m = _get(configurations, depthwise="npu", pes=64, sram_kib=1024, parallel="output")
    i1m = _get(configurations, depthwise="npu", pes=64, sram_kib=1024, parallel="input")
    kws = data["kws"]
    scalesim_lines, scalesim_figures = _scalesim(data, configurations, shapes)
    gains = []
    for p in data["pixels"]:
        best = min(_get(configurations, depthwise=p["depthwise"], pes=p["pes"], sram_kib=p["sram_kib"],
                        parallel=k)["npu_cycles"] for k in ("output", "input"))
        gains.append(best / p["npu_cycles"])
    pixels_win = min(gains) > 1
    p_native = _get(data["pixels"], depthwise="npu", pes=128, sram_kib=1024)
    p_emulated = _get(data["pixels"], depthwise="per-channel", pes=128, sram_kib=1024)
    b64 = _get(configurations, depthwise="npu", pes=64, sram_kib=262144, parallel="output")
    a128 = _get(configurations, depthwise="npu", pes=128, sram_kib=1024, parallel="output")
    cpu_growth = (_get(configurations, depthwise="cpu", pes=64, sram_kib=1024, parallel="output")["cpu_cycles"]
                  - _get(configurations, depthwise="npu", pes=64, sram_kib=1024, parallel="output")["cpu_cycles"])
    lines = [
        "# MobileNetV1 on mynpu: the TinyML 2021 design-space study with `npukit explore`", "",
        "Written by `benchmarks/explore_mobilenetv1.py` on this machine "
        f"({data['host']}, 2 cores shared with other work). The paper (\"Compiler Toolchains for Deep Learning "
        "Workloads on Embedded Platforms\", TinyML 2021, Fig. 4) runs MobileNetV1 on a simulated coarse-grained "
        "int8 NPU in 36 configurations: depthwise convolutions native, emulated one channel at a time with the "
        "convolution instruction, or on the CPU; 64 or 128 PEs; 512 KiB, 1 MiB or 256 MiB of SRAM; input- or "
        "output-channel parallelism.", "",
        "## The model", "",
        "MobileNetV1 1.0 224x224, int8: Keras `MobileNet(weights=None)` with a batch of one, converted by the "
        "TFLite converter with full int8 quantization calibrated on 8 seeded random inputs "
        "(`benchmarks/mobilenet_v1.py`; cached, not in the repository). "
        f"{recognised.macs:,} MACs per inference in 28 layers (1 convolution, 13 depthwise, 13 pointwise, the "
        "1x1 classifier), read by npukit's TFLite importer. IREE gives the four equal 14x14x512 depthwise and "
        "pointwise pairs one executable each, called four times with the weights at run-time offsets; npukit "
        "gives every call an executable of its own again (`14`, `14_1`, ...), so each layer's weights are "
        "compile-time constants a command stream can address.", "",
        *_npu_coverage(npu_layers, reference, _refusals(recognised, reference)),
        "Placement in the 256M-128-O configuration:", "",
        *_placement(recognised, reference), "",
        "## Speed", "",
        f"- One IREE compile up to the NPU's partitioning: {doc['seconds']['compile']:.1f} s. The sweep of "
        f"{len(configurations)} configurations x {doc['layers']} layers: {sweep:.2f} s (median of "
        f"{len(data['sweep_seconds'])} runs: {', '.join(f'{t:.2f}' for t in data['sweep_seconds'])} s), "
        f"**{rate:,.0f} layer-configurations per second** on all cores; the whole `npukit.explore` with the plots "
        f"{data['explore_seconds']:.1f} s.",
        f"- One full `npukit compile -t mynpu` of one configuration (1M-128-O): {data['compile_seconds']:.1f} s; "
        "its report "
        + ("equals" if data["compile_agrees"] else "**differs from**")
        + " the sweep's entry for that configuration (total and per-dispatch cycles).",
        f"- kws_int8, 24 configurations: `npukit explore` {kws['explore']:.1f} s (runs: "
        f"{', '.join(f'{t:.1f}' for t in kws['explore_runs'])}), one `npukit compile -t mynpu` "
        f"{kws['compile']:.1f} s (runs: {', '.join(f'{t:.1f}' for t in kws['compile_runs'])}): command lines, "
        "alternating, medians. On this shared machine the load from other work varies the times by a factor "
        "of several; both ran under the same load.",
        "- SCALE-Sim on the same layers: below.", "",
        "## The sweep", "",
        f"![cycles]({PLOTS}/cycles.png)", "",
        "Top: the NPU's cycles per inference by operation type, as the paper plots them. Bottom: the time per "
        f"inference with the layers on the CPU ({cpu['core']} at {cpu['clock_mhz']:g} MHz, npukit's tuned kernels' "
        "measured instructions per MAC, benchmarks/reports/explore/cpu_costs.md; dispatches without MACs, "
        f"such as the classifier's pooling and softmax, are not costed): {_cpu_time_note(configurations)}", "",
        *_sweep_table(configurations, shapes), "",
        "## The paper's three findings", "",
        "### 1. Output parallelism wins until tiling starts, then input parallelism does", "",
        f"**{'Reproduced' if parallel_holds else 'Not reproduced in every configuration'}.** With 256 MiB no "
        f"layer is tiled and with 1 MiB {_tiled(o1m, shapes)}; output parallelism is faster there (64 PEs, 1 MiB: "
        f"O {_m(o1m['npu_cycles'])} against I {_m(i1m['npu_cycles'])} cycles). At 512 KiB {_tiled(o512, shapes)} "
        f"of the NPU's layers are tiled and input parallelism wins (O {_m(o512['npu_cycles'])}, I "
        f"{_m(i512['npu_cycles'])}).", "",
        *parallel_lines, "",
        "Why, in the cycle model: under output parallelism an instruction takes `ceil(OFM_C / P)` passes, so it "
        "is efficient only while a tile has at least P output channels. The scheduler tiles output channels "
        "first (the whole input stays in the SRAM beside a tile of outputs), and at 512 KiB the large early "
        f"layers get tiles of a few channels: at 512K-64-O, {_tile_example(o512, shapes)}, so each pass keeps "
        "that many of the 64 PEs busy. Input parallelism costs `ceil(IFM_C / P)` per output whatever the tile, "
        "so it loses nothing when output channels are tiled; it loses elsewhere, on layers with few input "
        "channels (the first convolution has 3: 3 of 64 PEs busy, the CONV segment of every I bar). Whether "
        "the finding holds thus depends on the scheduler as much as on the hardware: one that tiled output "
        "rows before channels would keep output parallelism's passes full at 512 KiB.", "",
        "### 2. Emulated depthwise is drastically slower than native", "",
        f"**Reproduced.** The depthwise layers take {low:.0f}x to {high:.0f}x the cycles when each channel is an "
        "OP_CONV of one input and one output channel:", "",
        *depth_lines, "",
        "Why: a one-channel convolution keeps one PE of P busy under output parallelism (`ceil(1 / P)` = 1 pass "
        "per tap and pixel) and under input parallelism alike, where OP_DEPTH_CONV spreads the channels over the "
        "PEs; each emulating instruction also pays the 16-cycle instruction overhead and its channel's plane "
        "moves by DMA on its own. With depthwise on the CPU the NPU's cycles drop by the depthwise layers', "
        f"and the CPU's grow by {cpu_growth:,} cycles ({cpu['instructions_per_mac']['depthwise']:.1f} "
        f"instructions per MAC for the tuned depthwise kernel on {cpu['core']}).", "",
        "### 3. 128 PEs with 1 MiB beat 64 PEs with 256 MiB", "",
        f"**{'Reproduced' if pes_holds else 'Not reproduced in every configuration'}** for every depthwise "
        "scenario and parallelism:", "",
        *pes_lines, "",
        f"Why: with 1 MiB only {_layers(_tiled(o1m, shapes))} tiled, so the rest of 256 MiB saves little (64 "
        f"PEs, O: {100 * (1 - b64['npu_cycles'] / o1m['npu_cycles']):.0f}% fewer cycles than 1 MiB), while "
        "doubling the PEs halves the passes of every layer with at least 128 channels on the parallel axis (1 "
        f"MiB, O: {100 * (1 - a128['npu_cycles'] / o1m['npu_cycles']):.0f}% fewer cycles with 128 PEs).", "",
        "## The output-pixels dataflow", "",
        "The same grid with the PEs as output channels x output pixels (`--mynpu-parallel output-pixels`, "
        "docs/mynpu-isa.md): each instruction gets the grid shape that fits its channels and pixels, so layers "
        "with few channels (and one-channel emulated depthwise convolutions) still fill the PEs. It is "
        f"{'faster than the better of O and I in every configuration' if pixels_win else 'not faster everywhere'}"
        f" ({min(gains):.2f}x to {max(gains):.2f}x), and it makes the emulation nearly free: 1M-128-P takes "
        f"{p_native['npu_cycles']:,} cycles with OP_DEPTH_CONV and {p_emulated['npu_cycles']:,} emulated.", "",
        *_pixels_table(configurations, data["pixels"]), "",
        "## Cost against time", "",
        f"![pareto]({PLOTS}/pareto.png)", "",
        f"![layers]({PLOTS}/layers.png)", "",
        "## SCALE-Sim on the same layers", "",
        *scalesim_lines, "",
        *_scalesim_explained(scalesim_figures),
    ]
    return "\n".join(lines) + "\n"
