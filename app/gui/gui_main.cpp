// The frame loop: GLFW window, fonts scaled for the display, the views, offscreen captures.
#include "app/gui/gui_main.h"

#include "app/gui/capture.h"
#include "app/gui/export_actions.h"
#include "app/gui/main_menu.h"
#include "app/gui/quit_prompt.h"
#include "app/gui/script_runner.h"
#include "app/gui/views.h"
#include "app/gui/workbench.h"
#include "app/layout/live_threads.h"

#define GL_GLEXT_PROTOTYPES
#include <GL/gl.h>
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <imgui.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

namespace fs = std::filesystem;

namespace headlab::app {
namespace {

constexpr const char* kFontPath = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

// DejaVu Sans at `scale`, with the scripts token text uses: Latin (and GPT-2's byte-level
// Ġ/Ċ), Greek, Cyrillic, punctuation, arrows, maths and shapes.
void load_fonts(float scale, ImVector<ImWchar>& ranges, int oversample = 2) {
  ImGuiIO& io = ImGui::GetIO();
  ranges.clear();  // BuildRanges appends
  ImFontGlyphRangesBuilder builder;
  builder.AddRanges(io.Fonts->GetGlyphRangesDefault());
  builder.AddRanges(io.Fonts->GetGlyphRangesCyrillic());
  static const ImWchar extra[] = {0x0100, 0x024F, 0x0250, 0x02FF, 0x0370, 0x03FF, 0x1E00, 0x1EFF, 0x2000, 0x206F,
                                  0x2070, 0x209F, 0x20A0, 0x20CF, 0x2100, 0x214F, 0x2190, 0x21FF, 0x2200, 0x22FF,
                                  0x2300, 0x23FF, 0x2500, 0x257F, 0x25A0, 0x25FF, 0x2600, 0x26FF, 0x1D00, 0x1DBF, 0xFFFD, 0xFFFD, 0};
  builder.AddRanges(extra);
  builder.BuildRanges(&ranges);
  std::error_code ec;
  if (fs::is_regular_file(kFontPath, ec)) {
    ImFontConfig config;
    config.OversampleH = oversample;
    io.Fonts->AddFontFromFileTTF(kFontPath, 15.0f * scale, &config, ranges.Data);
  } else {
    std::cerr << "headlab: " << kFontPath << " not found (install fonts-dejavu-core); using ImGui's built-in font\n";
    ImFontConfig config;
    config.SizePixels = 13.0f * scale;
    io.Fonts->AddFontDefault(&config);
  }
}

// Rasterises the fonts `detail` times larger and draws them at 1/detail: the layout is unchanged,
// and a capture rendered at detail× (2×/4× PNG export) gets sharp glyphs instead of magnified ones.
// detail 1 restores the usual atlas. Call between frames (it replaces the font texture).
void set_font_detail(float dpi_scale, int detail, ImVector<ImWchar>& ranges) {
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  load_fonts(dpi_scale * static_cast<float>(detail), ranges, detail > 1 ? 1 : 2);
  io.FontGlobalScale = 1.0f / static_cast<float>(detail);
  ImGui_ImplOpenGL3_DestroyFontsTexture();
  ImGui_ImplOpenGL3_CreateFontsTexture();
}

// The font detail the pending captures need: their largest scale (1 when there are none).
int capture_detail(const std::vector<CaptureRequest>& captures) {
  int detail = 1;
  for (const auto& c : captures) detail = std::max(detail, std::max(1, std::min(4, c.scale)));
  return detail;
}

// "n 120, median 12.3 ms, p90 20.1 ms, max 40.2 ms" (skipping the first frames: fonts, first run).
std::string describe_times(std::vector<double> t) {
  if (t.size() > 10) t.erase(t.begin(), t.begin() + 5);
  if (t.empty()) return "none";
  std::sort(t.begin(), t.end());
  char text[160];
  std::snprintf(text, sizeof text, "n %zu, median %.1f ms, p90 %.1f ms, max %.1f ms", t.size(), t[t.size() / 2],
                t[t.size() * 9 / 10], t.back());
  return text;
}

}  // namespace

int gui_main(const GuiOptions& options) {
  std::vector<ScriptAction> actions;
  std::string origin = options.script;
  try {
    if (!options.script.empty()) actions = load_script(options.script);
  } catch (const std::exception& e) {
    std::cerr << "headlab gui: " << e.what() << "\n";
    return 2;
  }
  if (!options.screenshot.empty()) {
    actions.push_back({cmd::Screenshot{options.screenshot}, static_cast<int>(actions.size())});
    if (origin.empty()) origin = "--screenshot";
  }
  const bool scripted = !actions.empty();

  glfwSetErrorCallback([](int code, const char* text) { std::cerr << "glfw error " << code << ": " << text << "\n"; });
  if (!glfwInit()) {
    std::cerr << "headlab gui: cannot open a window (no display? run under xvfb-run, or use the CLI commands)\n";
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  glfwWindowHint(GLFW_OPENGL_FORWARD_COMPAT, GLFW_TRUE);
  int width = 1600, height = 1000;
  if (GLFWmonitor* monitor = glfwGetPrimaryMonitor()) {
    int x, y, w, h;
    glfwGetMonitorWorkarea(monitor, &x, &y, &w, &h);
    if (w > 0 && h > 0) width = std::min(width, w), height = std::min(height, h);
  }
  GLFWwindow* window = glfwCreateWindow(width, height, "HeadLab", nullptr, nullptr);
  if (!window) {
    std::cerr << "headlab gui: cannot create an OpenGL 3.3 window\n";
    glfwTerminate();
    return 1;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(scripted ? 0 : 1);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // the layout lives in sessions, not in a file in the working directory
  io.ConfigFlags |= ImGuiConfigFlags_NavEnableKeyboard;
  float xscale = 1, yscale = 1;
  glfwGetWindowContentScale(window, &xscale, &yscale);
  const float scale = std::max(1.0f, std::max(xscale, yscale));
  ImGui::StyleColorsDark();
  // Opaque windows: a view opened over another (Generate over the Head view) hides it rather than
  // letting its text show through.
  ImGui::GetStyle().Colors[ImGuiCol_WindowBg].w = 1.0f;
  ImGui::GetStyle().ScaleAllSizes(scale);
  ImVector<ImWchar> ranges;
  load_fonts(scale, ranges);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330 core");

  int exit_code = 0;
  {
    auto views = make_views();
    Workbench wb(views);
    std::string recover;
    std::error_code ec;
    if (!scripted && fs::is_regular_file(autosave_path(), ec)) recover = autosave_path();
    MainMenu menu(recover);
    std::optional<ScriptRunner> script;
    if (scripted) script.emplace(std::move(actions), origin);
    // Live re-runs get more intra-op threads when the GL does not rasterise on the CPU.
    const char* renderer = reinterpret_cast<const char*>(glGetString(GL_RENDERER));
    const int live_threads = live_threads_for_renderer(renderer ? renderer : "", std::thread::hardware_concurrency());
    wb.set_live_threads(live_threads);
    wb.start(options.model, options.session);

    int font_detail = 1;  // see set_font_detail
    auto last = std::chrono::steady_clock::now();
    std::vector<double> frame_times;  // for HEADLAB_FRAME_STATS
    while (!wb.quit) {
      // A script polls. Interactively, input wakes the loop at once; otherwise redraw at most 30 times
      // a second while a run is in flight (software GL competes with the worker for the cores) and
      // sleep while nothing changes.
      if (scripted)
        glfwPollEvents();
      else if (!wb.worker_idle() || wb.doc().dataset.running)
        glfwWaitEventsTimeout(1.0 / 30);
      else if (wb.frames_since_change < 10)
        glfwPollEvents();
      else
        glfwWaitEventsTimeout(0.25);
      // The window's close button asks first while work runs, as File ▸ Quit does.
      if (glfwWindowShouldClose(window)) {
        glfwSetWindowShouldClose(window, GLFW_FALSE);
        if (scripted)
          wb.quit = true;
        else
          wb.request_quit();
        if (wb.quit) break;
      }
      const auto frame_start = std::chrono::steady_clock::now();
      wb.poll();
      if (script) script->step(wb);
      // A 2×/4× capture is taken from a frame drawn with fonts rasterised at that scale; the
      // usual fonts come back the frame after.
      const int wanted_detail = capture_detail(wb.captures);
      if (wanted_detail != font_detail) {
        set_font_detail(scale, wanted_detail, ranges);
        font_detail = wanted_detail;
      }
      ImGui_ImplOpenGL3_NewFrame();
      ImGui_ImplGlfw_NewFrame();
      ImGui::NewFrame();
      menu.draw(wb, views);
      for (auto& v : views) v->draw(wb);
      menu.drawOverlays(wb);
      wb.file_dialog.draw(wb);
      draw_overwrite_prompt(wb);
      draw_quit_prompt(wb);
      wb.focus_view.clear();
      wb.apply_layout = false;
      wb.reset_layout = false;
      ImGui::Render();
      int fb_w, fb_h;
      glfwGetFramebufferSize(window, &fb_w, &fb_h);
      glViewport(0, 0, fb_w, fb_h);
      glClearColor(0.08f, 0.08f, 0.09f, 1.0f);
      glClear(GL_COLOR_BUFFER_BIT);
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
      // Captures asked for during this frame wait for the next one if they need other fonts.
      const bool captures_ready = capture_detail(wb.captures) == font_detail;
      for (const auto& c : captures_ready ? wb.captures : std::vector<CaptureRequest>{}) {
        std::string error;
        View* v = c.window.empty() ? nullptr : find_view(views, c.window);
        const ImVec2 pos = v ? (c.content_only ? v->figure_pos() : v->last_pos()) : ImVec2(0, 0);
        const ImVec2 size = v ? (c.content_only ? v->figure_size() : v->last_size()) : io.DisplaySize;
        if (!capture_png(ImGui::GetDrawData(), c.path, c.scale, pos, size, error)) {
          wb.set_error("export", error);
          if (scripted) std::cerr << "headlab gui: " << error << "\n", exit_code = 1;
        } else if (scripted) {
          std::cout << "wrote " << c.path << "\n";
        } else {
          wb.notice("wrote " + c.path);
        }
      }
      if (captures_ready) wb.captures.clear();
      glfwSwapBuffers(window);
      // A scripted run neither reads nor writes the autosave: the user's recovery file stays theirs.
      if (!scripted) wb.autosave_if_due();
      const auto now = std::chrono::steady_clock::now();
      // Shown: the frame's own work; stats: the time between frames (a script never waits).
      wb.frame_ms = std::chrono::duration<double, std::milli>(now - frame_start).count();
      frame_times.push_back(std::chrono::duration<double, std::milli>(now - last).count());
      last = now;
      if (scripted && !wb.doc().notices.empty()) {
        for (const auto& n : wb.doc().notices) std::cerr << "headlab gui: " << n << "\n";
        wb.clear_notices();
      }
    }
    if (script && script->exit_code() != 0) exit_code = script->exit_code();
    if (std::getenv("HEADLAB_FRAME_STATS")) {
      std::cerr << "renderer: " << (renderer ? renderer : "?") << "; live threads: " << live_threads
                << "; maps coloured on the " << (wb.textures.gpu_colour() ? "GPU" : "CPU") << "\n"
                << "frames: " << describe_times(frame_times) << "\n"
                << "run requested -> maps uploaded: " << describe_times(wb.latencies) << "\n";
    }
    if (!scripted) fs::remove(autosave_path(), ec);  // a clean exit leaves nothing to recover
    wb.textures.clear();
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return exit_code;
}

}  // namespace headlab::app
