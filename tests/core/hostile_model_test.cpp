// Damaged and hostile model folders: each gives one error naming the file and the problem, before
// anything large is allocated — NaN/Inf weights, a config with a million layers or an absurd width,
// a config the weights cannot fill, a symbolic link loop, a 0-byte or truncated file, a tensor
// whose header claims 2^40 elements, an unreadable file; and `headlab info` says it in one line.
#include "test_common.h"
#include "small_models.h"

#include "core/atomic_file.h"
#include "core/json_integer.h"
#include "core/model/model.h"
#include "core/model/safetensors_torch.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include <unistd.h>

using namespace headlab;
namespace fs = std::filesystem;

namespace {

// A small native folder (encoder, 2 layers) written by HeadLab itself.
std::string write_folder(const test::TempDir& dir, const std::string& name) {
  auto config = test::small_model(core::StackKind::Encoder, test::attention(2, 2, 8, 8), 2, 40);
  auto model = core::make_random_model(config, 3);
  const std::string folder = dir.str(name);
  core::save_model(*model, folder);
  return folder;
}

void edit_config(const std::string& folder, const std::function<void(nlohmann::json&)>& edit) {
  const std::string path = folder + "/config.json";
  auto j = nlohmann::json::parse(core::read_file_bytes(path));
  edit(j);
  core::write_file_atomic(path, j.dump());
}

std::string load_error(const std::string& folder) {
  try {
    core::load_model(folder);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(loaded)";
}

}  // namespace

TEST_CASE("a folder HeadLab wrote loads (the baseline the damaged copies start from)", "[model][hostile]") {
  test::TempDir dir("hostile_ok");
  CHECK_NOTHROW(core::load_model(write_folder(dir, "m")));
}

TEST_CASE("NaN and infinite weights are refused, naming the file and the tensor", "[model][hostile]") {
  test::TempDir dir("hostile_nan");
  const std::string folder = write_folder(dir, "m");
  const std::string weights = folder + "/model.safetensors";
  auto file = core::SafetensorsFile::open(weights);
  const core::TensorInfo* info = file.find("encoder.1.attn.o.weight");
  REQUIRE(info);
  REQUIRE(info->dtype == core::DType::F32);
  std::string bytes = core::read_file_bytes(weights);
  uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  SECTION("NaN") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::memcpy(&bytes[8 + header + info->begin + 4 * 5], &nan, 4);
  }
  SECTION("infinity") {
    const float inf = -std::numeric_limits<float>::infinity();
    std::memcpy(&bytes[8 + header + info->begin], &inf, 4);
  }
  core::write_file_atomic(weights, bytes);
  const std::string error = load_error(folder);
  CHECK_THAT(error, Catch::Contains(weights) && Catch::Contains("encoder.1.attn.o.weight") &&
                        Catch::Contains("1 NaN or infinite value"));
}

TEST_CASE("a config asking for absurd sizes is refused before anything is allocated", "[model][hostile]") {
  test::TempDir dir("hostile_config");
  const std::string folder = write_folder(dir, "m");
  SECTION("a million layers") {
    edit_config(folder, [](nlohmann::json& j) { j["encoder"]["layers"] = 1000000; });
    CHECK_THAT(load_error(folder), Catch::Contains("config.json") && Catch::Contains("layers 1000000"));
  }
  SECTION("a width of 2^20") {
    edit_config(folder, [](nlohmann::json& j) { j["hidden_size"] = 1 << 20; });
    CHECK_THAT(load_error(folder), Catch::Contains("hidden_size 1048576"));
  }
  SECTION("sizes each allowed but together beyond 2^40 parameters") {
    edit_config(folder, [](nlohmann::json& j) {
      j["hidden_size"] = 65536;
      j["ffn"]["inner_size"] = 524288;
      j["encoder"]["layers"] = 1000;
      j["encoder"]["attention"]["heads"] = 512;
      j["encoder"]["attention"]["kv_heads"] = 512;
      j["encoder"]["attention"]["key_size"] = 128;
      j["encoder"]["attention"]["value_size"] = 128;
    });
    CHECK_THAT(load_error(folder), Catch::Contains("more than HeadLab opens (2^40)"));
  }
  SECTION("500 layers the weights cannot fill: refused by counting, not by allocating 500 layers") {
    edit_config(folder, [](nlohmann::json& j) { j["encoder"]["layers"] = 500; });
    CHECK_THAT(load_error(folder), Catch::Contains("config.json describes") && Catch::Contains("model.safetensors holds") &&
                                       Catch::Contains("config and weights disagree"));
  }
  SECTION("a negative size") {
    edit_config(folder, [](nlohmann::json& j) { j["ffn"]["inner_size"] = -4; });
    CHECK_THAT(load_error(folder), Catch::Contains("config.json") && Catch::Contains("inner_size"));
  }
}

TEST_CASE("damaged weight files are refused with the file and the reason", "[model][hostile]") {
  test::TempDir dir("hostile_files");
  const std::string folder = write_folder(dir, "m");
  const std::string weights = folder + "/model.safetensors";
  SECTION("0 bytes") {
    core::write_file_atomic(weights, "");
    CHECK_THAT(load_error(folder), Catch::Contains(weights) && Catch::Contains("0 bytes"));
  }
  SECTION("cut in the middle of the data") {
    const std::string bytes = core::read_file_bytes(weights);
    core::write_file_atomic(weights, bytes.substr(0, bytes.size() / 2));
    CHECK_THAT(load_error(folder), Catch::Contains(weights));
  }
  SECTION("a weight whose header says integers") {
    // F32 relabelled I32: the same bytes, read as numbers they would be other weights.
    std::string bytes = core::read_file_bytes(weights);
    const size_t at = bytes.find("\"F32\"", bytes.find("\"encoder.1.attn.o.weight\""));
    REQUIRE(at != std::string::npos);
    bytes.replace(at, 5, "\"I32\"");
    core::write_file_atomic(weights, bytes);
    CHECK_THAT(load_error(folder), Catch::Contains(weights) && Catch::Contains("encoder.1.attn.o.weight") &&
                                       Catch::Contains("has dtype I32, expected F32, F16, BF16 or F64"));
  }
  SECTION("a header claiming a 2^40-element tensor") {
    const std::string header = R"({"tokens.weight":{"dtype":"F32","shape":[1048576,1048576],"data_offsets":[0,16]}})";
    std::string bytes(8, '\0');
    const uint64_t n = header.size();
    std::memcpy(bytes.data(), &n, 8);
    core::write_file_atomic(weights, bytes + header + std::string(16, '\0'));
    CHECK_THAT(load_error(folder), Catch::Contains(weights) && Catch::Contains("tokens.weight"));
  }
  SECTION("a symbolic link loop") {
    fs::remove(weights);
    fs::create_symlink("model.safetensors", weights);
    CHECK_THAT(load_error(folder), Catch::Contains(weights) && Catch::Contains("symbolic links"));
  }
  SECTION("a file that cannot be read") {
    fs::permissions(weights, fs::perms::none);
    // root reads any file regardless of its mode: the case exists only for other users.
    if (::geteuid() != 0) CHECK_THAT(load_error(folder), Catch::Contains(weights) && Catch::Contains("ermission"));
    else CHECK(load_error(folder) == "(loaded)");
    fs::permissions(weights, fs::perms::owner_all);
  }
  SECTION("a config.json that is not JSON") {
    core::write_file_atomic(folder + "/config.json", "{\"hidden_size\": 16,");
    CHECK_THAT(load_error(folder), Catch::Contains("config.json: not valid JSON"));
  }
}

TEST_CASE("headlab info on a hostile folder: one line naming the file, exit 1", "[model][hostile][cli]") {
  test::TempDir dir("hostile_cli");
  const std::string folder = write_folder(dir, "m");
  edit_config(folder, [](nlohmann::json& j) { j["encoder"]["layers"] = 1000000; });
  std::string out;
  CHECK(test::run_command(std::string(HEADLAB_BINARY) + " info --model " + folder, out) == 1);
  INFO(out);
  CHECK_THAT(out, Catch::Contains(folder + "/config.json") && Catch::Contains("layers 1000000"));
  CHECK(std::count(out.begin(), out.end(), '\n') <= 1);
}

// Found by fuzzing (fuzz_model_config): a number too large for an int in config.json — as a float or
// as an integer — must be refused by name, never cast (a float → int cast out of range is undefined).
TEST_CASE("config numbers beyond an int are refused, naming the key", "[model][hostile][config]") {
  test::TempDir dir("hostile_numbers");
  const std::string folder = write_folder(dir, "m");
  SECTION("a float of 2.5e30") {
    edit_config(folder, [](nlohmann::json& j) { j["max_positions"] = 2.5e30; });
    CHECK_THAT(load_error(folder), Catch::Contains("max_positions") && Catch::Contains("wrong type"));
  }
  SECTION("an integer of 2^40") {
    edit_config(folder, [](nlohmann::json& j) { j["hidden_size"] = int64_t(1) << 40; });
    CHECK_THAT(load_error(folder), Catch::Contains("hidden_size") && Catch::Contains("out of range"));
  }
  SECTION("a fraction") {
    edit_config(folder, [](nlohmann::json& j) { j["encoder"]["layers"] = 2.5; });
    CHECK_THAT(load_error(folder), Catch::Contains("layers") && Catch::Contains("wrong type"));
  }
}

TEST_CASE("get_integer takes integers within range only", "[model][hostile]") {
  using nlohmann::json;
  CHECK(core::get_integer<int>(json(42)) == 42);
  CHECK(core::get_integer<int>(json(-7)) == -7);
  CHECK(core::get_integer<int64_t>(json(int64_t(1) << 40)) == int64_t(1) << 40);
  CHECK(core::get_integer<uint8_t>(json(255)) == 255);
  CHECK_THROWS_AS(core::get_integer<int>(json(2.5e30)), json::type_error);
  CHECK_THROWS_AS(core::get_integer<int>(json(3.0)), json::type_error);
  CHECK_THROWS_AS(core::get_integer<int>(json("3")), json::type_error);
  CHECK_THROWS_AS(core::get_integer<int>(json(int64_t(1) << 40)), json::out_of_range);
  CHECK_THROWS_AS(core::get_integer<uint8_t>(json(-1)), json::out_of_range);
  CHECK_THROWS_AS(core::get_integer<int64_t>(json(std::numeric_limits<uint64_t>::max())), json::out_of_range);
}
