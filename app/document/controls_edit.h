// Editing ModelControls the way the Mixer does: gates, ablation, mixing presets, resets. Every edit
// leaves the controls canonical (all-1 gates and identity mixes stored as empty), so an untouched
// layer compares equal to the default and the engine's incremental run skips it.
#pragma once

#include "core/controls.h"

#include <string>
#include <vector>

namespace headlab::app {

enum class MixPreset { Identity, Uniform, Swap, Blend };

// An h×h row-major matrix for a preset. Swap exchanges heads a and b; Blend mixes them:
// a ← (1−α)·a + α·b and b ← α·a + (1−α)·b.
std::vector<float> mix_preset(MixPreset preset, int heads, int a = 0, int b = 1, float alpha = 0.5f);

bool is_identity(const std::vector<float>& matrix, int heads);

// Which mixing matrices change head `head` (its column of the matrix differs from the identity's):
// "pre", "post", "pre+post" or "" when neither.
std::string head_mixed(const core::HeadControls& controls, int head);

// Drops all-1 gates, identity mixes and mean outputs nobody asked for; shrinks trailing defaults.
void canonicalize(core::HeadControls& controls, int output_heads, int mix_heads_pre, int mix_heads_post);
void canonicalize(core::ModelControls& controls);

// Whether two canonical controls (canonicalize) set the same gates, ablations and mixing everywhere.
bool same_controls(const core::ModelControls& a, const core::ModelControls& b);

// Sets one gate, growing the vector to `heads` with 1s.
void set_gate(core::ModelControls& controls, core::Stack stack, int layer, int head, float value, int heads);
// Sets a mixing matrix ("pre" or "post"); an identity clears it.
void set_mix(core::ModelControls& controls, core::Stack stack, int layer, const std::string& which,
             std::vector<float> matrix, int heads);
void reset_layer(core::ModelControls& controls, core::Stack stack, int layer);

// The first layer of `stack` whose controls differ (the layer an incremental run starts at), or -1.
int first_changed_layer(const core::ModelControls& a, const core::ModelControls& b, core::Stack stack,
                        int layers);

}  // namespace headlab::app
