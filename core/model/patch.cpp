#include "core/model/patch.h"

#include <stdexcept>

namespace headlab::core {
namespace {

constexpr std::pair<Site, const char*> kSites[] = {{Site::Resid, "resid"}, {Site::Q, "q"}, {Site::K, "k"},
                                                   {Site::V, "v"},         {Site::Pattern, "pattern"},
                                                   {Site::Z, "z"},         {Site::Mlp, "mlp"}};

std::string shape(const torch::Tensor& t) { return c10::str(t.sizes()); }

}  // namespace

const char* site_name(Site site) {
  for (const auto& [s, name] : kSites)
    if (s == site) return name;
  return "?";
}

Site site_from_name(const std::string& name) {
  for (const auto& [s, n] : kSites)
    if (name == n) return s;
  throw std::invalid_argument("unknown site '" + name + "' (resid, q, k, v, pattern, z or mlp)");
}

bool site_has_heads(Site site) { return site != Site::Resid && site != Site::Mlp; }

torch::Tensor apply_patches(const torch::Tensor& x, Site site, const LayerPatches& patches) {
  torch::Tensor out = x;
  for (const ActivationPatch* p : patches) {
    if (p->site != site) continue;
    const std::string where = std::string("patch of ") + site_name(site) + " in " + stack_name(p->stack) + " layer " +
                              std::to_string(p->layer);
    if (!p->value.defined() || !p->value.sizes().equals(x.sizes().slice(1)))
      throw std::invalid_argument(where + ": the value has shape " + (p->value.defined() ? shape(p->value) : "none") +
                                  ", the site " + c10::str(x.sizes().slice(1)) +
                                  " (the two runs must have the same length)");
    const bool heads = site_has_heads(site);
    const int64_t position_axis = heads ? 2 : 1;
    if (heads && p->head >= x.size(1))
      throw std::invalid_argument(where + ": head " + std::to_string(p->head) + " of " + std::to_string(x.size(1)));
    if (p->position >= x.size(position_axis))
      throw std::invalid_argument(where + ": position " + std::to_string(p->position) + " of " +
                                  std::to_string(x.size(position_axis)));
    const auto value = p->value.to(x.options()).unsqueeze(0).expand_as(out);
    const bool selected = (heads && p->head >= 0) || p->position >= 0;
    torch::Tensor mask;  // 1 at the selected head and position, broadcast against x
    if (selected) {
      std::vector<int64_t> mask_shape(x.dim(), 1);
      if (heads) mask_shape[1] = x.size(1);
      mask_shape[position_axis] = x.size(position_axis);
      mask = torch::zeros(mask_shape, x.options().dtype(torch::kBool));
      auto picked = mask;  // a view of the selected head and position
      if (heads && p->head >= 0) picked = picked.narrow(1, p->head, 1);
      if (p->position >= 0) picked = picked.narrow(position_axis, p->position, 1);
      picked.fill_(true);
    }
    if (!p->weight.defined()) {
      // A replacement takes the value exactly (no own + (value − own) rounding).
      out = selected ? torch::where(mask, value, out) : value.clone();
      continue;
    }
    auto delta = (value - out) * p->weight.to(x.options()).unsqueeze(0);
    if (selected) delta = delta * mask.to(x.dtype());
    out = out + delta;
  }
  return out;
}

bool same_patch(const ActivationPatch& a, const ActivationPatch& b) {
  return a.stack == b.stack && a.layer == b.layer && a.site == b.site && a.head == b.head && a.position == b.position &&
         a.value.unsafeGetTensorImpl() == b.value.unsafeGetTensorImpl() &&
         a.weight.unsafeGetTensorImpl() == b.weight.unsafeGetTensorImpl();
}

}  // namespace headlab::core
