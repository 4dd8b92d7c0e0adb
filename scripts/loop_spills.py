#!/usr/bin/env python3
"""LDL/STL inside loops that contain a GMMA (the consumers' per-tile loops) or at least 9 UTMALDG
(the TMA producer's per-pair loops), from `cuobjdump -sass` of one function on stdin: a loop is a backward branch's span [target, branch] (branches placed after
the code, the retry stubs of mbarrier waits, are not loops). Prints each such
loop with its GMMA and LDL/STL counts; a spill there costs every tile, one elsewhere once a segment.
  cuobjdump -sass -fun NAME k.cubin | python3 scripts/loop_spills.py"""
import re, sys
ins = []
for line in sys.stdin:
    m = re.match(r'\s*/\*([0-9a-f]{4,})\*/\s+(.*?);', line)
    if m: ins.append((int(m.group(1), 16), m.group(2)))
last_g = max((a for a, t in ins if 'GMMA' in t), default=0)
loops = []
for a, t in ins:
    if a > last_g + 0x20000: break  # the retry stubs of mbarrier waits sit after the code and branch back
    m = re.search(r'\bBRA\b.*?(0x[0-9a-f]+)', t)
    if m:
        tgt = int(m.group(1), 16)
        if tgt < a: loops.append((tgt, a))
tot = ptot = 0
loops = sorted(set(loops))
def kind(lo, hi):
    body = [t for a, t in ins if lo <= a <= hi]
    g, u = sum('GMMA' in t for t in body), sum('UTMALDG' in t for t in body)
    return 'g' if g else ('u' if u >= 9 else '')
kinds = {l: kind(*l) for l in loops}
def inner(lo, hi):  # no other loop of the same kind strictly inside
    k = kinds[(lo, hi)]
    return not any(lo <= a and b <= hi and (a, b) != (lo, hi) and kinds[(a, b)] == k for a, b in loops)
for lo, hi in loops:
    body = [t for a, t in ins if lo <= a <= hi]
    g = sum('GMMA' in t for t in body)
    u = sum('UTMALDG' in t for t in body)
    sp = sum(bool(re.search(r'\b(LDL|STL)\b', t)) for t in body)
    if g or u >= 9:
        inn = inner(lo, hi)
        print(f"loop {lo:#07x}-{hi:#07x}: {g:3d} GMMA, {u:3d} UTMALDG, {sp:3d} LDL/STL{'' if inn else '  (outer: once a segment)'}")
        if inn and g: tot += sp
        elif inn: ptot += sp
print(f"LDL/STL inside the innermost loops: GMMA {tot}, producer {ptot}")
