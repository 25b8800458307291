// Every view of the workbench, registered in one place (views.cpp).
#pragma once

#include "app/gui/view.h"

#include <memory>
#include <vector>

namespace headlab::app {

std::vector<std::unique_ptr<View>> make_views();
// The view with this window title, or null.
View* find_view(const std::vector<std::unique_ptr<View>>& views, const std::string& title);

}  // namespace headlab::app
