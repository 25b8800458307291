// Tokenizer::load / from_json: tokenizer.json (Hugging Face) and the older vocab.txt (WordPiece)
// and vocab.json + merges.txt (byte-level BPE; OpenAI's encoder.json + vocab.bpe too).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"
#include "core/json_integer.h"
#include "core/tokenizer/byte_level_bpe.h"
#include "core/tokenizer/hf_tokenizer.h"
#include "core/tokenizer/json_keys.h"
#include "core/tokenizer/unicode.h"
#include "core/tokenizer/unigram.h"
#include "core/tokenizer/word_level.h"
#include "core/tokenizer/wordpiece.h"

namespace headlab::core {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace tok;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw std::runtime_error("cannot read " + p.string());
  return ss.str();
}

json parse_json(std::string_view text, const std::string& origin) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    throw std::runtime_error(origin + ": invalid JSON: " + e.what());
  }
}

// The special-token keys of tokenizer_config.json that resolve_specials reads.
constexpr const char* kSpecialTokenKeys[] = {"mask_token", "pad_token", "unk_token", "cls_token",
                                             "sep_token",  "bos_token", "eos_token"};

// The added_tokens_decoder key of an id: a decimal number, nothing else.
std::optional<int32_t> added_token_id(const std::string& key) {
  if (key.empty() || key.size() > 9 || key.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return static_cast<int32_t>(std::stol(key));
}

// Checks the keys of tokenizer_config.json that HeadLab reads, so a wrong value is named by file
// and key here instead of surfacing later as a bare library message.
void check_config(const json& j, const std::string& where) {
  for (const char* key : kSpecialTokenKeys) {
    if (!j.contains(key)) continue;
    const json& v = j[key];
    if (v.is_null() || v.is_string() || (v.is_object() && v.contains("content") && v["content"].is_string())) continue;
    throw std::runtime_error(where + ": '" + key + "' must be a token, an object with a \"content\" string, or null, not " +
                             v.dump());
  }
  for (const char* key : {"add_prefix_space", "do_lower_case", "tokenize_chinese_chars", "strip_accents",
                          "clean_up_tokenization_spaces"})
    if (j.contains(key) && !j[key].is_boolean() && !j[key].is_null())
      throw std::runtime_error(where + ": '" + key + "' must be true or false, not " + j[key].dump());
  if (!j.contains("added_tokens_decoder")) return;
  const json& added = j["added_tokens_decoder"];
  if (!added.is_object())
    throw std::runtime_error(where + ": 'added_tokens_decoder' must be an object of id -> token, not " +
                             std::string(added.type_name()));
  for (auto it = added.begin(); it != added.end(); ++it) {
    const std::string entry = where + ": added_tokens_decoder['" + it.key() + "']";
    if (!added_token_id(it.key())) throw std::runtime_error(entry + ": the key must be a token id (a non-negative number)");
    const json& t = it.value();
    if (!t.is_object() || !t.contains("content") || !t["content"].is_string())
      throw std::runtime_error(entry + ": must be an object with a \"content\" string");
    for (const char* flag : {"single_word", "lstrip", "rstrip", "special", "normalized"})
      if (t.contains(flag) && !t[flag].is_boolean())
        throw std::runtime_error(entry + ": '" + flag + "' must be true or false, not " + t[flag].dump());
  }
}

// tokenizer_config.json beside the tokenizer, or null when there is none. A broken one is an error
// naming the file: it decides special tokens, and silently ignoring it would change the ids.
json read_config(const fs::path& dir) {
  const fs::path p = dir / "tokenizer_config.json";
  if (!fs::is_regular_file(p)) return nullptr;
  json j = parse_json(read_text(p), p.string());
  if (!j.is_object()) throw std::runtime_error(p.string() + ": not a JSON object");
  check_config(j, p.string());
  return j;
}

Vocab vocab_from_json(const json& j) {
  if (!j.is_object()) throw std::runtime_error("model.vocab must be an object of token -> id");
  if (j.empty()) throw std::runtime_error("model.vocab is empty: a tokenizer without tokens turns every text into nothing");
  Vocab v;
  v.token_to_id.reserve(j.size());
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_number_integer()) throw std::runtime_error("model.vocab: id of '" + it.key() + "' is not an integer");
    // Ids are dense in real files; gaps are tolerated, an id far beyond the entries is damage.
    const int64_t id = it.value().is_number_unsigned() ? int64_t(std::min<uint64_t>(it.value().get<uint64_t>(), 1ull << 40))
                                                       : it.value().get<int64_t>();
    const int64_t most = std::max<int64_t>(2 * int64_t(j.size()), int64_t(j.size()) + 65536);
    if (id >= most)
      throw std::runtime_error("model.vocab: id " + std::to_string(id) + " of '" + it.key() + "' is far beyond its " +
                               std::to_string(j.size()) + " entries");
    v.add(it.key(), static_cast<int32_t>(id));
  }
  return v;
}

AddedToken added_token_from_json(const json& t) {
  AddedToken a;
  a.content = t.at("content").get<std::string>();
  a.id = get_integer<int32_t>(t.at("id"));
  a.single_word = t.value("single_word", false);
  a.lstrip = t.value("lstrip", false);
  a.rstrip = t.value("rstrip", false);
  a.special = t.value("special", false);
  a.normalized = t.value("normalized", !a.special);
  return a;
}

// HF ignores the ids written in "added_tokens": when loading, it adds the tokens in file order,
// giving each the model's id when the content is in the model vocabulary, else the next free id
// past the vocabulary. In well-formed files the two agree; mirroring HF keeps ids identical when
// they do not.
void add_with_hf_ids(const std::vector<AddedToken>& tokens, const Vocab& vocab, AddedVocabulary& added) {
  const int64_t model_size = static_cast<int64_t>(vocab.token_to_id.size());
  std::optional<int64_t> max_id;
  for (AddedToken t : tokens) {
    if (t.content.empty()) continue;
    if (auto id = added.id_of(t.content)) t.id = *id;
    else if (auto vid = vocab.find(t.content)) t.id = *vid;
    else if (!max_id) t.id = static_cast<int32_t>(model_size);
    else t.id = static_cast<int32_t>(*max_id >= model_size || model_size == 0 ? *max_id + 1 : model_size);
    max_id = std::max<int64_t>(max_id.value_or(t.id), t.id);
    added.add(t);
  }
}

std::optional<std::string> string_or_null(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  return it->get<std::string>();
}

std::unique_ptr<Model> model_from_json(const json& m, bool byte_level, std::string& kind) {
  std::string type = m.value("type", std::string());
  if (type.empty()) type = m.contains("merges") ? "BPE" : m.contains("max_input_chars_per_word") ? "WordPiece" : "";
  if (type == "WordPiece") {
    WordPieceOptions o;
    o.unk_token = m.value("unk_token", std::string("[UNK]"));
    o.continuing_subword_prefix = m.value("continuing_subword_prefix", std::string("##"));
    o.max_input_chars_per_word = m.value("max_input_chars_per_word", size_t{100});
    kind = "wordpiece";
    return std::make_unique<WordPiece>(vocab_from_json(m.at("vocab")), o);
  }
  if (type == "BPE") {
    require_known_keys(m, {"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
                           "byte_fallback", "ignore_merges", "vocab", "merges"},
                       "model BPE");
    // Dropout samples a different segmentation on each call; HeadLab's encodings are the
    // deterministic ones, so a file asking for it is refused rather than quietly encoded without.
    if (m.contains("dropout") && !m["dropout"].is_null() && !(m["dropout"].is_number() && m["dropout"].get<double>() == 0.0))
      throw std::runtime_error("model BPE: dropout " + m["dropout"].dump() + " is not supported (only null)");
    BpeOptions o;
    o.unk_token = string_or_null(m, "unk_token");
    o.continuing_subword_prefix = string_or_null(m, "continuing_subword_prefix").value_or("");
    o.end_of_word_suffix = string_or_null(m, "end_of_word_suffix").value_or("");
    o.fuse_unk = m.value("fuse_unk", false);
    o.byte_fallback = m.value("byte_fallback", false);
    o.ignore_merges = m.value("ignore_merges", false);
    o.byte_level = byte_level;
    std::vector<std::pair<std::string, std::string>> merges;
    const json& mj = m.at("merges");
    merges.reserve(mj.size());
    for (size_t i = 0; i < mj.size(); ++i) {
      const json& e = mj[i];
      if (e.is_string()) {  // "a b" (older files, GPT-2)
        const std::string s = e.get<std::string>();
        const size_t sp = s.find(' ');
        if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
          throw std::runtime_error("model.merges[" + std::to_string(i) + "] '" + s + "' is not two tokens");
        merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else if (e.is_array() && e.size() == 2) {  // ["a", "b"] (newer files, Qwen)
        merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
      } else {
        throw std::runtime_error("model.merges[" + std::to_string(i) + "] is neither \"a b\" nor [\"a\", \"b\"]");
      }
    }
    kind = "bpe";
    return std::make_unique<Bpe>(vocab_from_json(m.at("vocab")), merges, o);
  }
  if (type == "Unigram") {
    require_known_keys(m, {"type", "unk_id", "vocab", "byte_fallback"}, "model Unigram");
    const json& vj = m.at("vocab");
    if (!vj.is_array()) throw std::runtime_error("model Unigram: vocab must be an array of [piece, score]");
    std::vector<std::pair<std::string, double>> pieces;
    pieces.reserve(vj.size());
    for (size_t i = 0; i < vj.size(); ++i) {
      const json& e = vj[i];
      if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
        throw std::runtime_error("model Unigram: vocab[" + std::to_string(i) + "] is not [piece, score]");
      pieces.emplace_back(e[0].get<std::string>(), e[1].get<double>());
    }
    std::optional<int32_t> unk_id;
    if (m.contains("unk_id") && !m["unk_id"].is_null()) unk_id = get_integer<int32_t>(m["unk_id"]);
    const bool byte_fallback = m.contains("byte_fallback") && !m["byte_fallback"].is_null() && m["byte_fallback"].get<bool>();
    kind = "unigram";
    return std::make_unique<Unigram>(pieces, unk_id, byte_fallback);
  }
  if (type == "WordLevel") {
    kind = "wordlevel";
    return std::make_unique<WordLevel>(vocab_from_json(m.at("vocab")), m.value("unk_token", std::string("[UNK]")));
  }
  throw std::runtime_error("unsupported model type '" + type + "' (WordPiece, BPE, WordLevel and Unigram are supported)");
}

// The post-processor's special tokens (TemplateProcessing / BertProcessing / RobertaProcessing)
// and ByteLevel offset trimming.
void post_from_json(const json& j, std::vector<PostStep>& out) {
  if (j.is_null()) return;
  const std::string type = j.at("type").get<std::string>();
  auto special = [](const json& pair) {  // ["[CLS]", 101]
    TemplatePiece p;
    p.tokens.push_back(pair.at(0).get<std::string>());
    p.ids.push_back(pair.at(1).get<int32_t>());
    return p;
  };
  if (type == "TemplateProcessing") {
    PostStep step;
    const json& specials = j.value("special_tokens", json::object());
    for (const json& piece : j.at("single")) {
      TemplatePiece p;
      if (piece.contains("Sequence")) {
        p.sequence = true;
      } else {
        const std::string id = piece.at("SpecialToken").at("id").get<std::string>();
        if (!specials.contains(id)) throw std::runtime_error("post_processor: special token '" + id + "' has no ids");
        const json& st = specials[id];
        p.ids = st.at("ids").get<std::vector<int32_t>>();
        p.tokens = st.at("tokens").get<std::vector<std::string>>();
      }
      step.single.push_back(std::move(p));
    }
    out.push_back(std::move(step));
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    if (type == "RobertaProcessing" && j.value("trim_offsets", true)) {
      PostStep trim;
      trim.kind = PostStep::Kind::ByteLevelTrim;
      trim.add_prefix_space = j.value("add_prefix_space", true);
      out.push_back(std::move(trim));
    }
    PostStep step;
    step.single.push_back(special(j.at("cls")));
    step.single.push_back(TemplatePiece{true, {}, {}});
    step.single.push_back(special(j.at("sep")));
    out.push_back(std::move(step));
  } else if (type == "ByteLevel") {
    if (j.value("trim_offsets", true)) {
      PostStep trim;
      trim.kind = PostStep::Kind::ByteLevelTrim;
      trim.add_prefix_space = j.value("add_prefix_space", true);
      out.push_back(std::move(trim));
    }
  } else if (type == "Sequence") {
    for (const json& p : j.at("processors")) post_from_json(p, out);
  } else {
    throw std::runtime_error("unsupported post_processor type '" + type + "'");
  }
}

void decoder_from_json(const json& j, std::vector<DecodeStep>& out) {
  const std::string type = j.at("type").get<std::string>();
  DecodeStep step;
  if (type == "ByteLevel") {
    step.kind = DecodeStep::Kind::ByteLevel;
  } else if (type == "WordPiece") {
    step.kind = DecodeStep::Kind::WordPiece;
    step.prefix = j.value("prefix", std::string("##"));
    step.cleanup = j.value("cleanup", true);
  } else if (type == "Fuse") {
    require_known_keys(j, {"type"}, "decoder Fuse");
    step.kind = DecodeStep::Kind::Fuse;
  } else if (type == "Metaspace") {
    const MetaspaceOptions o = metaspace_options(j, "decoder Metaspace");
    step.kind = DecodeStep::Kind::Metaspace;
    step.replacement = o.replacement;
    step.prepend = o.prepend_scheme != "never";
  } else if (type == "Replace") {
    require_known_keys(j, {"type", "pattern", "content"}, "decoder Replace");
    step.kind = DecodeStep::Kind::Replace;
    step.pattern = std::make_shared<const Regex>(pattern_from_json(j.at("pattern"), "decoder Replace"));
    step.content = j.at("content").get<std::string>();
  } else if (type == "ByteFallback") {
    require_known_keys(j, {"type"}, "decoder ByteFallback");
    step.kind = DecodeStep::Kind::ByteFallback;
  } else if (type == "Strip") {
    require_known_keys(j, {"type", "content", "start", "stop"}, "decoder Strip");
    step.kind = DecodeStep::Kind::Strip;
    const std::u32string c = utf8_to_u32(j.at("content").get<std::string>());
    if (c.size() != 1) throw std::runtime_error("decoder Strip: content must be a single character");
    step.strip_char = c[0];
    step.strip_start = get_integer<size_t>(j.at("start"));
    step.strip_stop = get_integer<size_t>(j.at("stop"));
  } else if (type == "Sequence") {
    for (const json& d : j.at("decoders")) decoder_from_json(d, out);
    return;
  } else {
    throw std::runtime_error("unsupported decoder type '" + type + "'");
  }
  out.push_back(step);
}

// Special-token ids: tokenizer_config.json first (an explicit null there means "none"), then
// the conventional names that exist in the vocabulary.
void resolve_specials(TokenizerParts& p, const json& config) {
  auto id_of = [&](const std::string& s) -> std::optional<int64_t> {
    if (auto id = p.added.id_of(s)) return *id;
    if (auto id = p.model->vocab().find(s)) return *id;
    return std::nullopt;
  };
  auto pick = [&](const char* key, std::initializer_list<const char*> names) -> std::optional<int64_t> {
    if (config.is_object() && config.contains(key)) {
      const json& v = config[key];
      if (v.is_null()) return std::nullopt;
      std::string content = v.is_string() ? v.get<std::string>() : v.is_object() ? v.value("content", std::string()) : "";
      if (auto id = id_of(content)) return id;
    }
    for (const char* n : names)
      if (auto id = id_of(n)) return id;
    return std::nullopt;
  };
  p.specials.mask = pick("mask_token", {"[MASK]", "<mask>"});
  p.specials.pad = pick("pad_token", {"[PAD]", "<pad>"});
  if (auto unk = p.model->unk_id()) p.specials.unk = *unk;
  else p.specials.unk = pick("unk_token", {"[UNK]", "<unk>"});
  p.specials.cls = pick("cls_token", {"[CLS]", "<s>"});
  p.specials.sep = pick("sep_token", {"[SEP]", "</s>"});
  p.specials.bos = pick("bos_token", {"<s>", "<|begin_of_text|>", "<|endoftext|>"});
  p.specials.eos = pick("eos_token", {"</s>", "<|end_of_text|>", "<|endoftext|>"});
}

// transformers' Llama and Gemma tokenizer classes rebuild the post-processor from
// tokenizer_config.json's add_bos_token (default true) and add_eos_token (default false) when they
// load (LlamaTokenizerFast.update_post_processor): "<s> $A </s>" with each end as its flag says,
// whatever tokenizer.json holds. Other classes keep tokenizer.json's post-processor.
void template_from_flags(TokenizerParts& p, const json& config) {
  if (!config.is_object() || !config.contains("tokenizer_class") || !config["tokenizer_class"].is_string()) return;
  static const char* const rebuilt[] = {"LlamaTokenizer", "LlamaTokenizerFast", "CodeLlamaTokenizer",
                                        "CodeLlamaTokenizerFast", "GemmaTokenizer", "GemmaTokenizerFast"};
  const std::string cls = config["tokenizer_class"].get<std::string>();
  if (std::find(std::begin(rebuilt), std::end(rebuilt), cls) == std::end(rebuilt)) return;
  auto flag = [&](const char* key, bool fallback) {
    return config.contains(key) && config[key].is_boolean() ? config[key].get<bool>() : fallback;
  };
  auto end_piece = [&](const std::optional<int64_t>& id, const char* what) {
    if (!id) throw std::runtime_error("tokenizer_config.json: " + cls + " adds a " + what + " token, and none is named");
    return TemplatePiece{false, {static_cast<int32_t>(*id)}, {}};  // its token: the vocabulary's spelling
  };
  PostStep step;
  if (flag("add_bos_token", true)) step.single.push_back(end_piece(p.specials.bos, "begin"));
  step.single.push_back(TemplatePiece{true, {}, {}});
  if (flag("add_eos_token", false)) step.single.push_back(end_piece(p.specials.eos, "end"));
  p.post.clear();
  p.post.push_back(std::move(step));
}

std::shared_ptr<const Tokenizer> build_from_json(const json& root, const std::string& origin, const json& config) {
  try {
    if (!root.is_object() || !root.contains("model") || !root["model"].is_object())
      throw std::runtime_error("not a tokenizer.json (no \"model\" object)");
    TokenizerParts p;
    p.source = origin;
    p.normalizer = make_normalizer(root.value("normalizer", json(nullptr)));
    p.pre_tokenizer = make_pre_tokenizer(root.value("pre_tokenizer", json(nullptr)));
    const bool byte_level = p.pre_tokenizer && p.pre_tokenizer->byte_level();
    p.model = model_from_json(root.at("model"), byte_level, p.kind);
    if (root.contains("added_tokens") && !root["added_tokens"].is_null()) {
      std::vector<AddedToken> tokens;
      for (const json& t : root["added_tokens"]) tokens.push_back(added_token_from_json(t));
      add_with_hf_ids(tokens, p.model->vocab(), p.added);
    }
    post_from_json(root.value("post_processor", json(nullptr)), p.post);
    const json decoder = root.value("decoder", json(nullptr));
    if (!decoder.is_null()) {
      p.has_decoder = true;
      decoder_from_json(decoder, p.decoders);
    }
    resolve_specials(p, config);
    template_from_flags(p, config);
    return std::make_shared<HfTokenizer>(std::move(p));
  } catch (const json::exception& e) {
    throw std::runtime_error(origin + ": " + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(origin + ": " + e.what());
  }
}

// Added tokens listed in tokenizer_config.json's added_tokens_decoder, for the older formats.
void added_from_config(const json& config, AddedVocabulary& added) {
  if (!config.is_object() || !config.contains("added_tokens_decoder")) return;
  for (auto it = config["added_tokens_decoder"].begin(); it != config["added_tokens_decoder"].end(); ++it) {
    json t = it.value();  // checked by check_config
    t["id"] = *added_token_id(it.key());
    added.add(added_token_from_json(t));
  }
}

std::shared_ptr<const Tokenizer> load_vocab_txt(const fs::path& file) {
  const json config = read_config(file.parent_path());
  try {
    std::istringstream in(read_text(file));
    Vocab vocab;
    std::string line;
    int32_t index = 0;
    while (std::getline(in, line)) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
      vocab.add(line, index++);
    }
    if (index == 0) throw std::runtime_error("empty vocabulary");
    auto cfg = [&](const char* key, bool fallback) {
      return config.is_object() && config.contains(key) && config[key].is_boolean() ? config[key].get<bool>() : fallback;
    };
    TokenizerParts p;
    p.source = file.string();
    p.kind = "wordpiece";
    BertNormalizerOptions n;
    n.lowercase = cfg("do_lower_case", true);
    n.handle_chinese_chars = cfg("tokenize_chinese_chars", true);
    n.strip_accents = cfg("strip_accents", n.lowercase);
    p.normalizer = make_bert_normalizer(n);
    p.pre_tokenizer = make_bert_pre_tokenizer();
    for (const char* s : {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}) {
      if (auto id = vocab.find(s)) p.added.add(AddedToken{s, *id, false, false, false, false, true});
    }
    added_from_config(config, p.added);
    auto cls = vocab.find("[CLS]"), sep = vocab.find("[SEP]");
    if (cls && sep) {
      PostStep step;
      step.single = {TemplatePiece{false, {*cls}, {"[CLS]"}}, TemplatePiece{true, {}, {}}, TemplatePiece{false, {*sep}, {"[SEP]"}}};
      p.post.push_back(step);
    }
    p.has_decoder = true;
    DecodeStep d;
    d.kind = DecodeStep::Kind::WordPiece;
    d.cleanup = cfg("clean_up_tokenization_spaces", true);
    p.decoders.push_back(d);
    p.model = std::make_unique<WordPiece>(std::move(vocab), WordPieceOptions{});
    resolve_specials(p, config);
    return std::make_shared<HfTokenizer>(std::move(p));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(file.string() + ": " + e.what());
  }
}

std::shared_ptr<const Tokenizer> load_vocab_merges(const fs::path& vocab_file, const fs::path& merges_file) {
  const json config = read_config(vocab_file.parent_path());
  Vocab vocab;
  try {
    vocab = vocab_from_json(parse_json(read_text(vocab_file), vocab_file.string()));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(vocab_file.string() + ": " + e.what());
  }
  std::vector<std::pair<std::string, std::string>> merges;
  {
    std::istringstream in(read_text(merges_file));
    std::string line;
    size_t line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
      const size_t sp = line.find(' ');
      if (sp == std::string::npos || line.find(' ', sp + 1) != std::string::npos)
        throw std::runtime_error(merges_file.string() + ":" + std::to_string(line_no) + ": expected two tokens, got '" + line + "'");
      merges.emplace_back(line.substr(0, sp), line.substr(sp + 1));
    }
  }
  try {
    TokenizerParts p;
    p.source = vocab_file.string();
    p.kind = "bpe";
    const bool add_prefix_space =
        config.is_object() && config.contains("add_prefix_space") && config["add_prefix_space"].is_boolean() &&
        config["add_prefix_space"].get<bool>();
    p.pre_tokenizer = make_byte_level_pre_tokenizer(add_prefix_space, true);
    if (auto id = vocab.find("<|endoftext|>")) p.added.add(AddedToken{"<|endoftext|>", *id, false, false, false, true, true});
    added_from_config(config, p.added);
    p.has_decoder = true;
    DecodeStep byte_level;
    byte_level.kind = DecodeStep::Kind::ByteLevel;
    p.decoders.push_back(byte_level);
    BpeOptions o;
    o.byte_level = true;
    p.model = std::make_unique<Bpe>(std::move(vocab), merges, o);
    resolve_specials(p, config);
    return std::make_shared<HfTokenizer>(std::move(p));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(merges_file.string() + ": " + e.what());
  }
}

// vocab.json + merges.txt, or OpenAI's names encoder.json + vocab.bpe, in `dir`.
std::optional<std::pair<fs::path, fs::path>> find_vocab_merges(const fs::path& dir) {
  for (auto [v, m] : {std::pair{"vocab.json", "merges.txt"}, std::pair{"encoder.json", "vocab.bpe"}}) {
    if (fs::is_regular_file(dir / v) && fs::is_regular_file(dir / m)) return std::make_pair(dir / v, dir / m);
  }
  return std::nullopt;
}

}  // namespace

std::shared_ptr<const Tokenizer> Tokenizer::from_json(std::string_view json_text, const std::string& origin) {
  return build_from_json(parse_json(json_text, origin), origin, nullptr);
}

std::shared_ptr<const Tokenizer> Tokenizer::load(const std::string& path) {
  const fs::path p(path);
  std::error_code ec;
  if (!fs::exists(p, ec)) throw std::runtime_error("tokenizer: " + path + " does not exist");
  if (fs::is_directory(p, ec)) {
    if (fs::is_regular_file(p / "tokenizer.json")) return load((p / "tokenizer.json").string());
    if (fs::is_regular_file(p / "vocab.txt")) return load_vocab_txt(p / "vocab.txt");
    if (auto vm = find_vocab_merges(p)) return load_vocab_merges(vm->first, vm->second);
    throw std::runtime_error("tokenizer: " + path +
                             " holds no tokenizer.json, vocab.txt, or vocab.json + merges.txt");
  }
  const std::string name = p.filename().string();
  const std::string ext = p.extension().string();
  const fs::path dir = p.parent_path();
  if (name == "merges.txt" || ext == ".bpe") {
    auto vm = find_vocab_merges(dir);
    if (!vm) throw std::runtime_error("tokenizer: " + path + " needs vocab.json (or encoder.json) beside it");
    return load_vocab_merges(vm->first, vm->second);
  }
  if (ext == ".txt") return load_vocab_txt(p);
  if (ext == ".json") {
    const json root = parse_json(read_text(p), path);
    // vocab.json may well hold a token "model": tokenizer.json has an object there.
    if (root.is_object() && root.contains("model") && root["model"].is_object())
      return build_from_json(root, path, read_config(dir));
    // A plain token -> id map: the vocab.json half of a BPE tokenizer.
    for (const char* m : {"merges.txt", "vocab.bpe"}) {
      if (fs::is_regular_file(dir / m)) return load_vocab_merges(p, dir / m);
    }
    throw std::runtime_error(path + ": not a tokenizer.json (no \"model\" object) and no merges.txt beside it");
  }
  throw std::runtime_error("tokenizer: don't know how to read " + path +
                           " (expected tokenizer.json, vocab.txt, or vocab.json + merges.txt)");
}

}  // namespace headlab::core
