#include "app/gui/textures.h"

#define GL_GLEXT_PROTOTYPES
#include <GL/gl.h>

#include <chrono>

namespace headlab::app {

HeadTextures::~HeadTextures() { clear(); }

void HeadTextures::clear() {
  for (auto& l : layers_)
    for (auto& e : l.heads)
      if (e.texture) glDeleteTextures(1, &e.texture);
  layers_.clear();
}

int HeadTextures::sync(const AttentionMaps* maps, Stage stage, const MapStyle& style) {
  if (!maps) {
    clear();
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  if (maps->stack != stack_ || stage != stage_ || !(style == style_)) {
    for (auto& l : layers_) l.version = 0;  // keep the GL names, re-fill every layer
    stack_ = maps->stack;
    stage_ = stage;
    style_ = style;
  }
  if (layers_.size() > maps->layers.size()) {
    for (size_t l = maps->layers.size(); l < layers_.size(); ++l)
      for (auto& e : layers_[l].heads)
        if (e.texture) glDeleteTextures(1, &e.texture);
  }
  layers_.resize(maps->layers.size());
  int uploaded = 0;
  const bool logits = stage == Stage::J || stage == Stage::L;
  for (size_t l = 0; l < maps->layers.size(); ++l) {
    const LayerMaps& lm = maps->layers[l];
    const StageMaps& sm = lm.stages[static_cast<int>(stage)];
    Layer& layer = layers_[l];
    if (layer.version == lm.version && layer.version != 0) continue;
    layer.version = lm.version;
    const int heads = sm.empty() ? 0 : sm.heads;
    for (size_t h = heads; h < layer.heads.size(); ++h)
      if (layer.heads[h].texture) glDeleteTextures(1, &layer.heads[h].texture);
    layer.heads.resize(heads);
    if (heads == 0) continue;
    pixels_.resize(static_cast<size_t>(sm.rows) * sm.cols * 4);
    for (int h = 0; h < heads; ++h) {
      Entry& e = layer.heads[h];
      const float* data = sm.head(h);
      e.range = map_range(data, static_cast<size_t>(sm.rows) * sm.cols, logits, style.log_scale, style.fixed_range);
      colorize(data, sm.rows, sm.cols, e.range, style.colormap, pixels_.data());
      if (!e.texture) {
        glGenTextures(1, &e.texture);
        glBindTexture(GL_TEXTURE_2D, e.texture);
        // Crisp cells when enlarged; averaged (not aliased) when a long input is drawn small.
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_LINEAR);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
      } else {
        glBindTexture(GL_TEXTURE_2D, e.texture);
      }
      glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
      if (e.width == sm.cols && e.height == sm.rows) {
        glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, sm.cols, sm.rows, GL_RGBA, GL_UNSIGNED_BYTE, pixels_.data());
      } else {
        glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA, sm.cols, sm.rows, 0, GL_RGBA, GL_UNSIGNED_BYTE, pixels_.data());
        e.width = sm.cols;
        e.height = sm.rows;
      }
      ++uploaded;
    }
  }
  if (uploaded) last_upload_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return uploaded;
}

unsigned HeadTextures::texture(int layer, int head) const {
  if (layer < 0 || layer >= static_cast<int>(layers_.size())) return 0;
  const auto& heads = layers_[layer].heads;
  return head >= 0 && head < static_cast<int>(heads.size()) ? heads[head].texture : 0;
}

MapRange HeadTextures::range(int layer, int head) const {
  if (layer < 0 || layer >= static_cast<int>(layers_.size())) return {};
  const auto& heads = layers_[layer].heads;
  return head >= 0 && head < static_cast<int>(heads.size()) ? heads[head].range : MapRange{};
}

}  // namespace headlab::app
