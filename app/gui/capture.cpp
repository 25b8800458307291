#include "app/gui/capture.h"

#include "core/atomic_file.h"

#define GL_GLEXT_PROTOTYPES
#include <GL/gl.h>
#include <GL/glext.h>
#include <backends/imgui_impl_opengl3.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION_NOT_NEEDED  // libstb provides the implementation
#include <stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <vector>

namespace headlab::app {

bool capture_png(ImDrawData* dd, const std::string& path, int scale, ImVec2 pos, ImVec2 size, std::string& error) {
  if (!dd) {
    error = "capture " + path + ": nothing drawn yet";
    return false;
  }
  scale = std::max(1, std::min(4, scale));
  const ImVec2 fb_scale(dd->FramebufferScale.x * scale, dd->FramebufferScale.y * scale);
  const int width = static_cast<int>(dd->DisplaySize.x * fb_scale.x);
  const int height = static_cast<int>(dd->DisplaySize.y * fb_scale.y);
  GLint max_size = 0;
  glGetIntegerv(GL_MAX_RENDERBUFFER_SIZE, &max_size);
  if (width <= 0 || height <= 0 || width > max_size || height > max_size) {
    error = "capture " + path + ": " + std::to_string(width) + "×" + std::to_string(height) + " is beyond this GL's limit";
    return false;
  }
  GLuint fbo = 0, rbo = 0;
  glGenFramebuffers(1, &fbo);
  glGenRenderbuffers(1, &rbo);
  glBindRenderbuffer(GL_RENDERBUFFER, rbo);
  glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width, height);
  glBindFramebuffer(GL_FRAMEBUFFER, fbo);
  glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, rbo);
  bool ok = glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
  std::vector<unsigned char> pixels;
  int x0 = 0, y0 = 0, w = 0, h = 0;
  if (ok) {
    glViewport(0, 0, width, height);
    glClearColor(0.08f, 0.08f, 0.09f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    const ImVec2 saved = dd->FramebufferScale;
    dd->FramebufferScale = fb_scale;
    ImGui_ImplOpenGL3_RenderDrawData(dd);
    dd->FramebufferScale = saved;
    x0 = std::max(0, static_cast<int>(std::floor((pos.x - dd->DisplayPos.x) * fb_scale.x)));
    y0 = std::max(0, static_cast<int>(std::floor((pos.y - dd->DisplayPos.y) * fb_scale.y)));
    w = std::min(width - x0, static_cast<int>(std::ceil(size.x * fb_scale.x)));
    h = std::min(height - y0, static_cast<int>(std::ceil(size.y * fb_scale.y)));
    ok = w > 0 && h > 0;
    if (ok) {
      pixels.resize(static_cast<size_t>(w) * h * 4);
      glPixelStorei(GL_PACK_ALIGNMENT, 1);
      glReadPixels(x0, height - y0 - h, w, h, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
    }
  }
  glBindFramebuffer(GL_FRAMEBUFFER, 0);
  glDeleteRenderbuffers(1, &rbo);
  glDeleteFramebuffers(1, &fbo);
  if (!ok) {
    error = "capture " + path + ": the offscreen framebuffer failed";
    return false;
  }
  // GL rows run bottom-up; PNG rows top-down. Alpha forced opaque.
  std::vector<unsigned char> flipped(pixels.size());
  for (int r = 0; r < h; ++r)
    std::copy_n(&pixels[static_cast<size_t>(h - 1 - r) * w * 4], static_cast<size_t>(w) * 4, &flipped[static_cast<size_t>(r) * w * 4]);
  for (size_t i = 3; i < flipped.size(); i += 4) flipped[i] = 255;
  std::error_code ec;
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  std::string png;
  auto append = [](void* context, void* data, int size) {
    static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
  };
  if (!stbi_write_png_to_func(append, &png, w, h, 4, flipped.data(), w * 4)) {
    error = "capture " + path + ": cannot encode the PNG";
    return false;
  }
  try {
    core::write_file_atomic(path, png);
  } catch (const std::exception& e) {
    error = std::string("capture ") + e.what();
    return false;
  }
  return true;
}

}  // namespace headlab::app
