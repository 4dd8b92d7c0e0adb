#!/usr/bin/env python3
"""Drift between the lanes (row blocks) of one request in a decode_hopper launch (HD_TRACE build; the
<trace>.cta files of scripts/decode_trace.sh). The lanes of a request read the same key tiles and
share them in L2 only while they run side by side. Per request: the spread (max - min) of its lanes'
segment starts and ends (globaltimer, us); printed by round (requests in order of their first start,
groups of the number of requests that run at once)."""
import statistics
import sys
from collections import defaultdict


def main(path):
    seg = defaultdict(list)
    for line in open(path):
        v = [int(x) for x in line.split()]
        s = v[1:] + [0] * (25 - len(v))
        if not s[6] or not s[12] or not s[7]:
            continue
        seg[s[7] >> 16].append((s[6], s[12], s[7] & 0xffff))
    reqs = sorted(seg.items(), key=lambda kv: min(x[0] for x in kv[1]))
    t0 = min(x[0] for _, l in reqs for x in l)
    lanes = statistics.median(len(l) for _, l in reqs)
    per_round = max(1, int(round(132 / lanes)))
    print(f"{path}: {len(reqs)} requests, {lanes:.0f} lanes each; spread of the lanes' start / end (us), by round of {per_round}")
    for r in range(0, len(reqs), per_round):
        grp = reqs[r:r + per_round]
        ss = [(max(x[0] for x in l) - min(x[0] for x in l)) / 1e3 for _, l in grp]
        es = [(max(x[1] for x in l) - min(x[1] for x in l)) / 1e3 for _, l in grp]
        dur = [statistics.median((x[1] - x[0]) / 1e3 for x in l) for _, l in grp]
        print(f"round {r // per_round}: start {statistics.median(ss):7.1f} (max {max(ss):7.1f})  end {statistics.median(es):7.1f} "
              f"(max {max(es):7.1f})  segment {statistics.median(dur):8.1f}  first start {(min(min(x[0] for x in l) for _, l in grp) - t0) / 1e3:8.1f}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
