#include "app/gui/textures.h"

#define GL_GLEXT_PROTOTYPES
#include <GL/gl.h>
#include <GL/glext.h>

#include "app/layout/map_levels.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <cstdlib>

namespace headlab::app {

namespace {

// The same vertex layout and projection as imgui_impl_opengl3 (Position, UV, Color; ProjMtx), so
// ImGui's vertex array feeds this program unchanged.
const char* kVertexShader = R"(#version 330 core
in vec2 Position;
in vec2 UV;
in vec4 Color;
uniform mat4 ProjMtx;
out vec2 Frag_UV;
out vec4 Frag_Color;
void main() {
  Frag_UV = UV;
  Frag_Color = Color;
  gl_Position = ProjMtx * vec4(Position.xy, 0, 1);
}
)";

// The CPU path's colour of a key the layer's pattern forbids (the shader hatches it).
constexpr uint8_t kMaskedRgba[4] = {56, 56, 61, 255};

// MapRange::normalize, then the colormap texel: the CPU path's colours from raw weights.
const char* kFragmentShader = R"(#version 330 core
in vec2 Frag_UV;
in vec4 Frag_Color;
uniform sampler2D Map;
uniform sampler2D Lut;
uniform float Lo;
uniform float Hi;
uniform int Log;
layout (location = 0) out vec4 Out_Color;
void main() {
  float v = texture(Map, Frag_UV).r;
  if (isnan(v)) {  // a key the layer's pattern forbids: hatched grey, apart from any weight
    float g = mod(gl_FragCoord.x + gl_FragCoord.y, 6.0) < 3.0 ? 0.20 : 0.28;
    Out_Color = vec4(g, g, g + 0.02, 1.0) * Frag_Color;
    return;
  }
  float t;
  if (isinf(v)) {
    t = 0.0;
  } else if (Log != 0) {
    float floor_v = Hi * 1e-4;
    t = (v <= floor_v || Hi <= 0.0) ? 0.0 : log(v / floor_v) / (4.0 * log(10.0));
  } else if (Hi <= Lo) {
    t = v >= Hi ? 1.0 : 0.0;
  } else {
    t = (v - Lo) / (Hi - Lo);
  }
  int index = int(clamp(t, 0.0, 1.0) * 255.0 + 0.5);
  Out_Color = vec4(texelFetch(Lut, ivec2(index, 0), 0).rgb, 1.0) * Frag_Color;
}
)";

GLuint compile(GLenum type, const char* source) {
  const GLuint shader = glCreateShader(type);
  glShaderSource(shader, 1, &source, nullptr);
  glCompileShader(shader);
  GLint ok = 0;
  glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
  if (!ok) {
    glDeleteShader(shader);
    return 0;
  }
  return shader;
}

}  // namespace

HeadTextures::~HeadTextures() {
  clear();
  if (program_) glDeleteProgram(program_);
  if (lut_) glDeleteTextures(1, &lut_);
}

void HeadTextures::clear() {
  for (auto& l : layers_)
    for (auto& e : l.heads)
      if (e.texture) glDeleteTextures(1, &e.texture);
  layers_.clear();
}

bool HeadTextures::build_program() {
  const GLuint vs = compile(GL_VERTEX_SHADER, kVertexShader);
  const GLuint fs = compile(GL_FRAGMENT_SHADER, kFragmentShader);
  if (!vs || !fs) {
    if (vs) glDeleteShader(vs);
    if (fs) glDeleteShader(fs);
    return false;
  }
  program_ = glCreateProgram();
  glAttachShader(program_, vs);
  glAttachShader(program_, fs);
  glLinkProgram(program_);
  glDeleteShader(vs);
  glDeleteShader(fs);
  GLint ok = 0;
  glGetProgramiv(program_, GL_LINK_STATUS, &ok);
  if (!ok) {
    glDeleteProgram(program_);
    program_ = 0;
    return false;
  }
  read_locations();
  return true;
}

void HeadTextures::read_locations() const {
  loc_proj_ = glGetUniformLocation(program_, "ProjMtx");
  loc_map_ = glGetUniformLocation(program_, "Map");
  loc_lut_ = glGetUniformLocation(program_, "Lut");
  loc_lo_ = glGetUniformLocation(program_, "Lo");
  loc_hi_ = glGetUniformLocation(program_, "Hi");
  loc_log_ = glGetUniformLocation(program_, "Log");
  loc_imgui_proj_ = -1;
}

void HeadTextures::build_lut(Colormap map) {
  uint8_t rgba[256 * 4];
  for (int i = 0; i < 256; ++i) {
    const Rgb c = colormap_rgb(map, i / 255.0f);
    rgba[4 * i] = c.r, rgba[4 * i + 1] = c.g, rgba[4 * i + 2] = c.b, rgba[4 * i + 3] = 255;
  }
  if (!lut_) {
    glGenTextures(1, &lut_);
    glBindTexture(GL_TEXTURE_2D, lut_);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
  } else {
    glBindTexture(GL_TEXTURE_2D, lut_);
  }
  glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
  glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, 256, 1, 0, GL_RGBA, GL_UNSIGNED_BYTE, rgba);
  lut_map_ = map;
  lut_built_ = true;
}

void HeadTextures::use_program(const ImDrawList*, const ImDrawCmd* cmd) {
  const auto* p = static_cast<const DrawParams*>(cmd->UserCallbackData);
  const HeadTextures& self = *p->owner;
  // ImGui's program is current: take its projection (it differs for a scaled capture) and, once,
  // its attribute locations.
  GLint imgui_program = 0;
  glGetIntegerv(GL_CURRENT_PROGRAM, &imgui_program);
  if (imgui_program == 0 || static_cast<GLuint>(imgui_program) == self.program_) return;
  if (self.linked_for_ != static_cast<unsigned>(imgui_program)) {
    const GLint pos = glGetAttribLocation(imgui_program, "Position");
    const GLint uv = glGetAttribLocation(imgui_program, "UV");
    const GLint col = glGetAttribLocation(imgui_program, "Color");
    if (pos >= 0 && uv >= 0 && col >= 0 &&
        (glGetAttribLocation(self.program_, "Position") != pos || glGetAttribLocation(self.program_, "UV") != uv ||
         glGetAttribLocation(self.program_, "Color") != col)) {
      glBindAttribLocation(self.program_, pos, "Position");
      glBindAttribLocation(self.program_, uv, "UV");
      glBindAttribLocation(self.program_, col, "Color");
      glLinkProgram(self.program_);
      self.read_locations();  // linking may move uniforms
    }
    self.linked_for_ = static_cast<unsigned>(imgui_program);
    self.loc_imgui_proj_ = glGetUniformLocation(imgui_program, "ProjMtx");
  }
  float proj[16];
  glGetUniformfv(imgui_program, self.loc_imgui_proj_, proj);
  glUseProgram(self.program_);
  glUniformMatrix4fv(self.loc_proj_, 1, GL_FALSE, proj);
  glUniform1i(self.loc_map_, 0);
  glUniform1i(self.loc_lut_, 1);
  glUniform1f(self.loc_lo_, p->range.lo);
  glUniform1f(self.loc_hi_, p->range.hi);
  glUniform1i(self.loc_log_, p->range.log ? 1 : 0);
  glActiveTexture(GL_TEXTURE1);
  glBindTexture(GL_TEXTURE_2D, self.lut_);
  glActiveTexture(GL_TEXTURE0);
}

void HeadTextures::draw(ImDrawList* list, int layer, int head, ImVec2 p0, ImVec2 p1, ImVec2 uv0, ImVec2 uv1) {
  const unsigned tex = texture(layer, head);
  if (!tex) return;
  const ImTextureID id = reinterpret_cast<ImTextureID>(static_cast<intptr_t>(tex));
  if (!gpu_colour()) {
    list->AddImage(id, p0, p1, uv0, uv1);
    return;
  }
  // Parameters live until this frame's draw data has been rendered and captured.
  if (params_frame_ != ImGui::GetFrameCount()) {
    params_.clear();
    params_frame_ = ImGui::GetFrameCount();
  }
  params_.push_back({this, range(layer, head)});
  list->AddCallback(&HeadTextures::use_program, &params_.back());
  list->AddImage(id, p0, p1, uv0, uv1);
  list->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
}

int HeadTextures::sync(const AttentionMaps* maps, Stage stage, const MapStyle& style) {
  if (!maps) {
    clear();
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  if (gpu_colour_ < 0) {
    const char* cpu = std::getenv("HEADLAB_CPU_COLOUR");
    gpu_colour_ = (cpu && *cpu && *cpu != '0') ? 0 : build_program() ? 1 : 0;
  }
  if (gpu_colour() && (!lut_built_ || lut_map_ != style.colormap)) build_lut(style.colormap);
  MapStyle compared = style;
  if (gpu_colour()) compared.colormap = style_.colormap;  // the colormap texture alone changes
  if (maps->stack != stack_ || stage != stage_ || !(compared == style_)) {
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
    const size_t cells = static_cast<size_t>(sm.rows) * sm.cols;
    const bool shade = lm.masked && lm.masked->size() == cells;
    for (int h = 0; h < heads; ++h) {
      Entry& e = layer.heads[h];
      const float* data = sm.head(h);
      e.range = map_range(data, cells, logits, style.log_scale, !style.auto_range);
      if (!e.texture) {
        glGenTextures(1, &e.texture);
        glBindTexture(GL_TEXTURE_2D, e.texture);
        // Crisp cells when enlarged; drawn smaller, the GL picks the max-pooled level that fits.
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST_MIPMAP_NEAREST);
        // Nearest-level selection rounds: without the bias a level up to √2 larger than the drawn
        // size is sampled, and nearest sampling skips some of its rows and columns (a sink column
        // could vanish). Biased by ½, the level is never larger than the drawn size.
        glTexParameterf(GL_TEXTURE_2D, GL_TEXTURE_LOD_BIAS, 0.5f);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_S, GL_CLAMP_TO_EDGE);
        glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_WRAP_T, GL_CLAMP_TO_EDGE);
      } else {
        glBindTexture(GL_TEXTURE_2D, e.texture);
      }
      glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
      // Forbidden keys are NaN in every level: the shader hatches them, the CPU path paints them.
      const auto levels = max_levels(data, sm.rows, sm.cols, shade ? lm.masked->data() : nullptr);
      const bool same_size = e.width == sm.cols && e.height == sm.rows;
      for (size_t k = 0; k < levels.size(); ++k) {
        const MapLevel& lv = levels[k];
        const GLint level = static_cast<GLint>(k);
        if (gpu_colour()) {
          // Raw weights; the shader colours them with the range and the colormap texture.
          if (same_size)
            glTexSubImage2D(GL_TEXTURE_2D, level, 0, 0, lv.cols, lv.rows, GL_RED, GL_FLOAT, lv.values.data());
          else
            glTexImage2D(GL_TEXTURE_2D, level, GL_R32F, lv.cols, lv.rows, 0, GL_RED, GL_FLOAT, lv.values.data());
          continue;
        }
        const size_t n = lv.values.size();
        pixels_.resize(n * 4);
        colorize(lv.values.data(), lv.rows, lv.cols, e.range, style.colormap, pixels_.data());
        for (size_t i = 0; i < n; ++i)
          if (std::isnan(lv.values[i])) std::memcpy(&pixels_[i * 4], kMaskedRgba, 4);
        if (same_size)
          glTexSubImage2D(GL_TEXTURE_2D, level, 0, 0, lv.cols, lv.rows, GL_RGBA, GL_UNSIGNED_BYTE, pixels_.data());
        else
          glTexImage2D(GL_TEXTURE_2D, level, GL_RGBA, lv.cols, lv.rows, 0, GL_RGBA, GL_UNSIGNED_BYTE, pixels_.data());
      }
      glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAX_LEVEL, static_cast<GLint>(levels.size()) - 1);
      e.width = sm.cols;
      e.height = sm.rows;
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
