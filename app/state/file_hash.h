// Content hashes for session files: which weights a session was made with.
#pragma once

#include <string>

namespace headlab::app {

// FNV-1a 64 of a file's bytes as 16 hex digits; throws naming the file when it cannot be read.
std::string hash_file(const std::string& path);
// One hash over a model folder's weight files (*.safetensors, *.bin, sorted by name), "" if none.
std::string hash_weight_files(const std::string& folder);

}  // namespace headlab::app
