#!/usr/bin/env python3
"""Medians of an alternating A/B run (scripts/decode_ab.sh, decode_abfile.sh): lines
`variant | shape | TF [| GB/s]`; one line per shape with both variants and A/B."""
import statistics
import sys
from collections import defaultdict


def num(x):
    try:
        return float(x)
    except ValueError:
        return 0.0


d = defaultdict(list)
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.split("|")]
    if len(f) >= 3:
        d[f[1], f[0]].append([num(x) for x in f[2:]])
for sh in dict.fromkeys(k[0] for k in d):
    cols = {v: [statistics.median(c) for c in zip(*d[sh, v])] for v in ("a", "b") if d[sh, v]}
    text = " | ".join(f"{v.upper()} {m[0]:7.1f} TF" + (f" {m[1]:6.0f} GB/s" if len(m) > 1 else "") for v, m in cols.items())
    ratio = f" | A/B {cols['a'][0] / max(cols['b'][0], 1e-9):.3f}" if len(cols) == 2 else ""
    print(f"{sh:60s} {text}{ratio}")
