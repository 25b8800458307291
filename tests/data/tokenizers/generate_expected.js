// Generates the conformance data expected_<name>.jsonl beside this file, for the tokenizers in
// TOKENIZERS and the edited copies in variants.json.
// Not run at build time; the JSONL output is committed.
//
// How it was run (outside the repository, so node_modules never lands in it):
//   mkdir /tmp/tokref && cd /tmp/tokref && npm init -y && npm install tokenizers@0.23.2
//   node /work/main/tests/data/tokenizers/generate_expected.js
// `tokenizers` on npm is Hugging Face's own Node binding of the Rust `tokenizers` library
// (github.com/huggingface/tokenizers, bindings/node), i.e. the reference implementation itself.
// Its Encoding.getOffsets() is in Unicode code points of the input (the binding encodes with char
// offsets), which is what HeadLab's Encoding uses; the script checks that with an astral-plane line.
//
// Input lines: hand-written edge cases, a deterministic sample of Gutenberg lines (read from
// /work/shared/data/text/gutenberg when present) and seeded random strings over tricky characters.
// Each JSONL record: {"text", "add_special_tokens", "ids", "tokens", "offsets", "decoded",
// "decoded_skip_special"}; decoded = decode(ids, false), decoded_skip_special = decode(ids, true).
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require(require.resolve('tokenizers', { paths: [process.cwd()] }));

const HERE = __dirname;
// spm-unigram and spm-bpe are written by spm_to_tokenizer_json.js (see SOURCES.md).
const TOKENIZERS = ['gpt2', 'bert-base-uncased', 'qwen3', 'spm-unigram', 'spm-bpe', 'lenml-llama2'];
const GUTENBERG = '/work/shared/data/text/gutenberg';

const handWritten = [
  '',
  ' ',
  'Hello world!',
  'Hello, world! How are you?',
  "I'm sure they'll say it's fine, but we'd've known they're wrong — isn't it?",
  "DON'T SHOUT! I'M HERE. WE'LL SEE. YOU'RE RIGHT. THEY'VE GONE. SHE'D KNOW.",
  "rock 'n' roll 'quoted' ''double'' '",
  'The year 2024 had 365 days; 3.14159 is pi, 1,000,000 is a million, -42 and +7.',
  '1234567890 12345678901234567890 007 0.5e-10 ٣٤٥ ५६७ ½ ² Ⅻ',
  'Phone: (555) 123-4567, e-mail: someone@example.com, URL: https://www.example.org/path?q=1&r=2#frag',
  'multiple   spaces    here',
  '   leading spaces',
  'trailing spaces   ',
  'tab\tseparated\tvalues\t\t\tend',
  'line one\nline two\n\nline four\r\nwindows line\rold mac',
  '\n\n\n',
  ' \t \n \r\n  x  \n ',
  'naïve café résumé coöperate façade jalapeño Ångström Øresund straße',
  'NAÏVE CAFÉ RÉSUMÉ ÀÉÎÕÜ',
  'combining: e\u0301 a\u0300 o\u0308 n\u0303 c\u0327 (decomposed) vs é à ö ñ ç (composed)',
  'stacked marks: a\u0301\u0316\u0300 q\u0307\u0323 x\u0308\u0301 Z\u0351\u0367\u0346',
  'Zalgo: H\u0335\u0321e\u0334\u0322l\u0336l\u0337o\u0338',
  'Hangul: 한국어 텍스트입니다. jamo: \u1112\u1161\u11ab\u1100\u116e\u11a8',
  'Japanese: 日本語のテキストです。カタカナ、ひらがな、漢字。',
  'Chinese: 我爱自然语言处理。今天天气很好！你好，世界',
  'mixed CJK and latin: AI模型training很有趣123',
  'Rare CJK ext B: 𠀀𠀁𠮷野家 and compatibility 豈 更',
  'Arabic: مرحبا بالعالم، كيف حالك؟ النص العربي ١٢٣',
  'Hebrew: שלום עולם',
  'Arabic with harakat: بِسْمِ ٱللَّٰهِ ٱلرَّحْمَٰنِ',
  'Russian: Привет, мир! Съешь же ещё этих мягких французских булок.',
  'Greek: Γειά σου Κόσμε ΣΊΣΥΦΟΣ ὀδυσσεύς',
  'Hindi: नमस्ते दुनिया, यह एक परीक्षण है।',
  'Thai: สวัสดีชาวโลก ภาษาไทย',
  'Emoji: 😀😃😄 👍🏽 ❤️ 🇫🇷 🇯🇵',
  'ZWJ family: 👨‍👩‍👧‍👦 and 👩🏽‍💻 and 🏳️‍🌈',
  'newer emoji: 🥺 🥰 🦾 🧠 🪐 🫠 🫶',
  'zero width: a\u200bb c\u200cd e\u200df \ufeffBOM \u2060word joiner',
  'controls: a\u0000b\u0001c\u0007d\u001be\u007ff\u0080g\u009fh',
  'NEL and friends: a\u0085b c \u0085d e\u0085 f \u00a0nbsp\u00a0 \u2028ls\u2029ps \u3000ideo',
  'odd spaces: a\u2002b\u2003c\u2009d\u200ae\u202ff\u205fg\u1680h\u000bvt\u000cff',
  'replacement char \ufffd here and private use \ue000\uf8ff',
  'math: ∀x∈ℝ, x²≥0; ∑ᵢ aᵢ = ∫₀¹ f(x) dx ≠ ∞ ± √2 ≈ 1.414',
  'currency: $100 €50 £30 ¥1000 ₹500 ₿0.01 ¢',
  'punctuation soup: !!! ??? ... --- ___ *** ### @@@ $$$ %%% ^^^ &&& ((( ))) [[[ ]]] {{{ }}} |||',
  'ascii symbols: ` ~ ! @ # $ % ^ & * ( ) - _ = + [ ] { } \\ | ; : \' " , . < > / ?',
  'unicode punctuation: «guillemets» „German“ “curly” ‘single’ ¡Hola! ¿Qué? … · • — – ‐ ‒ ※ ¶ §',
  'fullwidth: ＡＢＣ１２３！？（）',
  'ligatures: ﬁ ﬂ ﬀ ﬃ Ǆ ǅ ǆ ŉ',
  'Turkish İstanbul ıi IĞDIR',
  'German ẞ and ß, Greek final ς and Σ',
  'Kelvin \u212a, Ohm \u2126, Angstrom \u212b',
  '[MASK]',
  'The capital of France is [MASK].',
  'Paris is the [MASK] of [MASK], [CLS] and [SEP] and [PAD] and [UNK] inline.',
  '[mask] lower case mask and [ MASK ] spaced and [MASK][MASK]',
  '<|endoftext|>',
  'Text before<|endoftext|>text after <|endoftext|> spaced <|endoftext|>',
  '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n',
  '<think>\nreasoning here\n</think>\n\nanswer <tool_call>{"name": "f"}</tool_call>',
  '<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>',
  '<|im_start <|endoftext| <|endoftext|x |endoftext|> <<|endoftext|>>',
  'code: def foo(x):\n    return x ** 2  # square\n\tif x: pass',
  'C++: int main() { std::vector<int> v{1,2,3}; return v[0]; }',
  'JSON: {"key": [1, 2.5, true, null], "nested": {"a": "b"}}',
  'HTML: <div class="x"><p>Hi &amp; bye</p></div>',
  'Supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis',
  'a'.repeat(99),
  'b'.repeat(100),
  'c'.repeat(101),
  'word' + 'x'.repeat(150) + ' short',
  'é'.repeat(120),
  'ab'.repeat(300),
  ' '.repeat(50) + 'x',
  'x' + '\n'.repeat(20) + 'y',
  '1'.repeat(60),
  '!'.repeat(40),
  'aaaa bbbb aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  "It's 5 o'clock somewhere's; the dog's bone; 'tis the season",
  "I'M I'm i'M you'RE YOU'LL They'D IT'S",
  'hyphen-ated words, well-known, state-of-the-art, e.g., i.e., U.S.A.',
  'snake_case_identifier CamelCaseIdentifier kebab-case-id SCREAMING_CASE',
  'https://huggingface.co/docs/tokenizers/index?query=a+b#section-2',
  'email@domain.com, #hashtag, @mention, ~tilde, 50% off, 3/4 cup, a&b',
  'The quick brown fox jumps over the lazy dog.',
  'THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG.',
  'Mr. Smith went to Washington D.C. on Jan. 5th, 2021 at 3:30 p.m.',
  '"Quoted," she said, "and then—nothing."',
  '(parenthetical [bracketed {braced}])',
  'Vietnamese: Tiếng Việt có dấu: ả ạ ầ ẩ ẫ ậ',
  'Polish: Zażółć gęślą jaźń',
  'Czech: Příliš žluťoučký kůň úpěl ďábelské ódy',
  'Icelandic: Þjóðin ðæ',
  'Devanagari conjuncts: क्षत्रिय ज्ञान श्री',
  'Tamil: தமிழ் மொழி',
  'Georgian: ქართული ენა',
  'Armenian: Հայերեն',
  'Ethiopic: ሰላም ለዓለም',
  'Mongolian: ᠮᠣᠩᠭᠣᠯ',
  'Tibetan: བོད་ཡིག',
  'Cherokee: ᏣᎳᎩ',
  'Braille: ⠓⠑⠇⠇⠕',
  'box drawing: ┌─┐│└┘ ░▒▓█',
  'arrows: ← → ↑ ↓ ⇒ ⇔',
  'musical 𝄞 and math bold 𝐀𝐁𝐂 and script 𝒜',
  'superscripts ¹²³ subscripts ₁₂₃ fractions ¼ ½ ¾',
  'Roman numerals: Ⅰ Ⅱ Ⅲ Ⅳ ⅰ ⅱ',
  'circled: ① ② ③ Ⓐ ⓑ',
  'a.b,c;d:e!f?g',
  '...leading dots and trailing dots...',
  "''''",
  "'s 't 're 've 'm 'll 'd",
  "'S 'T 'RE 'VE 'M 'LL 'D",
  "x's y'S z'Ll",
  '  \'s  ',
  'single',
  'a',
  '.',
  '中',
  '😀',
  '\t',
  '\n',
  '\u00a0',
  '\u0301',
  'e\u0301',
  '\u200d',
  'mixed\u00a0non\u2009breaking\u202fspaces',
  'word\u0085word',
  ' \u0085 ',
  '\u0085\u0085x',
  'tab after space \t x \t\t y',
  'CRLF\r\n\r\nblock',
  'numbers1234and5678letters',
  'x1y2z3 1a2b3c',
  '٠١٢٣٤٥٦٧٨٩ ۰۱۲۳ ०१२३',
  'A\u030aB\u0327 Å Ḉ',
  '\u0041\u030a\u0301 \u212b\u0301',
  'hangul jamo seq: \u1100\u1161\u11a8 \u1100\u1161 \uac00\u11a8',
  'oriya: \u0b47\u0b3e \u0b4b',
  'Café au lait. CAFÉ! café? cafe\u0301.',
];

// Lines aimed at the variants' added tokens (lstrip / rstrip / single_word / normalized).
const variantLines = [
  'a <mask> b  <mask>c<mask>',
  '   <mask>',
  'END of line END   next ENDING xEND END',
  '[tag] x[tag] [tag]y [TAG] ([tag]) [tag]_ _[tag]',
  'STRASSE straße Straße STRAẞE strasse',
  'ﬁne ﬀ Ⅻ ① ＡＢＣ and <MASK> and end',
  'Héllo Wörld 12345 3.14 x2y3',
  'abcdefghijk abcdefghij abcdefghi',
];

// Deterministic sample of real English (and some multi-line paragraphs) from Gutenberg texts.
function gutenbergLines() {
  if (!fs.existsSync(GUTENBERG)) return [];
  const out = [];
  const files = fs.readdirSync(GUTENBERG).filter((f) => f.endsWith('.txt')).sort();
  for (const f of files) {
    const lines = fs.readFileSync(path.join(GUTENBERG, f), 'utf8').split('\n').map((l) => l.replace(/\r$/, ''));
    const nonEmpty = lines.filter((l) => l.trim().length > 0);
    const step = Math.max(1, Math.floor(nonEmpty.length / 14));
    for (let i = step; i < nonEmpty.length && out.length < 1000; i += step) out.push(nonEmpty[i]);
    // Two paragraphs with their newlines kept.
    for (const start of [Math.floor(lines.length / 3), Math.floor((2 * lines.length) / 3)]) {
      out.push(lines.slice(start, start + 6).join('\n'));
    }
  }
  return out;
}

// Seeded random strings over characters that stress normalization, splitting and byte-level BPE.
function randomLines(count) {
  let seed = 12345;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const pools = [
    'abcdefghijklmnopqrstuvwxyz', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', '0123456789', "'''",
    '      \t\n\r', '.,;:!?-_()[]{}<>"/\\|@#$%^&*~`+=', 'éèêëàâäîïôöùûüçñÅØßÆœ',
    '\u0300\u0301\u0302\u0308\u0323\u0327\u0316\u0345', '中文字符測試日本語한국어', 'مرحباשלוםПриветΓειά',
    '\u00a0\u0085\u2000\u2028\u3000\u200b\u200c\u200d\ufeff\u0000\u0007\u001b\u007f\u009f',
    '😀👍🏽❤️🇫🇷👨‍👩‍👧𝐀𝄞𠀀', 'ﬁǅİıẞΣς', '[MASK][CLS]<|endoftext|><think>',
  ];
  const out = [];
  for (let n = 0; n < count; n++) {
    const len = 1 + Math.floor(rnd() * 40);
    let s = '';
    for (let i = 0; i < len; i++) {
      const pool = Array.from(pools[Math.floor(rnd() * pools.length)]);
      // Special-token pool: take whole tokens sometimes.
      if (pool[0] === '[' && rnd() < 0.5) {
        s += ['[MASK]', '[CLS]', '<|endoftext|>', '<think>', '<|im_end|>'][Math.floor(rnd() * 5)];
      } else {
        s += pool[Math.floor(rnd() * pool.length)];
      }
    }
    out.push(s);
  }
  return out;
}

// Code-point offsets check: the binding must report char offsets, not UTF-16 or byte offsets.
async function checkOffsetsAreCodePoints(tok) {
  // 4 code points, 6 UTF-16 units, 10 UTF-8 bytes: the last token must end at 4.
  const e = await tok.encode('😀😀 a', null, { addSpecialTokens: false });
  const offs = e.getOffsets();
  const last = offs[offs.length - 1];
  if (last[1] !== 4) throw new Error('offsets are not code points: ' + JSON.stringify(offs));
}

// The edited copies described in variants.json.
function variantJson(spec) {
  const j = JSON.parse(fs.readFileSync(path.join(HERE, spec.base, 'tokenizer.json'), 'utf8'));
  Object.assign(j, spec.set || {});
  Object.assign(j.model, spec.model_set || {});
  j.added_tokens = [...(j.added_tokens || []), ...(spec.added_tokens_append || [])];
  if (spec.normalizer_prepend || spec.normalizer_append) {
    j.normalizer = {
      type: 'Sequence',
      normalizers: [...(spec.normalizer_prepend || []), ...(j.normalizer ? [j.normalizer] : []), ...(spec.normalizer_append || [])],
    };
  }
  return JSON.stringify(j);
}

// The input lines, in the order of the expected_*.jsonl records.
function allLines() {
  return [...handWritten, ...gutenbergLines(), ...randomLines(90), ...variantLines];
}

// The records of one tokenizer over the lines (each an object; the files hold one JSON per line).
async function encodeRecords(tok, lines) {
  await checkOffsetsAreCodePoints(tok);
  const records = [];
  for (let i = 0; i < lines.length; i++) {
    // Every line without special tokens; every 4th line (and all special-token lines) also with.
    const modes = [false];
    if (i % 4 === 0 || /\[|<\|/.test(lines[i])) modes.push(true);
    for (const add of modes) {
      const e = await tok.encode(lines[i], null, { addSpecialTokens: add });
      const ids = e.getIds();
      records.push({
        text: lines[i],
        add_special_tokens: add,
        ids,
        tokens: e.getTokens(),
        offsets: e.getOffsets(),
        decoded: await tok.decode(ids, false),
        decoded_skip_special: await tok.decode(ids, true),
      });
    }
  }
  return records;
}

async function main() {
  const lines = allLines();
  const variants = JSON.parse(fs.readFileSync(path.join(HERE, 'variants.json'), 'utf8'));
  const names = [...TOKENIZERS, ...Object.keys(variants).filter((k) => !k.startsWith('_'))];
  for (const name of names) {
    const tok = TOKENIZERS.includes(name)
      ? Tokenizer.fromFile(path.join(HERE, name, 'tokenizer.json'))
      : Tokenizer.fromString(variantJson(variants[name]));
    const records = await encodeRecords(tok, lines);
    const out = path.join(HERE, `expected_${name}.jsonl`);
    fs.writeFileSync(out, records.map((r) => JSON.stringify(r)).join('\n') + '\n');
    console.log(`${out}: ${records.length} records from ${lines.length} lines`);
  }
}

// check_npm_tokenizers.js reuses the lines and the records.
module.exports = { Tokenizer, allLines, encodeRecords };

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
