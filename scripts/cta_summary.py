#!/usr/bin/env python3
"""Per-CTA timeline of a decode_hopper launch (library built with -DHD_TRACE; the test bench writes
<trace>.cta beside each trace). Lines: cta, then clock64 at entry, smid, consumer 0 has Q, its first
S, hd_finish entered, hd_finish left, globaltimer at entry, job (b << 16 | nt), then the slots
8.. of HD_CT in src/cuda/decode_hopper.cu (job known, Q copy start, Q landed, tile 0 issue, ...;
16.. the epilogue's staging and a persistent CTA's transition between segments).
Prints where each SM's time goes: prologue (entry -> first S), body (first S -> hd_finish),
epilogue (hd_finish), and the gap from one CTA's epilogue to the next CTA's entry on the same SM,
per wave and in all; clocks of one SM are comparable, across SMs they are not."""
import sys
from collections import defaultdict


def main(path):
    by_sm = defaultdict(list)
    for line in open(path):
        v = [int(x) for x in line.split()]
        cta, s = v[0], v[1:]
        if len(s) < 24:
            s = s + [0] * (24 - len(s))
        if s[3] == 0 or s[4] == 0:
            continue  # no tiles (an exiting CTA) or the first S not traced
        by_sm[s[1]].append(s)
    if not by_sm:
        print(f"{path}: no CTAs")
        return
    acc = defaultdict(lambda: defaultdict(list))
    span = busy = 0
    for sm, lst in by_sm.items():
        lst.sort(key=lambda s: s[0])
        span += lst[-1][5] - lst[0][0]
        for w, s in enumerate(lst):
            a = acc[min(w, 2)]
            a["q"].append(s[2] - s[0])
            a["job"].append(s[8] - s[0])
            a["qstart"].append(s[9] - s[0] if s[9] else 0)
            a["qland"].append(s[10] - s[0] if s[10] else 0)
            a["t0"].append(s[11] - s[0] if s[11] else 0)
            a["t0p"].append(s[13] - s[0] if s[13] else 0)
            a["pro"].append(s[3] - s[0])
            a["body"].append(s[4] - s[3])
            a["epi"].append(s[5] - s[4])
            a["c1"].append(s[15] - s[4] if s[15] else 0)
            a["xch"].append(s[14] - s[4] if s[14] else 0)
            a["tiles"].append(s[7] & 0xffff)
            busy += s[4] - s[3]
            if s[16]:
                a["stage"].append(s[16] - (s[14] or s[4]))
                a["fence"].append(s[5] - s[16])
            if s[18]:  # a persistent CTA's transition (thread 0): the segment's barrier and the stores, re-arm
                a["quiet"].append(s[18] - s[5])
                a["init"].append(s[19] - s[18])
            if s[20]:
                a["qahead"].append(s[20] - s[4])
            if s[12] and s[6] and s[12] > s[6]:  # SM clock over the segment: clock64 against globaltimer (ns)
                a["ghz"].append((s[5] - s[0]) / (s[12] - s[6]))
            if s[21]:  # the plan's steps (first segment): costs loaded, first barrier, mode known (mode 1: scan), plan done
                a["pcost"].append(s[17] - s[0] if s[17] else 0)
                a["pbar"].append(s[21] - s[0])
                a["pscan"].append(s[22] - s[0] if s[22] else 0)
                a["pdone"].append(s[23] - s[0] if s[23] else 0)
            if w + 1 < len(lst):
                a["gap"].append(lst[w + 1][0] - s[5])
                if s[19]:
                    a["tonext"].append(lst[w + 1][0] - s[19])
    print(f"{path}: {sum(len(l) for l in by_sm.values())} CTAs on {len(by_sm)} SMs; "
          f"body (first S -> finish) is {100.0 * busy / span:.1f}% of the SMs' spans")
    print(f"  {'wave':6s} {'n':>5s} {'job':>6s} {'Q start':>7s} {'Q land':>7s} {'tile0':>6s} {'page0':>6s} {'entry->Q':>9s} {'entry->S':>9s} {'body':>9s} {'cyc/tile':>9s} {'epilogue':>9s} {'c1 late':>7s} {'sums':>6s} {'gap':>7s}")
    for w in sorted(acc):
        a = acc[w]
        m = lambda k: sum(a[k]) / len(a[k]) if a[k] else 0.0
        cpt = sum(a["body"]) / max(1, sum(a["tiles"]))
        print(f"  {('>=' if w == 2 else '') + str(w):6s} {len(a['body']):5d} {m('job'):6.0f} {m('qstart'):7.0f} {m('qland'):7.0f} {m('t0'):6.0f} {m('t0p'):6.0f} {m('q'):9.0f} {m('pro'):9.0f} {m('body'):9.0f} "
              f"{cpt:9.0f} {m('epi'):9.0f} {m('c1'):7.0f} {m('xch'):6.0f} {m('gap'):7.0f}")
    if any(acc[w]["stage"] or acc[w]["quiet"] for w in acc):
        print(f"  {'wave':6s} {'stage':>6s} {'fence':>6s} {'sync+st':>7s} {'init':>6s} {'->next':>7s} {'Q ahead':>8s}   (epilogue and transition, cycles)")
        for w in sorted(acc):
            a = acc[w]
            m = lambda k: sum(a[k]) / len(a[k]) if a[k] else 0.0
            print(f"  {('>=' if w == 2 else '') + str(w):6s} {m('stage'):6.0f} {m('fence'):6.0f} {m('quiet'):7.0f} {m('init'):6.0f} {m('tonext'):7.0f} {m('qahead'):8.0f}")
    g = [x for w in acc for x in acc[w]["ghz"]]
    if g:
        g.sort()
        print(f"  SM clock over the segments (clock64 / globaltimer): median {g[len(g) // 2]:.3f} GHz, "
              f"min {g[0]:.3f}, max {g[-1]:.3f}")
    if acc[0]["pbar"]:
        a = acc[0]
        m = lambda k: sum(a[k]) / len(a[k]) if a[k] else 0.0
        print(f"  plan (first segments, cycles after entry): costs loaded {m('pcost'):.0f}, first barrier {m('pbar'):.0f}, "
              f"mode known {m('pscan'):.0f}, plan done {m('pdone'):.0f}, job known {m('job'):.0f}")


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
