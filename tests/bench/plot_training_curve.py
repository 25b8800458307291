#!/usr/bin/python3
# train_log.jsonl files -> an SVG of held-out loss and accuracy against training tokens.
# python3 tests/bench/plot_training_curve.py OUT.svg NAME=runs/X/train_log.jsonl [NAME=…]
# A run of several phases (each an --init of the one before): NAME=A/train_log.jsonl+B/train_log.jsonl+…
# plots them end to end on one token axis, with a dashed line where each later phase starts.
import json, math, sys
out = sys.argv[1]
def chain(paths):
    rows, starts, offset = [], [], 0
    for i, path in enumerate(paths.split('+')):
        phase = [json.loads(l) for l in open(path) if l.strip()]
        if i > 0:
            starts.append(offset)
            phase = phase[1:]  # its step-0 evaluation is the previous phase's last model
        for r in phase:
            rows.append(dict(r, tokens=r['tokens'] + offset))
        offset = rows[-1]['tokens']
    return rows, starts
runs = [(a.split('=')[0],) + chain(a.split('=', 1)[1]) for a in sys.argv[2:]]
W, H, M = 760, 300, 50
colors = ['#1f77b4', '#d62728', '#2ca02c']
maxtok = max(r[-1]['tokens'] for _, r, _ in runs) or 1
# Axis ranges from the data: loss in whole units around every value, accuracy up to the next 10%.
lo_loss = math.floor(min(r['eval_loss'] for _, rows, _ in runs for r in rows))
hi_loss = math.ceil(max(r['eval_loss'] for _, rows, _ in runs for r in rows))
hi_acc = max(0.1, math.ceil(10 * max(r['eval_accuracy'] for _, rows, _ in runs for r in rows)) / 10)
def panel(x0, key, ymin, ymax, title, fmt):
    s = [f'<g transform="translate({x0},0)"><text x="{(W/2-M)/2+M}" y="20" text-anchor="middle" font-size="13">{title}</text>',
         f'<rect x="{M}" y="30" width="{W/2-M-10}" height="{H-30-M}" fill="none" stroke="#888"/>']
    pw, ph = W/2-M-10, H-30-M
    for i in range(5):
        v = ymin + (ymax-ymin)*i/4; y = 30+ph - ph*i/4
        s.append(f'<text x="{M-4}" y="{y+4}" text-anchor="end" font-size="10">{fmt(v)}</text>')
    for i in range(5):
        t = maxtok*i/4; x = M + pw*i/4
        s.append(f'<text x="{x}" y="{30+ph+14}" text-anchor="middle" font-size="10">{t/1e6:.1f}M</text>')
    s.append(f'<text x="{M+pw/2}" y="{30+ph+30}" text-anchor="middle" font-size="11">training tokens</text>')
    for (name, rows, starts), c in zip(runs, colors):
        bounds = [0] + starts + [rows[-1]['tokens']]
        if starts and c == colors[0]:  # phase letters once, between the boundaries
            for i in range(len(bounds) - 1):
                x = M + pw * (bounds[i] + bounds[i + 1]) / 2 / maxtok
                s.append(f'<text x="{x:.1f}" y="42" text-anchor="middle" font-size="10" fill="#555">{chr(65 + i)}</text>')
        for t in starts:
            s.append(f'<line x1="{M+pw*t/maxtok:.1f}" y1="30" x2="{M+pw*t/maxtok:.1f}" y2="{30+ph}" stroke="{c}" stroke-dasharray="3,3" stroke-width="0.8"/>')
        pts = ' '.join(f'{M+pw*r["tokens"]/maxtok:.1f},{30+ph-ph*(r[key]-ymin)/(ymax-ymin):.1f}' for r in rows)
        s.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="1.8"/>')
    s.append('</g>')
    return '\n'.join(s)
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W+20}" height="{H+38}" font-family="sans-serif">',
       '<rect width="100%" height="100%" fill="white"/>',
       panel(0, 'eval_loss', lo_loss, hi_loss, 'held-out MLM loss', lambda v: f'{v:.1f}'),
       panel(W/2, 'eval_accuracy', 0, hi_acc, 'held-out top-1 accuracy (masked tokens)', lambda v: f'{100*v:.0f}%')]
for i, ((name, rows, _), c) in enumerate(zip(runs, colors)):
    svg.append(f'<text x="{M+10}" y="{H+12}" dx="{i*260}" font-size="11" fill="{c}">— {name}: {100*rows[-1]["eval_accuracy"]:.1f}%, loss {rows[-1]["eval_loss"]:.2f}</text>')
if any(starts for _, _, starts in runs):  # evaluations follow each phase's own masking
    svg.append(f'<text x="{M+10}" y="{H+30}" font-size="10" fill="#555">dashed: a phase starts (each evaluates with its own masking)</text>')
svg.append('</svg>')
open(out, 'w').write('\n'.join(svg))
