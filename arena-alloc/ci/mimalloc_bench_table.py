#!/usr/bin/env python3
"""Markdown table of medians from mimalloc_bench.sh's TSV (test, allocator, rep, wall s,
max RSS KiB, user s, sys s, minor faults, metric, exit status)."""
import sys, statistics as st, collections
rows = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    f = line.rstrip('\n').split('\t')
    if len(f) < 10: continue
    t, a, r, el, rss, u, s, flt, m, rc = f
    if (t) not in order: order.append(t)
    rows[(t, a)].append((float(el), float(u) + float(s), int(rss), int(flt), None if m == '-' else float(m), rc))
def med(xs): return st.median(xs)
# throughput programs: larson (ops/s, higher better), rptest (memory ops, higher), glibc-thread (iterations, higher), xmalloc (rtime: lower better)
higher = {'larson', 'rptest', 'glibc-thread'}
print("| program | metric | arena-alloc | glibc | mimalloc | ÷ glibc | ÷ mimalloc | CPU s (arena / glibc / mi) | peak RSS MiB (arena / glibc / mi) | RSS ÷ glibc | minor faults (arena / glibc / mi) |")
print("|---|---|---:|---:|---:|---:|---:|---|---|---:|---|")
for t in order:
    v = {a: rows.get((t, a)) for a in ('ours', 'sys', 'mi')}
    if not all(v.values()): continue
    bad = [a for a in v for x in v[a] if x[5] != '0']
    def m(a, i): return med([x[i] for x in v[a] if x[i] is not None])
    if t in higher:
        metric = {'larson': 'ops/s (higher better)', 'rptest': 'memory ops (higher better)', 'glibc-thread': 'iterations in 2 s (higher better)'}[t]
        vals = {a: m(a, 4) for a in v}
        fmt = lambda x: f"{x/1e6:.2f}M"
    elif t == 'xmalloc-test':
        metric = 'rtime s (lower better)'; vals = {a: m(a, 4) for a in v}; fmt = lambda x: f"{x:.3f}"
    else:
        metric = 'wall s (lower better)'; vals = {a: m(a, 0) for a in v}; fmt = lambda x: f"{x:.3f}" if x < 1 else f"{x:.2f}"
    cpu = {a: m(a, 1) for a in v}; rss = {a: m(a, 2) / 1024 for a in v}; flt = {a: m(a, 3) for a in v}
    print(f"| {t}{' (FAILED: '+','.join(bad)+')' if bad else ''} | {metric} | {fmt(vals['ours'])} | {fmt(vals['sys'])} | {fmt(vals['mi'])} | {vals['ours']/vals['sys']:.2f}x | {vals['ours']/vals['mi']:.2f}x | {cpu['ours']:.2f} / {cpu['sys']:.2f} / {cpu['mi']:.2f} | {rss['ours']:.1f} / {rss['sys']:.1f} / {rss['mi']:.1f} | {rss['ours']/rss['sys']:.2f}x | {flt['ours']} / {flt['sys']} / {flt['mi']} |")
