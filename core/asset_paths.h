// Where HeadLab's shipped assets (model folders, configs, the UD sample) are: found at run time from
// the environment or the program's own location, never through the source path it was built from,
// so an installed copy (bin/headlab + share/headlab/assets) works anywhere.
#pragma once

#include <string>

namespace headlab::core {

// The first folder holding configs/ or models/ among: $HEADLAB_DATA, $HEADLAB_ASSETS, ./assets, and
// next to the executable: assets, ../assets, ../../assets (a build tree inside the source tree),
// ../share/headlab/assets (an installed prefix; ../../share/headlab/assets from the engine in
// libexec/headlab). "" when there is none.
std::string find_assets_dir();

// assets/models/default when complete (config.json and model.safetensors), else the newest complete
// folder under assets/models; "" when there is none.
std::string find_default_model(const std::string& assets_dir);

// The model a command uses without --model: find_default_model(find_assets_dir()); throws
// std::runtime_error saying where it looked when there is none.
std::string default_model_or_throw();

}  // namespace headlab::core
