#include "test_common.h"

#include "core/model/safetensors_torch.h"

#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

using namespace headlab::core;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// u64 little-endian, spelled out byte by byte so the test does not share the reader's assumptions.
std::string u64_le(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return s;
}

uint64_t read_u64_le(const std::string& s) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(s[i]);
  return v;
}

// A file in the safetensors layout built by hand: length, header (optionally space-padded), data.
std::string make_file(std::string header, const std::string& data, size_t pad_to = 8) {
  if (pad_to > 1) header.append((pad_to - header.size() % pad_to) % pad_to, ' ');
  return u64_le(header.size()) + header + data;
}

std::string open_error(const std::string& path) {
  try {
    SafetensorsFile::open(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "<no error>";
}

std::string load_error(const SafetensorsFile& f, const std::string& name) {
  try {
    load_tensor(f, name);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "<no error>";
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "<no error>";
}

std::vector<std::string> dir_entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// |a - b| <= |a| * rel + abs, elementwise, in float64.
bool within(const torch::Tensor& a, const torch::Tensor& b, double rel, double abs) {
  auto x = a.to(torch::kFloat64), y = b.to(torch::kFloat64);
  return ((x - y).abs() <= x.abs() * rel + abs).all().item<bool>();
}

}  // namespace

TEST_CASE("safetensors: dtype names, sizes and torch types map both ways", "[safetensors]") {
  const std::vector<std::tuple<DType, std::string, size_t, torch::ScalarType>> all = {
      {DType::F64, "F64", 8, torch::kFloat64}, {DType::F32, "F32", 4, torch::kFloat32},
      {DType::F16, "F16", 2, torch::kHalf},    {DType::BF16, "BF16", 2, torch::kBFloat16},
      {DType::I64, "I64", 8, torch::kInt64},   {DType::I32, "I32", 4, torch::kInt32},
      {DType::I16, "I16", 2, torch::kInt16},   {DType::I8, "I8", 1, torch::kInt8},
      {DType::U8, "U8", 1, torch::kUInt8},     {DType::BOOL, "BOOL", 1, torch::kBool}};
  for (const auto& [dtype, name, size, scalar] : all) {
    INFO(name);
    CHECK(dtype_name(dtype) == name);
    CHECK(dtype_from_name(name) == dtype);
    CHECK(dtype_size(dtype) == size);
    CHECK(to_scalar_type(dtype) == scalar);
    CHECK(dtype_from_scalar_type(scalar) == dtype);
  }
  CHECK_THROWS_AS(dtype_from_name("F8_E4M3"), std::runtime_error);
  CHECK_THROWS_AS(dtype_from_name("f32"), std::runtime_error);
  CHECK_THROWS_AS(dtype_from_scalar_type(torch::kComplexFloat), std::runtime_error);
}

TEST_CASE("safetensors: F32 round trip keeps order, shapes, scalars and empty tensors", "[safetensors]") {
  headlab::test::TempDir dir("st-f32");
  const std::string path = dir.str("model.safetensors");
  torch::manual_seed(1);
  const std::vector<std::pair<std::string, torch::Tensor>> tensors = {
      {"z.last", torch::randn({2, 3})},     {"a.first", torch::randn({5})},
      {"scalar", torch::tensor(3.25f)},     {"empty", torch::zeros({0, 4})},
      {"cube", torch::randn({1, 2, 3, 4})}, {"ones", torch::ones({7})}};
  save_safetensors(path, tensors);

  auto f = SafetensorsFile::open(path);
  CHECK(f.path() == path);
  REQUIRE(f.tensors().size() == tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, expected] = tensors[i];
    INFO(name);
    CHECK(f.tensors()[i].name == name);  // the given order, not sorted
    REQUIRE(f.contains(name));
    CHECK(f.find(name)->dtype == DType::F32);
    CHECK(f.find(name)->shape == expected.sizes().vec());
    torch::Tensor t = load_tensor(f, name);
    CHECK(t.scalar_type() == torch::kFloat32);
    CHECK(t.sizes() == expected.sizes());
    CHECK(torch::equal(t, expected));
  }
  CHECK(load_tensor(f, "scalar").dim() == 0);
  CHECK(load_tensor(f, "scalar").item<float>() == 3.25f);
  CHECK(load_tensor(f, "empty").numel() == 0);
  CHECK(load_tensor(f, "empty", torch::kFloat16).scalar_type() == torch::kHalf);
  CHECK_FALSE(f.contains("missing"));
  CHECK(f.find("missing") == nullptr);
  CHECK(f.metadata().empty());

  // Offsets are consecutive from 0 in the given order (no holes).
  uint64_t offset = 0;
  for (const auto& info : f.tensors()) {
    CHECK(info.begin == offset);
    offset = info.end;
  }
  CHECK(offset == fs::file_size(path) - 8 - read_u64_le(read_bytes(path)));
}

TEST_CASE("safetensors: F16 round trip within half precision, exact where representable", "[safetensors]") {
  headlab::test::TempDir dir("st-f16");
  const std::string path = dir.str("half.safetensors");
  torch::manual_seed(2);
  const torch::Tensor random = torch::randn({64, 3}) * 10;
  const torch::Tensor exact = torch::tensor({0.0f, 1.0f, -2.0f, 0.5f, 1024.0f, 65504.0f, -0.25f, 3.140625f, 6.103515625e-05f});
  const torch::Tensor ints = torch::arange(10, torch::kInt64);
  save_safetensors(path, {{"random", random}, {"exact", exact}, {"ints", ints}}, DType::F16);

  auto f = SafetensorsFile::open(path);
  CHECK(f.find("random")->dtype == DType::F16);
  CHECK(f.find("exact")->dtype == DType::F16);
  CHECK(f.find("ints")->dtype == DType::I64);  // store_as touches floating tensors only

  const torch::Tensor r = load_tensor(f, "random");
  CHECK(r.scalar_type() == torch::kFloat32);
  CHECK(within(random, r, std::ldexp(1.0, -11), std::ldexp(1.0, -24)));
  CHECK(torch::equal(load_tensor(f, "exact"), exact));
  const torch::Tensor h = load_tensor(f, "exact", torch::kHalf);
  CHECK(h.scalar_type() == torch::kHalf);
  CHECK(torch::equal(h, exact.to(torch::kHalf)));
  CHECK(torch::equal(load_tensor(f, "ints", torch::kInt64), ints));
  CHECK(torch::equal(load_tensor(f, "random", torch::kBFloat16), random.to(torch::kHalf).to(torch::kBFloat16)));
}

TEST_CASE("safetensors: BF16 round trip within bfloat16 precision, exact where representable", "[safetensors]") {
  headlab::test::TempDir dir("st-bf16");
  const std::string path = dir.str("bf16.safetensors");
  torch::manual_seed(3);
  const torch::Tensor random = torch::randn({128}) * 100;
  const torch::Tensor exact = torch::tensor({0.0f, 1.0f, -2.0f, 0.5f, 3.140625f, std::ldexp(1.0f, 100), -std::ldexp(1.0f, -100)});
  save_safetensors(path, {{"random", random}, {"exact", exact}}, DType::BF16);

  auto f = SafetensorsFile::open(path);
  CHECK(f.find("random")->dtype == DType::BF16);
  CHECK(within(random, load_tensor(f, "random"), std::ldexp(1.0, -8), 0.0));
  CHECK(torch::equal(load_tensor(f, "exact"), exact));
  const torch::Tensor b = load_tensor(f, "exact", torch::kBFloat16);
  CHECK(b.scalar_type() == torch::kBFloat16);
  CHECK(torch::equal(b, exact.to(torch::kBFloat16)));
  CHECK(b.data_ptr() == f.data(*f.find("exact")));  // stored BF16 loaded as BF16: zero-copy
}

TEST_CASE("safetensors: F64 storage and conversion of a double tensor to F16", "[safetensors]") {
  headlab::test::TempDir dir("st-f64");
  const torch::Tensor d = torch::tensor({1.0 / 3.0, -1e100, 2.5}, torch::kFloat64);
  save_safetensors(dir.str("d.safetensors"), {{"d", d}}, DType::F64);
  auto f = SafetensorsFile::open(dir.str("d.safetensors"));
  CHECK(f.find("d")->dtype == DType::F64);
  CHECK(torch::equal(load_tensor(f, "d", torch::kFloat64), d));
  CHECK(load_tensor(f, "d").scalar_type() == torch::kFloat32);

  save_safetensors(dir.str("h.safetensors"), {{"d", torch::tensor({0.5, 1.5}, torch::kFloat64)}}, DType::F16);
  auto h = SafetensorsFile::open(dir.str("h.safetensors"));
  CHECK(h.find("d")->dtype == DType::F16);
  CHECK(torch::equal(load_tensor(h, "d"), torch::tensor({0.5f, 1.5f})));
}

TEST_CASE("safetensors: integer and bool tensors keep their dtype and values", "[safetensors]") {
  headlab::test::TempDir dir("st-int");
  const std::string path = dir.str("ints.safetensors");
  const auto i64 = torch::tensor({std::numeric_limits<int64_t>::min(), int64_t{-1}, int64_t{0},
                                  std::numeric_limits<int64_t>::max()});
  const auto i32 = torch::tensor({std::numeric_limits<int32_t>::min(), -7, 0, std::numeric_limits<int32_t>::max()}, torch::kInt32);
  const auto i16 = torch::tensor({-32768, -1, 0, 32767}, torch::kInt16);
  const auto i8 = torch::tensor({-128, -1, 0, 127}, torch::kInt8);
  const auto u8 = torch::arange(256, torch::kUInt8).reshape({16, 16});
  const auto b = torch::tensor({true, false, false, true, true});
  save_safetensors(path, {{"i64", i64}, {"i32", i32}, {"i16", i16}, {"i8", i8}, {"u8", u8}, {"b", b}}, DType::F16);

  auto f = SafetensorsFile::open(path);
  const std::vector<std::tuple<std::string, DType, torch::Tensor>> expected = {
      {"i64", DType::I64, i64}, {"i32", DType::I32, i32}, {"i16", DType::I16, i16},
      {"i8", DType::I8, i8},    {"u8", DType::U8, u8},    {"b", DType::BOOL, b}};
  for (const auto& [name, dtype, tensor] : expected) {
    INFO(name);
    CHECK(f.find(name)->dtype == dtype);
    const torch::Tensor t = load_tensor(f, name, tensor.scalar_type());
    CHECK(t.scalar_type() == tensor.scalar_type());
    CHECK(torch::equal(t, tensor));
  }
  // The default `as` converts to float32.
  CHECK(torch::equal(load_tensor(f, "i16"), i16.to(torch::kFloat32)));
  CHECK(torch::equal(load_tensor(f, "u8"), u8.to(torch::kFloat32)));
  CHECK(torch::equal(load_tensor(f, "b"), b.to(torch::kFloat32)));
}

TEST_CASE("safetensors: metadata round trip", "[safetensors]") {
  headlab::test::TempDir dir("st-meta");
  const std::string path = dir.str("meta.safetensors");
  const std::map<std::string, std::string> meta = {
      {"format", "pt"}, {"empty", ""}, {"unicode", "Größe – 注意力"}, {"quote\"key", "line\nbreak\\"}};
  save_safetensors(path, {{"w", torch::ones({2})}}, DType::F32, meta);
  auto f = SafetensorsFile::open(path);
  CHECK(f.metadata() == meta);
  CHECK(f.tensors().size() == 1);  // __metadata__ is not a tensor
  CHECK_FALSE(f.contains("__metadata__"));

  // Metadata alone, no tensors.
  save_safetensors(path, {}, DType::F32, meta);
  auto g = SafetensorsFile::open(path);
  CHECK(g.metadata() == meta);
  CHECK(g.tensors().empty());
}

TEST_CASE("safetensors: the writer's bytes follow the format, checked without the reader", "[safetensors]") {
  headlab::test::TempDir dir("st-bytes");
  const std::string path = dir.str("x.safetensors");
  const torch::Tensor w = torch::tensor({{1.0f, -2.0f, 0.5f}, {3.0f, 0.0f, -0.0f}});
  const torch::Tensor h = torch::tensor({1.5f}).to(torch::kHalf);
  const torch::Tensor ids = torch::tensor({1, -1, 300}, torch::kInt16);
  const torch::Tensor nc = torch::arange(6, torch::kFloat32).reshape({2, 3}).t();  // not contiguous
  save_safetensors(path, {{"w", w}, {"h", h}, {"ids", ids}, {"nc", nc}}, DType::F32, {{"k", "v"}});

  const std::string bytes = read_bytes(path);
  REQUIRE(bytes.size() >= 8);
  const uint64_t n = read_u64_le(bytes);
  CHECK(n % 8 == 0);
  REQUIRE(8 + n <= bytes.size());
  const std::string header_text = bytes.substr(8, n);
  CHECK(header_text.front() == '{');
  const auto last = header_text.find_last_not_of(' ');
  CHECK(header_text[last] == '}');
  auto header = nlohmann::ordered_json::parse(header_text);
  const std::string data = bytes.substr(8 + n);

  CHECK(header["__metadata__"] == nlohmann::ordered_json({{"k", "v"}}));
  std::vector<std::string> names;
  for (auto it = header.begin(); it != header.end(); ++it)
    if (it.key() != "__metadata__") names.push_back(it.key());
  CHECK(names == std::vector<std::string>{"w", "h", "ids", "nc"});

  CHECK(header["w"]["dtype"] == "F32");
  CHECK(header["w"]["shape"] == nlohmann::ordered_json::array({2, 3}));
  CHECK(header["w"]["data_offsets"] == nlohmann::ordered_json::array({0, 24}));
  CHECK(header["h"]["dtype"] == "F32");  // store_as converts the F16 tensor
  CHECK(header["h"]["data_offsets"] == nlohmann::ordered_json::array({24, 28}));
  CHECK(header["ids"]["dtype"] == "I16");
  CHECK(header["ids"]["data_offsets"] == nlohmann::ordered_json::array({28, 34}));
  CHECK(header["nc"]["shape"] == nlohmann::ordered_json::array({3, 2}));
  CHECK(header["nc"]["data_offsets"] == nlohmann::ordered_json::array({34, 58}));
  CHECK(data.size() == 58);
  CHECK(SafetensorsFile::open(path).bytes() == 58);  // the data after the header, counted by the reader

  // Little-endian IEEE bytes: 1.0f = 00 00 80 3f, -2.0f = 00 00 00 c0; I16 300 = 2c 01.
  CHECK(data.substr(0, 8) == std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8));
  CHECK(data.substr(28, 6) == std::string("\x01\x00\xff\xff\x2c\x01", 6));
  // The transposed tensor is written in its logical (row-major) order: 0 3 1 4 2 5.
  const torch::Tensor nc_c = nc.contiguous();
  CHECK(std::memcmp(data.data() + 34, nc_c.data_ptr(), 24) == 0);
}

TEST_CASE("safetensors: store_as converts every floating tensor, whatever its own dtype", "[safetensors]") {
  headlab::test::TempDir dir("st-store");
  const std::string path = dir.str("s.safetensors");
  save_safetensors(path, {{"h", torch::tensor({1.5f}).to(torch::kHalf)}, {"d", torch::tensor({2.5}, torch::kFloat64)}},
                   DType::F32);
  auto f = SafetensorsFile::open(path);
  CHECK(f.find("h")->dtype == DType::F32);
  CHECK(f.find("d")->dtype == DType::F32);
  CHECK(load_tensor(f, "h").item<float>() == 1.5f);
  // An integer store_as is not a floating target: floating tensors keep their dtype.
  save_safetensors(path, {{"h", torch::tensor({1.5f}).to(torch::kHalf)}}, DType::I32);
  CHECK(SafetensorsFile::open(path).find("h")->dtype == DType::F16);
}

TEST_CASE("safetensors: a hand-built file is parsed, with and without header padding", "[safetensors]") {
  headlab::test::TempDir dir("st-hand");
  const std::string header =
      R"({"__metadata__":{"format":"pt"},"weight":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
      R"("ids":{"dtype":"I16","shape":[3],"data_offsets":[16,22]},"h":{"dtype":"F16","shape":[1],"data_offsets":[22,24]},)"
      R"("b":{"dtype":"BF16","shape":[],"data_offsets":[24,26]},"none":{"dtype":"I64","shape":[0,3],"data_offsets":[26,26]},)"
      R"("flag":{"dtype":"BOOL","shape":[2],"data_offsets":[26,28]}})";
  const std::string data = std::string("\x00\x00\x80\x3f", 4)    // 1.0f
                           + std::string("\x00\x00\x00\xc0", 4)  // -2.0f
                           + std::string("\x00\x00\x00\x3f", 4)  // 0.5f
                           + std::string("\x00\x00\x40\x40", 4)  // 3.0f
                           + std::string("\x01\x00\xff\xff\x2c\x01", 6)  // I16 1, -1, 300
                           + std::string("\x00\x3e", 2)          // F16 1.5
                           + std::string("\xc0\x3f", 2)          // BF16 1.5
                           + std::string("\x01\x00", 2);         // BOOL true, false
  for (size_t pad : {size_t{1}, size_t{8}, size_t{3}}) {
    INFO("pad_to " << pad);
    const std::string path = dir.str("hand.safetensors");
    write_bytes(path, make_file(header, data, pad));
    auto f = SafetensorsFile::open(path);
    REQUIRE(f.tensors().size() == 6);
    CHECK(f.tensors()[0].name == "weight");
    CHECK(f.tensors()[5].name == "flag");
    CHECK(f.metadata() == std::map<std::string, std::string>{{"format", "pt"}});
    CHECK(torch::equal(load_tensor(f, "weight"), torch::tensor({{1.0f, -2.0f}, {0.5f, 3.0f}})));
    CHECK(torch::equal(load_tensor(f, "ids", torch::kInt16), torch::tensor({1, -1, 300}, torch::kInt16)));
    CHECK(load_tensor(f, "h").item<float>() == 1.5f);
    CHECK(load_tensor(f, "b").dim() == 0);
    CHECK(load_tensor(f, "b").item<float>() == 1.5f);
    CHECK(load_tensor(f, "none").sizes().vec() == std::vector<int64_t>{0, 3});
    CHECK(torch::equal(load_tensor(f, "flag", torch::kBool), torch::tensor({true, false})));
  }
}

TEST_CASE("safetensors: loads are zero-copy views into the mapping that outlive the file object", "[safetensors]") {
  headlab::test::TempDir dir("st-zero");
  const std::string path = dir.str("z.safetensors");
  const torch::Tensor w = torch::arange(1000, torch::kFloat32).reshape({10, 100});
  save_safetensors(path, {{"w", w}, {"v", torch::ones({3})}});
  const std::string before = read_bytes(path);

  torch::Tensor t, row;
  {
    auto f = SafetensorsFile::open(path);
    const TensorInfo& info = *f.find("w");
    t = load_tensor(f, "w");
    CHECK(t.data_ptr() == static_cast<const void*>(f.data(info)));
    const auto* p = static_cast<const uint8_t*>(t.data_ptr());
    CHECK((p >= f.data(f.tensors().front()) && p + 4000 <= f.data(f.tensors().back()) + 12));
    // A converted load is a copy.
    const torch::Tensor h = load_tensor(f, "w", torch::kHalf);
    CHECK(h.data_ptr() != static_cast<const void*>(f.data(info)));
    CHECK(torch::equal(h, w.to(torch::kHalf)));
    row = load_tensor(f, "w").select(0, 7);  // a view of a view
  }
  // The SafetensorsFile is gone; its mapping lives on in the tensors.
  CHECK(torch::equal(t, w));
  t = torch::Tensor();
  CHECK(torch::equal(row, w.select(0, 7)));

  // Writing into a zero-copy tensor copies the page (MAP_PRIVATE): the file is never modified.
  {
    auto f = SafetensorsFile::open(path);
    torch::Tensor m = load_tensor(f, "w");
    m.mul_(2);
    CHECK(torch::equal(m, w * 2));
    CHECK(torch::equal(load_tensor(f, "w"), w * 2));  // same private mapping
  }
  CHECK(read_bytes(path) == before);
  CHECK(torch::equal(load_tensor(SafetensorsFile::open(path), "w"), w));
}

TEST_CASE("safetensors: a misaligned tensor is copied, not viewed", "[safetensors]") {
  headlab::test::TempDir dir("st-align");
  const std::string path = dir.str("a.safetensors");
  const torch::Tensor f32 = torch::randn({5});
  // 3 halves = 6 bytes, so the F32 tensor starts at data offset 6: not 4-aligned.
  save_safetensors(path, {{"h", torch::ones({3}).to(torch::kHalf)}, {"f", f32}}, DType::I8 /* keep dtypes */);
  auto f = SafetensorsFile::open(path);
  const TensorInfo& info = *f.find("f");
  CHECK(info.begin == 6);
  CHECK(reinterpret_cast<uintptr_t>(f.data(info)) % 4 == 2);
  const torch::Tensor t = load_tensor(f, "f");
  CHECK(t.data_ptr() != static_cast<const void*>(f.data(info)));
  CHECK(torch::equal(t, f32));
  CHECK(torch::equal(load_tensor(f, "f", torch::kFloat64), f32.to(torch::kFloat64)));
}

TEST_CASE("safetensors: defective files throw runtime_error naming the file and the tensor", "[safetensors]") {
  headlab::test::TempDir dir("st-bad");
  const std::string path = dir.str("bad.safetensors");
  const std::string data256(256, '\0');
  struct Case {
    std::string label;
    std::string bytes;
    std::vector<std::string> expect;
  };
  auto tensor = [](const std::string& name, const std::string& body) {
    return "{\"" + name + "\":" + body + "}";
  };
  const std::vector<Case> cases = {
      {"empty file", "", {"too short"}},
      {"7 bytes", std::string(7, '\0'), {"too short"}},
      {"header length beyond the file", u64_le(1000) + "{}" + std::string(40, ' '), {"header length 1000", "exceeds"}},
      {"header length absurd", u64_le(uint64_t{1} << 63) + "{}", {"100 MB"}},
      {"header length 0", u64_le(0), {"not valid JSON"}},
      {"bad JSON", make_file(R"({"w": {"dtype": )", ""), {"not valid JSON"}},
      {"invalid UTF-8", make_file("{\"w\xff\": 1}", ""), {"not valid JSON"}},
      {"not an object", make_file("[1, 2, 3]", ""), {"not a JSON object"}},
      {"duplicate name", make_file(R"({"w":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"w":{"dtype":"F32","shape":[],"data_offsets":[4,8]}})", std::string(8, '\0')), {"'w' twice"}},
      {"entry not an object", make_file(tensor("enc.w", "5"), ""), {"tensor 'enc.w'", "not a JSON object"}},
      {"unknown dtype", make_file(tensor("enc.w", R"({"dtype":"F8","shape":[1],"data_offsets":[0,1]})"), "x"), {"tensor 'enc.w'", "unsupported dtype 'F8'"}},
      {"unsupported dtype", make_file(tensor("enc.w", R"({"dtype":"U16","shape":[1],"data_offsets":[0,2]})"), "xx"), {"tensor 'enc.w'", "'U16'"}},
      {"dtype not a string", make_file(tensor("enc.w", R"({"dtype":4,"shape":[1],"data_offsets":[0,4]})"), "xxxx"), {"tensor 'enc.w'", "dtype"}},
      {"missing shape", make_file(tensor("enc.w", R"({"dtype":"F32","data_offsets":[0,4]})"), "xxxx"), {"tensor 'enc.w'", "shape"}},
      {"negative dim", make_file(tensor("enc.w", R"({"dtype":"F32","shape":[-1,4],"data_offsets":[0,16]})"), data256), {"tensor 'enc.w'", "negative"}},
      {"fractional dim", make_file(tensor("enc.w", R"({"dtype":"F32","shape":[2.5],"data_offsets":[0,10]})"), data256), {"tensor 'enc.w'", "non-integer"}},
      {"numel overflow", make_file(tensor("enc.w", R"({"dtype":"F32","shape":[4294967296,4294967296,4],"data_offsets":[0,0]})"), ""), {"tensor 'enc.w'", "too many elements"}},
      {"byte overflow", make_file(tensor("enc.w", R"({"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]})"), ""), {"tensor 'enc.w'", "too many bytes"}},
      {"huge dim", make_file(tensor("enc.w", R"({"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,0]})"), ""), {"tensor 'enc.w'", "too many"}},
      {"missing offsets", make_file(tensor("enc.w", R"({"dtype":"F32","shape":[1]})"), "xxxx"), {"tensor 'enc.w'", "data_offsets"}},
      {"one offset", make_file(tensor("enc.w", R"({"dtype":"F32","shape":[1],"data_offsets":[4]})"), "xxxx"), {"tensor 'enc.w'", "data_offsets"}},
      {"negative offset", make_file(tensor("enc.w", R"({"dtype":"F32","shape":[1],"data_offsets":[-4,0]})"), "xxxx"), {"tensor 'enc.w'", "data_offsets"}},
      {"begin after end", make_file(tensor("enc.w", R"({"dtype":"F32","shape":[1],"data_offsets":[8,4]})"), data256), {"tensor 'enc.w'", "begin > end"}},
      {"offset beyond data",
       make_file(tensor("encoder.layers.0.attn.q.weight", R"({"dtype":"F32","shape":[10,10],"data_offsets":[0,400]})"), data256),
       {"bad.safetensors: tensor 'encoder.layers.0.attn.q.weight': data_offsets [0, 400] exceed the data section (256 bytes)"}},
      {"offset far beyond data", make_file(tensor("enc.w", R"({"dtype":"U8","shape":[4],"data_offsets":[18446744073709551612,18446744073709551615]})"), ""), {"tensor 'enc.w'"}},
      {"byte count mismatch", make_file(tensor("enc.w", R"({"dtype":"F32","shape":[2,3],"data_offsets":[0,20]})"), data256), {"tensor 'enc.w'", "needs 24"}},
      {"overlap", make_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"enc.w":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})", data256), {"tensor 'enc.w'", "overlap tensor 'a'"}},
      {"metadata value not a string", make_file(R"({"__metadata__":{"epochs":3}})", ""), {"__metadata__", "'epochs'"}},
      {"metadata not an object", make_file(R"({"__metadata__":"pt"})", ""), {"__metadata__"}},
  };
  for (const auto& c : cases) {
    INFO(c.label);
    write_bytes(path, c.bytes);
    const std::string message = open_error(path);
    CHECK_THAT(message, Contains("bad.safetensors: "));
    for (const auto& piece : c.expect) CHECK_THAT(message, Contains(piece));
  }

  CHECK_THAT(open_error(dir.str("absent.safetensors")), Contains("absent.safetensors: cannot open"));
  CHECK_THAT(open_error(dir.str()), Contains("not a regular file"));
  REQUIRE(::mkfifo(dir.str("fifo.safetensors").c_str(), 0600) == 0);
  CHECK_THAT(open_error(dir.str("fifo.safetensors")), Contains("fifo.safetensors: not a regular file"));  // no hang

  // Holes between tensors are tolerated, and an empty tensor may sit anywhere.
  write_bytes(path, make_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},"e":{"dtype":"F32","shape":[0],"data_offsets":[10,10]}})",
                              std::string(16, '\0')));
  CHECK_NOTHROW(SafetensorsFile::open(path));
}

TEST_CASE("safetensors: load errors name the file and the tensor", "[safetensors]") {
  headlab::test::TempDir dir("st-loaderr");
  const std::string path = dir.str("m.safetensors");
  write_bytes(path, make_file(R"({"flag":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})", std::string("\x01\x02\x00", 3)));
  auto f = SafetensorsFile::open(path);  // the structure is fine; the values are not
  CHECK_THAT(load_error(f, "flag"), Contains("m.safetensors: tensor 'flag'") && Contains("not 0 or 1"));
  CHECK_THAT(load_error(f, "nope"), Contains("m.safetensors: tensor 'nope' not found"));

  TensorInfo foreign;
  foreign.name = "foreign";
  foreign.begin = 0;
  foreign.end = 1 << 20;
  CHECK_THAT(error_of([&] { f.data(foreign); }), Contains("m.safetensors") && Contains("'foreign'"));
}

TEST_CASE("safetensors: every truncation of a valid file is rejected cleanly", "[safetensors]") {
  headlab::test::TempDir dir("st-trunc");
  const std::string good = dir.str("good.safetensors");
  save_safetensors(good, {{"a", torch::randn({3, 4})}, {"b", torch::arange(5)}, {"c", torch::ones({2}).to(torch::kHalf)}},
                   DType::F16, {{"format", "pt"}});
  const std::string bytes = read_bytes(good);
  const std::string path = dir.str("cut.safetensors");
  size_t rejected = 0;
  for (size_t len = 0; len < bytes.size(); ++len) {
    write_bytes(path, bytes.substr(0, len));
    if (open_error(path).rfind(path + ": ", 0) == 0) ++rejected;  // message starts with the path
  }
  CHECK(rejected == bytes.size());
}

TEST_CASE("safetensors: randomly damaged headers never crash the reader", "[safetensors]") {
  headlab::test::TempDir dir("st-fuzz");
  const std::string good = dir.str("good.safetensors");
  save_safetensors(good,
                   {{"a", torch::randn({3, 4})}, {"b", torch::arange(5)}, {"c", torch::ones({2}).to(torch::kHalf)},
                    {"d", torch::tensor({true, false})}, {"e", torch::zeros({0})}},
                   DType::F32);
  const std::string bytes = read_bytes(good);
  const uint64_t n = read_u64_le(bytes);
  const std::string path = dir.str("fuzz.safetensors");
  std::vector<size_t> digits;  // header positions holding a digit (shapes and offsets)
  for (size_t i = 8; i < 8 + n; ++i)
    if (std::isdigit(static_cast<unsigned char>(bytes[i]))) digits.push_back(i);
  REQUIRE(!digits.empty());
  std::mt19937 rng(12345);
  size_t opened = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string b = bytes;
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      // Mostly rewrite a digit (the JSON stays valid but shapes and offsets lie); sometimes any
      // byte, including the length field.
      if (rng() % 4 != 0) {
        b[digits[rng() % digits.size()]] = static_cast<char>('0' + rng() % 10);
      } else {
        b[rng() % (8 + n)] = static_cast<char>(rng() % 256);
      }
    }
    write_bytes(path, b);
    try {
      auto f = SafetensorsFile::open(path);
      ++opened;
      for (const auto& info : f.tensors()) {
        try {
          torch::Tensor t = load_tensor(f, info.name);
          CHECK(t.numel() * static_cast<int64_t>(dtype_size(info.dtype)) == static_cast<int64_t>(info.end - info.begin));
        } catch (const std::runtime_error& e) {
          CHECK_THAT(std::string(e.what()), Contains("fuzz.safetensors: "));
        }
      }
    } catch (const std::runtime_error& e) {
      ++rejected;
      const std::string message = e.what();
      if (message.find("fuzz.safetensors: ") == std::string::npos) FAIL("unnamed error: " << message);
    }
  }
  INFO("opened " << opened << ", rejected " << rejected);
  CHECK(opened + rejected == 3000);
  CHECK(rejected > 0);
  CHECK(opened > 0);
}

TEST_CASE("safetensors: save rejects bad input before touching the old file", "[safetensors]") {
  headlab::test::TempDir dir("st-saveerr");
  const std::string path = dir.str("keep.safetensors");
  const torch::Tensor w = torch::randn({4});
  save_safetensors(path, {{"w", w}});
  const std::string before = read_bytes(path);

  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, torch::Tensor>>>> bad = {
      {"duplicate tensor name 'x'", {{"x", torch::ones({1})}, {"x", torch::ones({2})}}},
      {"empty tensor name", {{"", torch::ones({1})}}},
      {"'__metadata__' is reserved", {{"__metadata__", torch::ones({1})}}},
      {"tensor 'u': undefined", {{"u", torch::Tensor()}}},
      {"tensor 'c'", {{"c", torch::ones({2}, torch::kComplexFloat)}}},
  };
  for (const auto& [expect, tensors_of_case] : bad) {
    INFO(expect);
    const auto& tensors = tensors_of_case;  // C++17: a lambda cannot capture a structured binding
    const std::string message = error_of([&] { save_safetensors(path, tensors); });
    CHECK_THAT(message, Contains(path + ": ") && Contains(expect));
  }
  CHECK_THAT(error_of([&] { save_safetensors(path, {{"w", w}}, DType::F32, {{"bad", "\xff\xfe"}}); }),
             Contains(path + ": "));
  CHECK(read_bytes(path) == before);
  CHECK(dir_entries(dir.str()) == std::vector<std::string>{"keep.safetensors"});

  const std::string nowhere = dir.str("no/such/dir/x.safetensors");
  CHECK_THAT(error_of([&] { save_safetensors(nowhere, {{"w", w}}); }), Contains(nowhere + ": "));
}

TEST_CASE("safetensors: atomic save replaces the file and leaves no temp files", "[safetensors]") {
  headlab::test::TempDir dir("st-atomic");
  const std::string path = dir.str("model.safetensors");
  save_safetensors(path, {{"w", torch::ones({3})}});
  save_safetensors(path, {{"w", torch::full({5}, 2.0f)}, {"x", torch::zeros({1})}});
  auto f = SafetensorsFile::open(path);
  CHECK(torch::equal(load_tensor(f, "w"), torch::full({5}, 2.0f)));
  CHECK(f.contains("x"));
  CHECK(dir_entries(dir.str()) == std::vector<std::string>{"model.safetensors"});

  // Permissions follow the umask like any new file (not mkstemp's 0600).
  const mode_t mask = ::umask(022);
  ::umask(mask);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == (0666 & ~mask));

  // A relative path with no folder part writes into the current directory.
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path);
  CHECK_NOTHROW(save_safetensors("rel.safetensors", {{"w", torch::ones({1})}}));
  fs::current_path(cwd);
  CHECK(SafetensorsFile::open(dir.str("rel.safetensors")).contains("w"));
}

TEST_CASE("safetensors: a failed rename removes the temp file", "[safetensors]") {
  headlab::test::TempDir dir("st-rename");
  // The target is a non-empty directory, so the final rename fails after the data is written.
  const std::string path = dir.str("target.safetensors");
  fs::create_directories(path);
  write_bytes(path + "/inside", "x");
  CHECK_THAT(error_of([&] { save_safetensors(path, {{"w", torch::ones({3})}}); }),
             Contains(path + ": ") && Contains("rename"));
  CHECK(dir_entries(dir.str()) == std::vector<std::string>{"target.safetensors"});
}

TEST_CASE("safetensors: a write that fails midway keeps the old file intact", "[safetensors]") {
  headlab::test::TempDir dir("st-midway");
  const std::string path = dir.str("model.safetensors");
  const torch::Tensor old = torch::randn({16});
  save_safetensors(path, {{"w", old}});
  const std::string before = read_bytes(path);

  // RLIMIT_FSIZE makes write(2) fail with EFBIG partway through a 4 MB tensor, even as root.
  // No Catch assertion runs while the limit is in force (its output could be a file too).
  struct rlimit saved {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit limited = saved;
  limited.rlim_cur = 64 * 1024;
  const bool limit_set = ::setrlimit(RLIMIT_FSIZE, &limited) == 0;
  std::string message;
  if (limit_set) message = error_of([&] { save_safetensors(path, {{"w", torch::randn({1 << 20})}}); });
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);

  REQUIRE(limit_set);
  CHECK_THAT(message, Contains(path + ": ") && Contains("write failed"));
  CHECK(read_bytes(path) == before);
  CHECK(torch::equal(load_tensor(SafetensorsFile::open(path), "w"), old));
  CHECK(dir_entries(dir.str()) == std::vector<std::string>{"model.safetensors"});
}
