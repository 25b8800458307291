#include "app/gui/views.h"

#include "app/gui/attention_map_view.h"
#include "app/gui/circuits_view.h"
#include "app/gui/dataset_view.h"
#include "app/gui/generate_view.h"
#include "app/gui/head_detail_view.h"
#include "app/gui/head_table_view.h"
#include "app/gui/relevance_view.h"
#include "app/gui/spectra_view.h"
#include "app/gui/head_view.h"
#include "app/gui/heads_grid_view.h"
#include "app/gui/input_view.h"
#include "app/gui/mixer_view.h"
#include "app/gui/model_view.h"
#include "app/gui/output_view.h"
#include "app/gui/patching_view.h"
#include "app/gui/status_bar.h"
#include "app/gui/syntax_view.h"

namespace headlab::app {

std::vector<std::unique_ptr<View>> make_views() {
  std::vector<std::unique_ptr<View>> views;
  views.push_back(std::make_unique<ModelView>());
  views.push_back(std::make_unique<InputView>());
  views.push_back(std::make_unique<OutputView>());
  views.push_back(std::make_unique<HeadsGridView>());
  views.push_back(std::make_unique<AttentionMapView>());
  views.push_back(std::make_unique<MixerView>());
  views.push_back(std::make_unique<HeadView>());
  views.push_back(std::make_unique<GenerateView>());
  views.push_back(std::make_unique<PatchingView>());
  views.push_back(std::make_unique<DatasetView>());
  views.push_back(std::make_unique<HeadTableView>());
  views.push_back(std::make_unique<HeadDetailView>());
  views.push_back(std::make_unique<SpectraView>());
  views.push_back(std::make_unique<CircuitsView>());
  views.push_back(std::make_unique<RelevanceView>());
  views.push_back(std::make_unique<SyntaxView>());
  views.push_back(std::make_unique<StatusBar>());
  return views;
}

View* find_view(const std::vector<std::unique_ptr<View>>& views, const std::string& title) {
  for (const auto& v : views)
    if (v->title() == title) return v.get();
  return nullptr;
}

}  // namespace headlab::app
