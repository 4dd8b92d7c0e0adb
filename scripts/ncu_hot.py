#!/usr/bin/env python3
"""Where the warps of one kernel stall, per SASS instruction (issue 5 diagnosis). Input: the CSV of
`ncu --import R.ncu-rep --page source --print-source sass --csv` (scripts/decode_ncu.sh writes it).
Prints the stall reasons summed over the kernel, the instructions with the most samples (with
their top reasons) and the hottest windows of 48 consecutive instructions."""
import csv
import sys


def num(x):
    try:
        return float(str(x).replace(",", ""))
    except ValueError:
        return 0.0


def load(path):
    """(header, rows) of one instruction per row; the header is the first row that names the source column"""
    rows = list(csv.reader(open(path, newline="")))
    h = next(i for i, r in enumerate(rows) if any(c.strip() in ("Source", "# Address", "Address") for c in r))
    head = [c.strip() for c in rows[h]]
    return head, [r for r in rows[h + 1:] if len(r) == len(head)]


def main(path, top=70):
    head, body = load(path)
    print(f"{path}: {len(body)} instructions; columns: {head}")
    col = {c: i for i, c in enumerate(head)}
    src = col.get("Source", 1)
    addr = col.get("Address", col.get("# Address", 0))
    samp = next((i for c, i in col.items() if c.startswith("Warp Stall Sampling (All")), None)
    if samp is None:
        print("no sampling column")
        return
    reasons = [(c, i) for c, i in col.items() if c.startswith("stall_") or (c.endswith("Samples") and "stall" in c.lower())]
    tot = sum(num(r[samp]) for r in body)
    print(f"total samples {tot:.0f}")
    if reasons:
        sums = sorted(((sum(num(r[i]) for r in body), c) for c, i in reasons), reverse=True)
        print("stall reasons:", ", ".join(f"{c} {v / tot * 100:.1f}%" for v, c in sums[:14] if v > 0))
    order = sorted(range(len(body)), key=lambda k: -num(body[k][samp]))
    print(f"\ntop {top} instructions (index, address, samples %, reasons, instruction):")
    for k in sorted(order[:top]):
        r = body[k]
        rs = sorted(((num(r[i]), c) for c, i in reasons), reverse=True)[:3]
        why = " ".join(f"{c.replace('stall_', '')}={v:.0f}" for v, c in rs if v > 0)
        print(f"{k:6d} {r[addr]:>8s} {num(r[samp]) / tot * 100:5.2f}%  {why:48s} {r[src].strip()[:90]}")
    win = 48
    ws = sorted(((sum(num(body[j][samp]) for j in range(i, min(len(body), i + win))), i) for i in range(0, len(body), win // 2)),
                reverse=True)
    print(f"\nhottest windows of {win} instructions:")
    for v, i in ws[:16]:
        ops = {}
        for j in range(i, min(len(body), i + win)):
            op = body[j][src].strip().split(" ")[0]
            if op.startswith("@"):
                op = body[j][src].strip().split(" ")[1]
            ops[op.split(".")[0]] = ops.get(op.split(".")[0], 0) + 1
        common = ", ".join(f"{o} {n}" for o, n in sorted(ops.items(), key=lambda x: -x[1])[:6])
        print(f"  [{i:6d}, +{win}) {v / tot * 100:5.1f}%  {body[i][src].strip()[:50]:50s} | {common}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 70)
