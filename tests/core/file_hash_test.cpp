// Which weights a session was made with: the sampled identity of a model folder is the same for
// the same files wherever they lie, changes with a file's size, name or a byte inside a sampled
// block, and hashes small files whole; hashes written by older sessions (every byte) still compare.
#include "test_common.h"

#include "core/file_hash.h"

#include <filesystem>
#include <fstream>
#include <string>

using headlab::test::TempDir;
using namespace headlab::core;
namespace fs = std::filesystem;

namespace {

// A weight file of `size` bytes whose byte i is (i * 7 + i / 4093) mod 251.
void write_weights(const std::string& path, size_t size) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 7 + i / 4093) % 251);
  std::ofstream(path, std::ios::binary) << bytes;
}

void poke(const std::string& path, size_t at) {
  std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(static_cast<std::streamoff>(at));
  f.put('\xff');
}

}  // namespace

TEST_CASE("a model folder's weights are identified by name, size and sampled blocks", "[app][session]") {
  TempDir dir("weights-identity");
  fs::create_directories(dir.str("a"));
  fs::create_directories(dir.str("b"));
  const size_t big = 9u << 20;  // 9 MiB: sampled (64 blocks of 64 KiB = 4 MiB)
  write_weights(dir.str("a/model.safetensors"), big);
  std::ofstream(dir.str("a/config.json")) << "{}";
  const std::string id = weights_identity(dir.str("a"));
  CHECK(id.rfind("s1-", 0) == 0);
  CHECK(id.size() == 3 + 16);
  CHECK(weights_identity(dir.str("b")).empty());  // no weight files

  // The same file elsewhere: the same weights (a copied folder keeps its sessions' hash).
  fs::copy_file(dir.str("a/model.safetensors"), dir.str("b/model.safetensors"));
  CHECK(weights_identity(dir.str("b")) == id);
  // config.json is not weights.
  std::ofstream(dir.str("a/config.json")) << R"({"changed": true})";
  CHECK(weights_identity(dir.str("a")) == id);

  SECTION("a byte in the first or the last block changes it") {
    poke(dir.str("b/model.safetensors"), 100);
    CHECK(weights_identity(dir.str("b")) != id);
  }
  SECTION("and a byte at the end") {
    poke(dir.str("b/model.safetensors"), big - 1);
    CHECK(weights_identity(dir.str("b")) != id);
  }
  SECTION("another size or another name changes it") {
    write_weights(dir.str("b/model.safetensors"), big + 1);
    CHECK(weights_identity(dir.str("b")) != id);
    fs::remove(dir.str("b/model.safetensors"));
    write_weights(dir.str("b/weights.safetensors"), big);
    CHECK(weights_identity(dir.str("b")) != id);
  }
  SECTION("a small file is hashed whole: any byte counts") {
    write_weights(dir.str("b/model.safetensors"), 100000);
    const std::string small = weights_identity(dir.str("b"));
    poke(dir.str("b/model.safetensors"), 54321);
    CHECK(weights_identity(dir.str("b")) != small);
  }
  SECTION("both forms compare: the sampled one and an older session's hash of every byte") {
    CHECK(same_weights(dir.str("a"), id));
    const std::string full = hash_weight_files(dir.str("a"));
    CHECK(full.size() == 16);
    CHECK(same_weights(dir.str("a"), full));
    poke(dir.str("a/model.safetensors"), big / 2 + 12345);  // between sampled blocks
    CHECK_FALSE(same_weights(dir.str("a"), full));           // every byte: seen
  }
}
