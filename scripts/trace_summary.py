#!/usr/bin/env python3
"""Average pair timeline of a decode_hopper trace (library built with -DHD_TRACE; the test bench
writes it with MLA_HD_TRACE=prefix). Lines: role event tile clock. Roles: 0, 1 consumers, 2 producer.
Events (see HD_T in src/cuda/decode_hopper.cu; producer 0-3, 7-9: the FP8 tile loop): 16 S issued, 11 S done, 12 P published, 13 take
begins, 15 take done, 14 stage paid, 17 / 18 waiting for a tile begins / ends, producer 1 = stage
free (tile issued), 4 / 5 / 6 part (V half 0 / half 1 / rope) issued, 21 the other consumer's
row max taken (hd_consumer_p1). Prints, for the pairs in the middle of the trace, the mean clock of each
(role, event, tile offset) relative to consumer 0 issuing S of the pair's even tile."""
import sys
from collections import defaultdict

NAMES = {16: "S issue", 11: "S done", 12: "P published", 13: "take begin", 15: "take done",
         14: "paid", 17: "tile wait begin", 18: "tile wait end", 19: "softmax done", 20: "PV(smem) issued", 1: "issue tile", 0: "fp8 0", 2: "fp8 2", 3: "fp8 3", 7: "fp8 scales bar", 8: "fp8 chunks 0-3", 9: "fp8 slots read",
         4: "issue half 0", 5: "issue half 1", 6: "issue rope", 21: "got other's m"}
ROLE = {0: "c0", 1: "c1", 2: "prod"}


def main(path):
    ev = {}
    for line in open(path):
        r, e, t, clk = (int(x) for x in line.split())
        ev.setdefault((r, e, t), clk)
    t0 = {t: clk for (r, e, t), clk in ev.items() if r == 0 and e == 16 and t % 2 == 0}
    tiles = sorted(t0)
    if len(tiles) < 6:
        print(f"{path}: too few pairs ({len(tiles)})")
        return
    mid = tiles[len(tiles) // 4: 3 * len(tiles) // 4]
    allp = [t0[t + 2] - t0[t] for t in tiles if t + 2 in t0]
    print(f"{path}: every pair's cycles (S_t issue -> S_t+2 issue), in order: " + " ".join(str(x) for x in allp))
    period = [t0[t + 2] - t0[t] for t in mid if t + 2 in t0]
    acc = defaultdict(list)
    for (r, e, t), clk in ev.items():
        base = t - (t % 2)
        for off in (-2, 0, 2):  # attribute to the pair whose S issue is nearest before
            k = base - off
            if k in mid:
                acc[(r, e, t - k)].append(clk - t0[k])
    print(f"{path}: {len(tiles)} pairs traced, mean pair {sum(period) / len(period):.0f} cycles "
          f"(min {min(period)}, max {max(period)}), {len(mid)} pairs averaged")
    rows = []
    for (r, e, dt), v in acc.items():
        if len(v) * 2 < len(mid) or dt < 0 or dt > 3:
            continue
        rows.append((sum(v) / len(v), r, e, dt, min(v), max(v)))
    for m, r, e, dt, lo, hi in sorted(rows):
        print(f"  {m:8.0f}  {ROLE[r]:4s} {NAMES.get(e, e):16s} tile t+{dt}   [{lo}, {hi}]")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
