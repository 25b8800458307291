// Which attention stacks a model has and where each one's maps sit in a trace: the one answer for
// every measure, view and command that walks "every head" of a model. A stack is the encoder's
// self-attention, the decoder's self-attention, or the decoder's cross-attention (core/controls.h).
#pragma once

#include "core/config.h"
#include "core/controls.h"
#include "core/model/run.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace headlab::core {

// The stacks of a configuration in report order: encoder, decoder, cross.
inline std::vector<Stack> stacks_of(const ModelConfig& c) {
  std::vector<Stack> out;
  if (c.encoder) out.push_back(Stack::Encoder);
  if (c.decoder) out.push_back(Stack::Decoder);
  if (c.decoder && c.decoder->cross_attention) out.push_back(Stack::Cross);
  return out;
}

// The configuration of the layers that hold a stack (cross-attention lives in the decoder's layers);
// throws std::invalid_argument naming the stack when the model has none.
inline const StackConfig& layers_config(const ModelConfig& c, Stack stack) {
  const auto& s = layers_of(stack) == Stack::Encoder ? c.encoder : c.decoder;
  if (!s || (stack == Stack::Cross && !s->cross_attention))
    throw std::invalid_argument(std::string("this model has no '") + stack_name(stack) + "' attention");
  return *s;
}

// A stack's attention configuration: the self-attention of encoder or decoder, or the decoder's
// cross-attention.
inline const AttentionConfig& attention_of(const ModelConfig& c, Stack stack) {
  const StackConfig& s = layers_config(c, stack);
  return stack == Stack::Cross ? *s.cross_attention : s.attention;
}

// One attention call of a trace: layer `layer`'s self-attention of a stack, or a decoder layer's
// cross-attention. The layer must have been captured.
inline const AttentionStages& stages_of(const Trace& trace, Stack stack, int layer) {
  const StackTrace& s = layers_of(stack) == Stack::Encoder ? trace.encoder : trace.decoder;
  const LayerTrace& l = s.layers.at(static_cast<size_t>(layer));
  return stack == Stack::Cross ? l.cross : l.self;
}

}  // namespace headlab::core
