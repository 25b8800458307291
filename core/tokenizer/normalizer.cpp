#include "core/tokenizer/normalizer.h"

#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tokenizer/json_keys.h"
#include "core/tokenizer/precompiled.h"
#include "core/tokenizer/regex.h"
#include "core/tokenizer/unicode.h"

namespace headlab::core::tok {

namespace {

class BertNormalizer : public Normalizer {
 public:
  explicit BertNormalizer(const BertNormalizerOptions& o) : o_(o) {}

  void normalize(NormalizedText& t) const override {
    if (o_.clean_text) {
      bool dirty = false;
      for (char32_t c : t.chars) {
        if (c < 0x20 || c >= 0x7F) {
          dirty = true;
          break;
        }
      }
      if (dirty) {
        t.filter([](char32_t c) { return !(c == 0 || c == 0xFFFD || is_bert_control(c)); });
        t.map([](char32_t c) { return is_whitespace(c) ? U' ' : c; });
      }
    }
    if (o_.handle_chinese_chars) pad_chinese(t);
    if (o_.strip_accents) {
      t.nfd();
      bool has_marks = false;
      for (char32_t c : t.chars) has_marks = has_marks || is_mark_nonspacing(c);
      if (has_marks) t.filter([](char32_t c) { return !is_mark_nonspacing(c); });
    }
    if (o_.lowercase) t.lowercase();
  }

 private:
  // Each CJK ideograph becomes " c " (all three aligned to it), so it splits into its own word.
  static void pad_chinese(NormalizedText& t) {
    bool any = false;
    for (char32_t c : t.chars) any = any || (c >= 0x3400 && is_chinese_char(c));
    if (!any) return;
    std::vector<Change> dest;
    dest.reserve(t.chars.size() + 16);
    for (char32_t c : t.chars) {
      if (c >= 0x3400 && is_chinese_char(c)) {
        dest.push_back({U' ', 0});
        dest.push_back({c, 1});
        dest.push_back({U' ', 1});
      } else {
        dest.push_back({c, 0});
      }
    }
    t.transform(dest, 0);
  }

  BertNormalizerOptions o_;
};

enum class Form { NFC, NFD, NFKC, NFKD };

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(Form f) : form_(f) {}
  void normalize(NormalizedText& t) const override {
    switch (form_) {
      case Form::NFC: t.nfc(); break;
      case Form::NFD: t.nfd(); break;
      case Form::NFKC: t.nfkc(); break;
      case Form::NFKD: t.nfkd(); break;
    }
  }

 private:
  Form form_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  void normalize(NormalizedText& t) const override { t.lowercase(); }
};

// HF's StripAccents removes combining marks (Mn, Mc, Me); meant to follow NFD/NFKD.
class StripAccentsNormalizer : public Normalizer {
 public:
  void normalize(NormalizedText& t) const override {
    t.filter([](char32_t c) {
      if (c < 0x300) return true;
      int cat = unicode_category(c);
      return !(cat == 6 || cat == 7 || cat == 8);  // UTF8PROC_CATEGORY_MN / MC / ME
    });
  }
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(NormalizedText& t) const override { t.strip(left_, right_); }

 private:
  bool left_, right_;
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::u32string s) : s_(std::move(s)) {}
  void normalize(NormalizedText& t) const override { t.prepend(s_); }

 private:
  std::u32string s_;
};

// HF's normalizers::Replace: every match of the pattern (a literal string or a regex) becomes
// `content`.
class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(const std::string& pattern, std::u32string content) : regex_(pattern), content_(std::move(content)) {}
  void normalize(NormalizedText& t) const override {
    if (t.chars.empty()) return;  // HF finds no match in an empty string
    t.finalize();
    thread_local std::vector<std::pair<uint32_t, uint32_t>> bytes;
    bytes.clear();
    regex_.find_all(t.utf8, bytes);
    if (bytes.empty()) return;
    std::vector<std::pair<uint32_t, uint32_t>> matches;
    matches.reserve(bytes.size());
    for (auto [b, e] : bytes) matches.emplace_back(t.char_at_byte(b), t.char_at_byte(e));
    t.replace(matches, content_);
  }

 private:
  Regex regex_;
  std::u32string content_;
};

class PrecompiledNormalizer : public Normalizer {
 public:
  explicit PrecompiledNormalizer(std::string_view blob) : map_(blob) {}
  void normalize(NormalizedText& t) const override { map_.normalize(t); }

 private:
  PrecompiledCharsMap map_;
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(NormalizedText& t) const override {
    for (const auto& s : steps_) s->normalize(t);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

std::unique_ptr<Normalizer> make_bert_normalizer(const BertNormalizerOptions& options) {
  return std::make_unique<BertNormalizer>(options);
}

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j) {
  if (j.is_null()) return nullptr;
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
    throw std::runtime_error("normalizer: expected an object with a \"type\"");
  const std::string type = j["type"].get<std::string>();
  if (type == "BertNormalizer") {
    BertNormalizerOptions o;
    o.clean_text = j.value("clean_text", true);
    o.handle_chinese_chars = j.value("handle_chinese_chars", true);
    o.lowercase = j.value("lowercase", true);
    const auto it = j.find("strip_accents");
    o.strip_accents = (it == j.end() || it->is_null()) ? o.lowercase : it->get<bool>();
    return make_bert_normalizer(o);
  }
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(Form::NFC);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(Form::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(Form::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(Form::NFKD);
  if (type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (type == "StripAccents") return std::make_unique<StripAccentsNormalizer>();
  if (type == "Strip") return std::make_unique<StripNormalizer>(j.value("strip_left", true), j.value("strip_right", true));
  if (type == "Prepend") return std::make_unique<PrependNormalizer>(utf8_to_u32(j.at("prepend").get<std::string>()));
  if (type == "Replace") {
    require_known_keys(j, {"type", "pattern", "content"}, "normalizer Replace");
    return std::make_unique<ReplaceNormalizer>(pattern_from_json(j.at("pattern"), "normalizer Replace"),
                                               utf8_to_u32(j.at("content").get<std::string>()));
  }
  if (type == "Precompiled") {
    require_known_keys(j, {"type", "precompiled_charsmap"}, "normalizer Precompiled");
    const auto& map = j.at("precompiled_charsmap");
    if (!map.is_string()) throw std::runtime_error("normalizer Precompiled: precompiled_charsmap must be a base64 string");
    try {
      return std::make_unique<PrecompiledNormalizer>(base64_decode(map.get<std::string>()));
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string("normalizer Precompiled: ") + e.what());
    }
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const auto& s : j.at("normalizers")) {
      if (auto n = make_normalizer(s)) steps.push_back(std::move(n));
    }
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  throw std::runtime_error("unsupported normalizer type '" + type + "'");
}

}  // namespace headlab::core::tok
