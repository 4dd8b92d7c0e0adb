#!/usr/bin/env python3
"""Whole-launch timeline of a split-KV decode (library built with -DHD_TRACE): the decode grid's
per-CTA globaltimer at entry (slot 6) and at hd_finish's end (slot 12) from <trace>.cta, and the
combine grid's entry / past griddepcontrol.wait / exit from <trace>.cmb. Prints, in us from the first
decode CTA's entry: the spread of entries and ends, the combine's, and per-CTA phase medians in
cycles (prologue = entry -> first S, body, epilogue) with the tiles a CTA ran.
Usage: grid_timeline.py trace.txt [...]  (the .cta / .cmb files beside it)"""
import os
import statistics as st
import sys


def q(xs):
    xs = sorted(xs)
    if not xs:
        return "-"
    return f"min {xs[0]:7.1f}  med {st.median(xs):7.1f}  max {xs[-1]:7.1f}"


def main(path):
    cta = [[int(x) for x in l.split()] for l in open(path + ".cta")]
    rows = [v[1:] + [0] * 30 for v in cta]
    rows = [s for s in rows if s[6] and s[12]]
    if not rows:
        print(f"{path}: no decode CTAs with both stamps")
        return
    g0 = min(s[6] for s in rows)
    print(f"{path}: {len(rows)} decode CTAs")
    print(f"  decode entry (us)     {q([(s[6] - g0) / 1e3 for s in rows])}")
    print(f"  decode finish end (us){q([(s[12] - g0) / 1e3 for s in rows])}")
    nt = [s[7] & 0xffff for s in rows]
    print(f"  tiles a CTA           {q(nt)}")
    last = {}
    for s in rows:  # a persistent CTA's segments: its SM's last end
        last[s[1]] = max(last.get(s[1], 0), s[12])
    print(f"  an SM's last end (us) {q([(v - g0) / 1e3 for v in last.values()])}  ({len(last)} SMs)")
    pro = [s[3] - s[0] for s in rows if s[3]]
    body = [s[4] - s[3] for s in rows if s[3] and s[4]]
    epi = [s[5] - s[4] for s in rows if s[4] and s[5]]
    print(f"  prologue (cycles)     {q(pro)}")
    tiled = [(s[4] - s[3], s[7] & 0xffff) for s in rows if s[3] and s[4]]
    per_tile = sum(b for b, _ in tiled) / max(1, sum(t for _, t in tiled))  # (segments of unequal length)
    print(f"  body (cycles)         {q(body)}   per tile {per_tile:.0f} (all bodies / all tiles)")
    print(f"  epilogue (cycles)     {q(epi)}")
    cm = path + ".cmb"
    if os.path.exists(cm):
        c = [[int(x) for x in l.split()] for l in open(cm)]
        c = [v for v in c if v[1]]
        if c:
            print(f"  combine CTAs {len(c)} on {len(set(v[4] for v in c))} SMs")
            print(f"  combine entry (us)    {q([(v[1] - g0) / 1e3 for v in c])}")
            print(f"  combine past wait (us){q([(v[2] - g0) / 1e3 for v in c])}")
            print(f"  combine exit (us)     {q([(v[3] - g0) / 1e3 for v in c if v[3]])}")
            print(f"  combine wait->exit per CTA (us) {q([(v[3] - v[2]) / 1e3 for v in c if v[3]])}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
