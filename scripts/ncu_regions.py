#!/usr/bin/env python3
"""Where one kernel's warp stall samples fall, by source function and line (issue 5 diagnosis).
Inputs: the source-page CSV of `scripts/decode_ncu.sh` (per-SASS-instruction samples) and the same
build's object (build/libmla.a member decode_hopper.cu.o, or the .a itself): its cubin is
disassembled with line info (`nvdisasm -g`), so that each instruction maps to decode_hopper.cu
functions (or a header). Prints, per function: all samples, the no-instruction (fetch) stalls and the
number of its SASS instructions; then the lines with the most fetch stalls; then samples by how often the
instructions ran (per-segment code against the per-pair loops).
  python3 scripts/ncu_regions.py CSV OBJ KERNEL   (KERNEL: e.g. _Z25hd_decode_kernel_v7_bf16p9hd_params)
Needs cuobjdump and nvdisasm on PATH (pip: nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm)."""
import collections
import glob
import os
import re
import subprocess
import sys
import tempfile

from ncu_hot import load, num

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "cuda", "decode_hopper.cu")


def line_map(obj, kernel):
    """instruction offset -> (file, line) of the kernel's SASS"""
    with tempfile.TemporaryDirectory() as d:
        return _line_map(os.path.abspath(obj), kernel, d)


def _line_map(obj, kernel, d):
    if obj.endswith(".a"):
        subprocess.run(["ar", "x", obj, "decode_hopper.cu.o"], cwd=d, check=True)
        obj = os.path.join(d, "decode_hopper.cu.o")
    subprocess.run(["cuobjdump", "-xelf", "all", obj], cwd=d, check=True, capture_output=True)
    cubin = glob.glob(os.path.join(d, "*.cubin"))[0]
    syms = subprocess.run(["readelf", "-Ws", cubin], check=True, capture_output=True, text=True).stdout
    idx = next(ln.split()[0].rstrip(":") for ln in syms.splitlines() if ln.split()[-1:] == [kernel] and "FUNC" in ln)
    sass = subprocess.run(["nvdisasm", "-g", "-c", "-fun", idx, cubin], check=True, capture_output=True, text=True).stdout
    out, cur = {}, None
    for ln in sass.splitlines():
        m = re.search(r'//## File "([^"]+)", line (\d+)', ln)
        if m:
            cur = (os.path.basename(m.group(1)), int(m.group(2)))
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/", ln)
        if m:
            out[int(m.group(1), 16)] = cur
    return out


def main(csv_path, obj, kernel):
    head, body = load(csv_path)
    col = {c: i for i, c in enumerate(head)}
    samp = col["Warp Stall Sampling (All Samples)"]
    noi, ex = col["stall_no_inst"], col["Instructions Executed"]
    src = open(SRC).read().split("\n")
    starts = [(i + 1, m.group(1)) for i, ln in enumerate(src)
              for m in [re.match(r"MLA_DEV\s+[\w\s\*]*?\b(\w+)\(", ln) or re.match(r"__global__.*?\b(hd_\w+)\(", ln)] if m]

    def func(fl):
        if fl is None:
            return "?"
        if fl[0] != "decode_hopper.cu":
            return fl[0]
        name = "?"
        for s, n in starts:
            if s > fl[1]:
                break
            name = n
        return name

    lm = line_map(obj, kernel)
    base = int(body[0][col["Address"]], 16)
    fl = [lm.get(int(r[col["Address"]], 16) - base) for r in body]
    tot = sum(num(r[samp]) for r in body)
    by_f = collections.defaultdict(collections.Counter)
    by_l = collections.defaultdict(collections.Counter)
    for r, f in zip(body, fl):
        for key, agg in ((func(f), by_f), (f, by_l)):
            agg[key]["all"] += num(r[samp])
            agg[key]["no_inst"] += num(r[noi])
            agg[key]["n"] += 1
    ni = sum(c["no_inst"] for c in by_f.values())
    print(f"{len(body)} instructions, {tot:.0f} samples, no_inst {ni / tot * 100:.1f}%\n\nby function (% of all samples):")
    for k, c in sorted(by_f.items(), key=lambda kv: -kv[1]["all"])[:25]:
        print(f"  {k:28s} all {c['all'] / tot * 100:5.2f}  no_inst {c['no_inst'] / tot * 100:5.2f}  instructions {c['n']:5.0f}")
    print("\nlines with the most no_inst samples:")
    for k, c in sorted(by_l.items(), key=lambda kv: -kv[1]["no_inst"])[:20]:
        text = src[k[1] - 1].strip()[:60] if k and k[0] == "decode_hopper.cu" else ""
        print(f"  {str(k):34s} no_inst {c['no_inst']:5.0f} of {c['all']:5.0f}  {func(k):20s} {text}")
    print("\nby executions per instruction (warp level):")
    for lo, hi in ((0, 1000), (1000, 10000), (10000, 40000), (40000, float("inf"))):
        sel = [r for r in body if lo <= num(r[ex]) < hi]
        a = sum(num(r[samp]) for r in sel)
        n = sum(num(r[noi]) for r in sel)
        print(f"  [{lo}, {hi}): {len(sel):6d} instructions, samples {a / tot * 100:5.1f}%, no_inst {n / tot * 100:5.2f}%")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
