// Checks of command-line values that every command shares: number ranges and output paths. Each
// check refuses in one line, before a command loads a model or starts long work (exit 2). Torch-free,
// so the front end's commands use them as well.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace headlab::app {

// A number option's check, shown in --help as its range ("in [0, 1]", "in (0, 1]", ">= 0", "> 0").
// It refuses text that is not a number, NaN, an infinity, and any value outside the range; every
// comparison is written !(lo <= v && v <= hi), so a NaN fails it.
CLI::Validator number_in(double low, double high);     // [low, high]
CLI::Validator number_above(double low, double high);  // (low, high]
CLI::Validator non_negative();                         // [0, ∞), finite
CLI::Validator positive();                             // (0, ∞), finite

// A file a command writes (run's dump, generate --out, a screenshot): refused when it exists and
// `force` is false ("PATH exists; pass --force to replace it"), when it is a folder, and when its
// folder is missing or not writable (a file's folder is not created for it). `flag` names the option.
void check_output_file(const std::string& flag, const std::string& path, bool force);

// A folder a command writes into, created with any missing parents (as `mkdir -p`): refused when it
// is a file, when one of `replaced` (files in it that the command would replace) exists and `force` is
// false, and when it is not writable — or, missing, when the nearest existing folder above it, where
// it would be created, is not.
void check_output_folder(const std::string& flag, const std::string& folder, const std::vector<std::string>& replaced,
                         bool force);

}  // namespace headlab::app
