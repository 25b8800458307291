// The window's JSON documents: a session, a GUI script and a head_report.json, each from any bytes.
#include "fuzz_common.h"

#include "analysis/head_report.h"
#include "app/document/script.h"
#include "app/document/session.h"

#include <nlohmann/json.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(data, data + size);
  } catch (const nlohmann::json::exception&) {
    return 0;  // not JSON: the loaders' own parse step says so (tested in their unit tests)
  }
  headlab::fuzz::expect_clean([&] { (void)headlab::app::session_from_json(j); });
  headlab::fuzz::expect_clean([&] { (void)headlab::app::parse_script(j, "fuzz.json"); });
  headlab::fuzz::expect_clean([&] { (void)headlab::analysis::head_report_from_json(j); });
  return 0;
}
