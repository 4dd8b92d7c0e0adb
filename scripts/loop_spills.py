#!/usr/bin/env python3
"""LDL/STL inside the loops of one decode kernel, from `cuobjdump -sass -fun NAME k.cubin` on stdin.
A loop is a backward branch's span [target, branch]; branches placed far after the code (the retry
stubs of mbarrier waits, which branch back) are not loops. Listed: loops with a GMMA (the consumers'
per-tile loops) and loops with at least 9 UTMALDG (the TMA producer's per-pair loops). A spill in
the innermost of them costs every tile; one in an outer loop (the segment loop) once a segment.
scripts/gmma_spills.sh runs it on each decode kernel."""
import re
import sys

ins = []
for line in sys.stdin:
    m = re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);', line)
    if m:
        ins.append((int(m.group(1), 16), m.group(2)))
last_g = max((a for a, t in ins if 'GMMA' in t), default=0)
spans = set()
for a, t in ins:
    if a > last_g + 0x20000:
        break
    m = re.search(r'\bBRA\b.*?(0x[0-9a-f]+)', t)
    if m and int(m.group(1), 16) < a:
        spans.add((int(m.group(1), 16), a))

loops = {}  # (lo, hi) -> (kind, GMMA, UTMALDG, LDL/STL); kind 'g' consumer, 'u' producer
for lo, hi in sorted(spans):
    body = [t for a, t in ins if lo <= a <= hi]
    g = sum('GMMA' in t for t in body)
    u = sum('UTMALDG' in t for t in body)
    if g or u >= 9:
        sp = sum(bool(re.search(r'\b(LDL|STL)\b', t)) for t in body)
        loops[lo, hi] = ('g' if g else 'u', g, u, sp)

tot = {'g': 0, 'u': 0}
for (lo, hi), (k, g, u, sp) in loops.items():
    inner = not any(lo <= a and b <= hi and (a, b) != (lo, hi) and v[0] == k for (a, b), v in loops.items())
    print(f"loop {lo:#07x}-{hi:#07x}: {g:3d} GMMA, {u:3d} UTMALDG, {sp:3d} LDL/STL{'' if inner else '  (outer: once a segment)'}")
    if inner:
        tot[k] += sp
print(f"LDL/STL inside the innermost loops: GMMA {tot['g']}, producer {tot['u']}")
