// Content hashes for session files: which weights a session was made with.
#pragma once

#include <string>

namespace headlab::core {

// FNV-1a 64 of a file's bytes as 16 hex digits; throws naming the file when it cannot be read.
std::string hash_file(const std::string& path);
// One hash over every byte of a model folder's weight files (*.safetensors, *.bin, sorted by
// name), "" if none. Reads the whole folder: sessions written before weights_identity hold this.
std::string hash_weight_files(const std::string& folder);

// Which weights a folder holds, without reading them all (a 7B folder would take minutes): per
// weight file its name, size and an FNV-1a 64 of 64 blocks of 64 KiB spread evenly through it
// (the whole file when it is smaller than that). "s1-" + 16 hex digits; "" without weight files.
std::string weights_identity(const std::string& folder);
// True when `hash` (either form above) names the weights in `folder` now.
bool same_weights(const std::string& folder, const std::string& hash);

}  // namespace headlab::core
