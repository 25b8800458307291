#!/usr/bin/python3
# train_log.jsonl files -> an SVG of held-out loss and accuracy against training tokens.
# python3 tests/bench/plot_training_curve.py OUT.svg NAME=runs/X/train_log.jsonl [NAME=…]
import json, math, sys
out = sys.argv[1]
runs = [(a.split('=')[0], [json.loads(l) for l in open(a.split('=')[1]) if l.strip()]) for a in sys.argv[2:]]
W, H, M = 720, 300, 50
colors = ['#1f77b4', '#d62728', '#2ca02c']
maxtok = max(r[-1]['tokens'] for _, r in runs) or 1
# Axis ranges from the data: loss in whole units around every value, accuracy up to the next 10%.
lo_loss = math.floor(min(r['eval_loss'] for _, rows in runs for r in rows))
hi_loss = math.ceil(max(r['eval_loss'] for _, rows in runs for r in rows))
hi_acc = max(0.1, math.ceil(10 * max(r['eval_accuracy'] for _, rows in runs for r in rows)) / 10)
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
    for (name, rows), c in zip(runs, colors):
        pts = ' '.join(f'{M+pw*r["tokens"]/maxtok:.1f},{30+ph-ph*(r[key]-ymin)/(ymax-ymin):.1f}' for r in rows)
        s.append(f'<polyline points="{pts}" fill="none" stroke="{c}" stroke-width="1.8"/>')
    s.append('</g>')
    return '\n'.join(s)
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H+20}" font-family="sans-serif">',
       '<rect width="100%" height="100%" fill="white"/>',
       panel(0, 'eval_loss', lo_loss, hi_loss, 'held-out MLM loss', lambda v: f'{v:.1f}'),
       panel(W/2, 'eval_accuracy', 0, hi_acc, 'held-out top-1 accuracy (masked tokens)', lambda v: f'{100*v:.0f}%')]
for i, ((name, rows), c) in enumerate(zip(runs, colors)):
    svg.append(f'<text x="{M+10}" y="{H+12}" dx="{i*260}" font-size="11" fill="{c}">— {name}: {100*rows[-1]["eval_accuracy"]:.1f}%, loss {rows[-1]["eval_loss"]:.2f}</text>')
svg.append('</svg>')
open(out, 'w').write('\n'.join(svg))
