#!/usr/bin/env python3
"""Per-CTA timeline of the 64-row raw-tile FP8 kernel (s1, src/cuda/decode_narrow.cu; library built
with -DHD_TRACE, the test bench writes <trace>.s1). Lines: cta, then the 16 slots of HN_CT (0 entry
clock, 1 smid, 2 globaltimer at entry, 3 job known, 4 nt, 5 consumer 0 has Q, 6 past tile 0's landing,
7 P.V of tile 0 done, 8 / 9 consumer 0 / 1 leave the loop, 10 stores issued, 11 globaltimer there,
12 / 13 producer issued tile 0 / its last tile, 14 consumer 0 past setmaxnreg, 15 its Q landed).
Prints, per wave of CTAs on an SM (0, 1, 2+), median cycles of each phase, cycles a tile, the gap
from one CTA's stores to the next CTA's entry on the same SM, and where the launch's time goes."""
import statistics
import sys
from collections import defaultdict


def med(x):
    return statistics.median(x) if x else 0


def main(path):
    by_sm = defaultdict(list)
    for line in open(path):
        v = [int(x) for x in line.split()]
        s = v[1:] + [0] * (17 - len(v))
        if s[10] == 0 or s[4] == 0:
            continue
        by_sm[s[1]].append(s)
    if not by_sm:
        print(f"{path}: no CTAs")
        return
    rows = defaultdict(lambda: defaultdict(list))
    t_first = min(s[2] for l in by_sm.values() for s in l)
    t_last = max(s[11] for l in by_sm.values() for s in l)
    body_ns = 0.0
    ghz = []
    for sm, lst in by_sm.items():
        lst.sort(key=lambda s: s[0])
        for w, s in enumerate(lst):
            a = rows[min(w, 2)]
            nt = s[4]
            a["job"].append(s[3] - s[0])
            a["regs"].append(s[14] - s[0] if s[14] else 0)
            a["Qland"].append(s[15] - s[0] if s[15] else 0)
            a["Q"].append(s[5] - s[0])
            a["tile0"].append(s[6] - s[0])
            a["issue0"].append(s[12] - s[0] if s[12] else 0)
            a["pv0"].append(s[7] - s[6])
            a["body"].append(s[8] - s[6])
            a["per_tile"].append((s[8] - s[6]) / nt)
            a["c1_lag"].append(s[9] - s[8])
            a["epi"].append(s[10] - max(s[8], s[9]))
            a["nt"].append(nt)
            if s[11] > s[2]:
                ghz.append((s[10] - s[0]) / (s[11] - s[2]))
            if w + 1 < len(lst):
                a["gap"].append(lst[w + 1][0] - s[10])
    f = med(ghz) or 1.8
    for sm, lst in by_sm.items():
        for s in lst:
            body_ns += (s[8] - s[6]) / f
    nsm = len(by_sm)
    span = t_last - t_first
    print(f"{path}: {sum(len(l) for l in by_sm.values())} CTAs on {nsm} SMs, span {span / 1e3:.1f} us, "
          f"clock {f:.2f} GHz; bodies (tile 0 landed -> loop end) are {100.0 * body_ns / (span * nsm):.1f}% of SM time")
    keys = ["nt", "job", "issue0", "regs", "Qland", "Q", "tile0", "pv0", "body", "per_tile", "c1_lag", "epi", "gap"]
    print("wave  n    " + " ".join(f"{k:>9}" for k in keys))
    for w in sorted(rows):
        a = rows[w]
        print(f"{w:<5} {len(a['job']):<4} " + " ".join(f"{med(a[k]):9.0f}" for k in keys))
    # the tail: when each SM's last CTA ends, relative to the launch's end
    ends = sorted((max(s[11] for s in l) - t_first) / 1e3 for l in by_sm.values())
    print(f"SM end times (us from first entry): min {ends[0]:.1f}, median {ends[len(ends) // 2]:.1f}, max {ends[-1]:.1f}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
