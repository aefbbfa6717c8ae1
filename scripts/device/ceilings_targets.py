#!/usr/bin/env python3
"""Prints the ceilings issue's targets as ratios from two `timeroof export` files
of full `timeroof ceilings` runs on the same GPU. A benchmark, not a test: it
exits 0 and says MISS where a target is missed."""
import argparse
import json
import re


def load(path):
    run = json.load(open(path))["runs"][0]
    return run["machine"]["gpu"]["name"], {c["name"]: c for c in run["machine"]["ceilings"]}


def working_set(path):
    return json.load(open(path))["runs"][0]["machine"].get("working_set") or []


def max_loaded_rate(l2_method):
    """The highest rate in bytes loaded of the L2 search's variants (its method lists
    each as '... 10.1 TB/s'), in B/s; None without that list."""
    listed = l2_method.split("variants by bytes loaded: ", 1)
    if len(listed) < 2:
        return None
    # The search's own list only: the working-set pattern after it partly hits L1.
    search = re.split(r"; working-set pattern|; bytes =", listed[1])[0]
    rates = [float(x) * 1e12 for x in re.findall(r" ([0-9.]+) TB/s", search)]
    return max(rates, default=None)


def pattern_served_share(l2_method):
    """The largest share of its loaded bytes the L2 slices served for the working-set
    sweep's pattern, profiled beside the L2 search (None in older runs)."""
    shares = re.findall(r"working-set pattern [^;]*?: the slices served [^,]*, ([0-9.]+)% of the bytes loaded",
                        l2_method)
    return max(float(x) for x in shares) / 100 if shares else None


def busiest_l2_unit(l2_method):
    """The share of its peak at which the kept L2 variant ran the busiest L2 unit
    (lts__throughput, from the counters the search profiles), or None."""
    kept = l2_method.split(" (", 1)[0].replace("l2_read_kernel ", "", 1)
    m = re.search(re.escape(kept) + r": the slices served .*?busiest L2 unit at ([0-9.]+)%", l2_method)
    return float(m.group(1)) / 100 if m else None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("run1")
    parser.add_argument("run2")
    parser.add_argument("--quick-seconds", type=float)
    parser.add_argument("--full-seconds", type=float)
    parser.add_argument("--framework-copy",
                        help="framework_copy.py's JSON: PyTorch's copy rates in the same call")
    args = parser.parse_args()
    gpu, first = load(args.run1)
    gpu2, second = load(args.run2)
    assert gpu == gpu2, "compare runs of the same GPU kind only"
    rows = []

    def check(label, value, target, higher_is_better=True, explained=False):
        ok = value >= target if higher_is_better else value <= target
        verdict = "ok" if ok else "ok: explained" if explained else "MISS"
        rows.append((label, value, ">=" if higher_is_better else "<=", target, verdict))

    def of_theoretical(name):
        c = first.get(name)
        return c["measured"] / c["theoretical"] if c and c.get("theoretical") else float("nan")

    for name in ("fp64_fma", "fp32_fma"):
        check(f"{name} / theoretical", of_theoretical(name), 0.97)
    for name in ("fp16_fma", "bf16_fma"):
        check(f"{name} / theoretical", of_theoretical(name), 0.95)
    for kind in ("bf16", "fp16"):
        ours, lib = first.get(f"tensor_{kind}"), first.get(f"cublaslt_{kind}")
        if ours and lib:
            check(f"tensor_{kind} / cublaslt_{kind}", ours["measured"] / lib["measured"], 1.0)
    # A copy mixes reads and writes, and the DRAM's turnarounds between them cost a
    # share no kernel wins back: the best copies known on an H200 reach ~0.90 of the
    # read peak (PyTorch 4.3 TB/s, timeroof 4.32), gpu-benches' stream "scale" 3.17.
    # So the target is every framework copy measured in the same call, and the
    # share of theoretical is printed beside it.
    copies = json.load(open(args.framework_copy)) if args.framework_copy else {}
    copy_roof = first.get("hbm_copy")
    for kind in ("memcpy_d2d", "elementwise"):
        if copy_roof and copies.get(kind):
            check(f"hbm_copy / PyTorch {kind} in the same call", copy_roof["measured"] / copies[kind],
                  1.0)
    print(f"hbm_copy / theoretical {of_theoretical('hbm_copy'):.4f} (no target: a copy's read/write "
          "turnarounds; judged against the framework copies instead)")
    check("shared_read / theoretical", of_theoretical("shared_read"), 0.85)
    # No kernel brings the slices' data near lts__t_bytes' peak (62-71% on an H200):
    # another L2 unit saturates first. The roof is judged by that unit instead.
    print(f"l2_read / theoretical (lts__t_bytes' peak) {of_theoretical('l2_read'):.4f}")
    # Issue 15: L2 at least the working-set curve's L2 plateau (8-32 MiB: at 4 MiB
    # and below the sweep's plain loads also hit L1, 10.5 TB/s on an H200) and the published figures; no compute roof above 100.5% of its
    # theoretical peak; launch roofs within 3% between the runs.
    l2 = first.get("l2_read")
    plateau = max((w["bytes_per_second"] for w in working_set(args.run1)
                   if 8 * 2**20 <= w["bytes"] <= 32 * 2**20), default=float("nan"))
    if l2:
        busiest = busiest_l2_unit(l2["method"])
        if busiest is not None:
            check("l2_read: its busiest L2 unit of that unit's peak", busiest, 0.90)
        # The plateau counts bytes loaded, part of them L1 hits (the sweep's loads are
        # L1-cached); the roof counts what the slices served. Both comparisons:
        check("l2_read / working-set L2 plateau (loaded)", l2["measured"] / plateau, 1.0)
        share = pattern_served_share(l2["method"])
        if share:
            check(f"l2_read / the plateau as served ({share:.1%} of it)",
                  l2["measured"] / (plateau * share), 1.0)
        floor = 9.7e12 if "H200" in gpu else 8.6e12
        check(f"l2_read TB/s served (>= {floor / 1e12} on this GPU)", l2["measured"] / 1e12,
              floor / 1e12)
        # The published figures (gpu-benches) count bytes loaded, as the search's list does.
        loaded = max_loaded_rate(l2["method"])
        if loaded:
            check(f"l2 search's best loads TB/s, as gpu-benches counts (>= {floor / 1e12})",
                  loaded / 1e12, floor / 1e12)
        print(f"l2_read: {l2['method'][:400]}")
    over = [(n, c["measured"] / c["theoretical"]) for n, c in first.items()
            if c.get("kind") == "compute" and c.get("theoretical")]
    if over:
        name, ratio = max(over, key=lambda x: x[1])
        check(f"highest compute roof / theoretical ({name})", ratio, 1.005, higher_is_better=False)
    # The rule: every roof within 2%, launch roofs within 3%; the pageable
    # copies and the library references within 5%, or the clock difference that
    # explains a reference shown.
    def apart(name):
        return abs(second[name]["measured"] / first[name]["measured"] - 1)

    for name in ("launch_async", "launch_sync", "launch_graph_node"):
        if name in first and name in second:
            check(f"{name} run-to-run", apart(name), 0.03, higher_is_better=False)

    def is_reference(name):
        return name.startswith(("cublaslt_", "cublas_"))

    both = [n for n in first if n in second]
    own = [n for n in both if not is_reference(n) and not n.endswith("_pageable")
           and not n.startswith("launch_")]
    if own:
        worst = max(own, key=apart)
        check(f"run-to-run, worst own roof ({worst})", apart(worst), 0.02, higher_is_better=False)
    for name in (n for n in both if n.endswith("_pageable")):
        check(f"{name} run-to-run", apart(name), 0.05, higher_is_better=False)
    for name in (n for n in both if is_reference(n)):
        clock1, clock2 = first[name].get("sm_clock_hz"), second[name].get("sm_clock_hz")
        rate = second[name]["measured"] / first[name]["measured"]
        clocks = clock2 / clock1 if clock1 and clock2 else float("nan")
        # Explained: the clocks moved the same way, at least as far as the rate.
        explained = (rate - 1) * (clocks - 1) > 0 and abs(clocks - 1) >= abs(rate - 1)
        check(f"{name} run-to-run (clock x{clocks:.3f})", apart(name), 0.05,
              higher_is_better=False, explained=explained)
    if args.quick_seconds:
        check("--quick wall seconds", args.quick_seconds, 20, higher_is_better=False)
    if args.full_seconds:
        check("full wall seconds", args.full_seconds, 120, higher_is_better=False)

    print(f"ceilings targets on {gpu}")
    for label, value, sense, target, verdict in rows:
        print(f"  {label:<52} {value:10.4f}  target {sense} {target:<6} {verdict}")
    print("compute roofs / theoretical (run 1):")
    for name, c in first.items():
        if c.get("kind") == "compute" and c.get("theoretical"):
            print(f"  {name:<24} {100 * c['measured'] / c['theoretical']:6.2f}%  at "
                  f"{(c.get('sm_clock_hz') or 0) / 1e9:.3f} GHz")
    print("power and sustained loads (run 1): burst W, J per unit, clock limits; sustained "
          "rate / burst, its clock, W, limits")
    for name, c in first.items():
        p = c.get("power") or {}
        s = c.get("sustained")
        if not p.get("watts") and not s:
            continue
        # No burst figure where the timed launches end before NVML's energy counter
        # steps three times (the HBM roofs): the sustained load's stands for it.
        watts = f"{p['watts']:6.0f} W" if p.get("watts") else "     - W"
        per = f"{p['watts'] / c['measured']:9.3e}" if p.get("watts") and c["measured"] > 0 else "        -"
        line = f"  {name:<22} {watts}  {per} J/unit  " \
               f"[{','.join(p.get('clock_limits') or []) or 'none'}]"
        if s:
            sp = s.get("power") or {}
            sustained_watts = f"{sp['watts']:.0f}" if sp.get("watts") else "-"
            line += (f"  sustained {s['measured'] / c['measured']:6.1%} over {s['seconds']:.1f} s at "
                     f"{(s.get('sm_clock_hz') or 0) / 1e9:.3f} GHz, {sustained_watts} W "
                     f"[{','.join(sp.get('clock_limits') or []) or 'none'}]")
        print(line)
    print("library references run-to-run, raw and at the roof's clock (issue 15 item 6):")
    for name, c in first.items():
        if not name.startswith(("cublaslt_", "cublas_")) or name not in second:
            continue
        roof = "tensor_" + name.split("_", 1)[1]
        def at_roof_clock(run):
            ref, r = run[name], run.get(roof)
            if not r or not ref.get("sm_clock_hz") or not r.get("sm_clock_hz"):
                return float("nan")
            return ref["measured"] * r["sm_clock_hz"] / ref["sm_clock_hz"] / r["measured"]
        raw = second[name]["measured"] / c["measured"] - 1
        print(f"  {name:<16} raw {100 * raw:+6.2f}% (clocks {(c.get('sm_clock_hz') or 0) / 1e9:.2f} / "
              f"{(second[name].get('sm_clock_hz') or 0) / 1e9:.2f} GHz); of {roof} at its clock "
              f"{at_roof_clock(first):.3f} / {at_roof_clock(second):.3f}")
    print("run-to-run per roof (run2 / run1 - 1):")
    for name, c in first.items():
        if name in second:
            print(f"  {name:<24} {100 * (second[name]['measured'] / c['measured'] - 1):+6.2f}%")


if __name__ == "__main__":
    main()
