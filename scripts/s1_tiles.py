#!/usr/bin/env python3
"""s1's per-tile events (HD_TRACE build; hn_trace_dump writes <trace>.s1t: "c ev tile clock", thread 0 of
consumer c of one CTA): 0 S begins, 1 S done, 2 softmax begins, 3 softmax done, 4 P.V begins (waits
passed), 5 P.V done, 6 the tile redone (v68's flag), 8-13 inside the softmax (its first pass): scores y,
m_n, exp2, P' stored, pready arrived, row sums. Prints the median over the middle half of the tiles of each phase's cycles, the
waits between them, and the period (softmax done of tile n to that of tile n + 1)."""
import statistics
import sys
from collections import defaultdict


def main(path):
    ev = defaultdict(dict)  # (c, tile) -> {ev: clk}
    pv = defaultdict(dict)
    for line in open(path):
        c, e, t, clk = (int(x) for x in line.split())
        ev[(c, t)][e] = clk
    tiles = sorted({t for (_, t), d in ev.items() if 3 in d})
    if len(tiles) < 8:
        print(f"{path}: too few tiles ({len(tiles)})")
        return
    mid = tiles[len(tiles) // 4: 3 * len(tiles) // 4]
    own = {}
    for (c, t), d in ev.items():
        if 3 in d:
            own[t] = c
    rows = defaultdict(list)
    for t in mid:
        c = own[t]
        d = ev[(c, t)]
        o = ev[(1 - c, t)]
        if 0 in d and 1 in d: rows["S (owner)"].append(d[1] - d[0])
        if 2 in d and 1 in d: rows["S done -> softmax begins (owner)"].append(d[2] - d[1])
        rows["softmax (owner)"].append(d[3] - d[2])
        if 4 in d and 5 in d: rows["P.V (owner)"].append(d[5] - d[4])
        if 4 in o and 5 in o: rows["P.V (other)"].append(o[5] - o[4])
        if 4 in o: rows["softmax done -> other's P.V begins"].append(o[4] - d[3])
        if 4 in d: rows["softmax done -> own P.V begins"].append(d[4] - d[3])
        n = ev.get((own.get(t + 1, -1), t + 1), {})
        if 3 in n: rows["period: softmax done n -> n+1"].append(n[3] - d[3])
        if 2 in n: rows["softmax done n -> softmax begins n+1"].append(n[2] - d[3])
        for e0, e1, nm in ((2, 8, "softmax: scores y"), (8, 9, "softmax: m_n (fast or slow)"), (9, 10, "softmax: exp2"),
                           (10, 11, "softmax: P' stored"), (11, 12, "softmax: fence, pready"), (12, 13, "softmax: row sums"),
                           (13, 3, "softmax: own pready wait, flag")):
            if e0 in d and e1 in d and 6 not in d: rows[nm].append(d[e1] - d[e0])
        if 0 in d and 0 in ev.get((own.get(t + 2, -1), t + 2), {}): rows["S begin n -> n+2 (same owner)"].append(ev[(own[t + 2], t + 2)][0] - d[0])
    redo = sorted(t for (c, t), d in ev.items() if 6 in d)
    print(f"{path}: {len(tiles)} tiles, medians over tiles {mid[0]}..{mid[-1]} (cycles); redone tiles: {redo}")
    for k, v in rows.items():
        print(f"  {k:42s} {statistics.median(v):8.0f}   (n={len(v)})")
    # one consumer's sequence of phases for two middle tiles
    t = mid[len(mid) // 2]
    base = ev[(own[t], t)][0] if 0 in ev[(own[t], t)] else 0
    seq = []
    for c in (0, 1):
        for tt in range(t - 1, t + 4):
            for e, d in ev.get((c, tt), {}).items():
                if e > 6: continue
                seq.append((d - base, c, tt, e))
    names = {0: "S+", 1: "S-", 2: "M+", 3: "M-", 4: "PV+", 5: "PV-", 6: "redo"}
    for c in (0, 1):
        print(f"  c{c}: " + "  ".join(f"{names[e]}{tt}@{clk}" for clk, cc, tt, e in sorted(seq) if cc == c))


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
