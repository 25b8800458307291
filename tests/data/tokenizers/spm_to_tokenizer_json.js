// Writes spm-unigram/tokenizer.json and spm-bpe/tokenizer.json beside this file from two
// SentencePiece models, in the layouts Hugging Face's converters (transformers'
// convert_slow_tokenizer.py) give T5 (Unigram) and Llama-2 (byte-fallback BPE). Not run at build
// time; the tokenizer.json files are committed. See SOURCES.md for how the models were trained.
//
//   node spm_to_tokenizer_json.js /path/unigram.model /path/bpe.model
//
// A .model file is a serialized sentencepiece.ModelProto; the few fields needed are read here
// directly: pieces (1: {1 piece, 2 score, 3 type}) and normalizer_spec (3: {2 precompiled_charsmap}).
'use strict';
const fs = require('fs');
const path = require('path');

const HERE = __dirname;
const SPACE = '\u2581';

function readVarint(buf, pos) {
  let v = 0n, shift = 0n;
  for (;;) {
    const b = buf[pos++];
    v |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [v, pos];
    shift += 7n;
  }
}

// Fields of one message: [{field, wire, value}] (value: Buffer for length-delimited, BigInt for
// varints, Buffer of 4 bytes for fixed32).
function fields(buf) {
  const out = [];
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n), wire = Number(key & 7n);
    if (wire === 0) {
      let v;
      [v, pos] = readVarint(buf, pos);
      out.push({ field, wire, value: v });
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      out.push({ field, wire, value: buf.subarray(pos, pos + Number(len)) });
      pos += Number(len);
    } else if (wire === 5) {
      out.push({ field, wire, value: buf.subarray(pos, pos + 4) });
      pos += 4;
    } else if (wire === 1) {
      out.push({ field, wire, value: buf.subarray(pos, pos + 8) });
      pos += 8;
    } else {
      throw new Error('unsupported wire type ' + wire);
    }
  }
  return out;
}

// SentencePiece types: 1 normal, 2 unknown, 3 control, 4 user defined, 5 unused, 6 byte.
function readModel(file) {
  const pieces = [];
  let charsmap = null;
  for (const f of fields(fs.readFileSync(file))) {
    if (f.field === 1) {
      const p = { piece: '', score: 0, type: 1 };
      for (const g of fields(f.value)) {
        if (g.field === 1) p.piece = g.value.toString('utf8');
        else if (g.field === 2) p.score = g.value.readFloatLE(0);
        else if (g.field === 3) p.type = Number(g.value);
      }
      pieces.push(p);
    } else if (f.field === 3) {
      for (const g of fields(f.value)) if (g.field === 2) charsmap = Buffer.from(g.value);
    }
  }
  return { pieces, charsmap };
}

function added(id, content) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
}

// T5's layout (t5-small's tokenizer.json): Precompiled, WhitespaceSplit + Metaspace, Unigram,
// "$A </s>", a Metaspace decoder; extra ids appended as T5 does (the last one first).
function unigramJson(model) {
  const vocab = model.pieces.map((p) => [p.piece, p.score]);
  const extra = [];
  for (let k = 2; k >= 0; k--) extra.push(`<extra_id_${k}>`);
  for (const e of extra) vocab.push([e, 0.0]);
  const specials = model.pieces.map((p, i) => [p, i]).filter(([p]) => p.type === 2 || p.type === 3);
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [
      ...specials.map(([p, i]) => added(i, p.piece)),
      ...extra.map((e, k) => added(model.pieces.length + k, e)),
    ],
    normalizer: { type: 'Precompiled', precompiled_charsmap: model.charsmap.toString('base64') },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [{ type: 'WhitespaceSplit' }, { type: 'Metaspace', replacement: SPACE, add_prefix_space: true }],
    },
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } }],
      pair: [
        { Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } },
        { Sequence: { id: 'B', type_id: 0 } }, { SpecialToken: { id: '</s>', type_id: 0 } },
      ],
      special_tokens: { '</s>': { id: '</s>', ids: [model.pieces.findIndex((p) => p.piece === '</s>')], tokens: ['</s>'] } },
    },
    decoder: { type: 'Metaspace', replacement: SPACE, add_prefix_space: true },
    model: { type: 'Unigram', unk_id: model.pieces.findIndex((p) => p.type === 2), vocab },
  };
}

// Merges as transformers' SentencePieceExtractor derives them: every split of a piece into two
// pieces of the vocabulary, ordered by the merged piece's score (highest first).
function bpeMerges(pieces) {
  const vocab = new Map(pieces.map((p, i) => [p.piece, i]));
  const merges = [];
  pieces.forEach((p, index) => {
    const chars = Array.from(p.piece);
    const local = [];
    for (let k = 1; k < chars.length; k++) {
      const l = chars.slice(0, k).join(''), r = chars.slice(k).join('');
      if (vocab.has(l) && vocab.has(r)) local.push([l, r, p.score, index]);
    }
    local.sort((a, b) => vocab.get(a[0]) - vocab.get(b[0]) || vocab.get(a[1]) - vocab.get(b[1]));
    merges.push(...local);
  });
  // Stable: equal scores keep the order above.
  merges.sort((a, b) => b[2] - a[2]);
  return merges.map((m) => `${m[0]} ${m[1]}`);
}

// Llama-2's layout (hf-internal-testing/llama-tokenizer): Prepend + Replace normalizer, no
// pre-tokenizer, byte-fallback BPE with fused unknowns, "<s> $A", and the decoder chain
// Replace ▁ -> " ", ByteFallback, Fuse, Strip one leading space.
function bpeJson(model) {
  const vocab = {};
  model.pieces.forEach((p, i) => { vocab[p.piece] = i; });
  const specials = model.pieces.map((p, i) => [p, i]).filter(([p]) => p.type === 2 || p.type === 3);
  const bos = model.pieces.findIndex((p) => p.piece === '<s>');
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: specials.map(([p, i]) => added(i, p.piece)),
    normalizer: {
      type: 'Sequence',
      normalizers: [{ type: 'Prepend', prepend: SPACE }, { type: 'Replace', pattern: { String: ' ' }, content: SPACE }],
    },
    pre_tokenizer: null,
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [
        { SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } },
        { SpecialToken: { id: '<s>', type_id: 1 } }, { Sequence: { id: 'B', type_id: 1 } },
      ],
      special_tokens: { '<s>': { id: '<s>', ids: [bos], tokens: ['<s>'] } },
    },
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: SPACE }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        { type: 'Strip', content: ' ', start: 1, stop: 0 },
      ],
    },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: '<unk>',
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      vocab,
      merges: bpeMerges(model.pieces.filter((p) => p.type === 1 || p.type === 4 || p.type === 6)),
    },
  };
}

function main() {
  const [unigramModel, bpeModel] = process.argv.slice(2);
  if (!unigramModel || !bpeModel) throw new Error('usage: node spm_to_tokenizer_json.js unigram.model bpe.model');
  const outputs = [
    ['spm-unigram', unigramJson(readModel(unigramModel))],
    ['spm-bpe', bpeJson(readModel(bpeModel))],
  ];
  for (const [name, json] of outputs) {
    const file = path.join(HERE, name, 'tokenizer.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(json, null, 1) + '\n');
    console.log(`${file}: ${fs.statSync(file).size} bytes`);
  }
}

main();
