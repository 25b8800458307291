#!/bin/sh
# The layers only look down: no file includes a header of a layer above its own. From the bottom:
#   core/, core/families, core/tokenizer (no LibTorch) ← core/model ← core/train ← analysis ← app/tasks, app/layout ← app/work
#   ← app/document ← app/export ← app/gui, app/cli
# and core/ and analysis/ never include a GUI header (ImGui, GLFW, GL). Exits 1 naming each
# offending include.
root="${1:-$(dirname "$0")/..}"
cd "$root" || exit 2
status=0
# forbid DIR PATTERN WHY: no file under DIR includes a header matching PATTERN. DIR may name
# files (a glob) instead of a folder.
forbid() {
  found=$(grep -rnE "#include [<\"]($2)" $1 --include='*.h' --include='*.cpp' 2>/dev/null)
  if [ -n "$found" ]; then
    echo "$3:"
    echo "$found"
    status=1
  fi
}
forbid "core/*.h core/*.cpp core/families core/tokenizer" 'core/(model|train)/|torch/|ATen/' "the LibTorch-free part of core includes LibTorch"
forbid core/model 'core/train/' "core/model includes core/train"
forbid core 'analysis/|app/|imgui|GLFW|GL/' "core includes a layer above it or a GUI header"
forbid analysis 'app/|imgui|GLFW|GL/' "analysis includes app/ or a GUI header"
forbid app/tasks 'app/(layout|work|document|export|gui|cli)/|torch/|ATen/' "app/tasks (torch-free) includes a layer above it"
forbid app/layout 'app/(work|document|export|gui|cli)/|torch/|imgui' "app/layout includes a layer above it"
forbid app/work 'app/(document|export|gui|cli)/|imgui' "app/work includes a layer above it"
forbid app/document 'app/(export|gui|cli)/|imgui|torch/' "app/document includes a layer above it"
forbid app/export 'app/(gui|cli)/|imgui' "app/export includes a layer above it"
forbid app/gui 'app/cli/' "app/gui includes app/cli"
forbid app/cli 'app/gui/|imgui' "app/cli includes the window"
[ "$status" -eq 0 ] && echo "layers ok"
exit "$status"
