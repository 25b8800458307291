#include "core/model/kv_cache.h"

namespace headlab::core {

int64_t LayerCache::bytes() const {
  int64_t n = 0;
  for (const auto* t : {&keys, &values, &key_bias, &latent})  // positions: 8 bytes a token, bookkeeping
    if (t->defined()) n += t->numel() * static_cast<int64_t>(t->element_size());
  return n;
}

int64_t KvCache::bytes() const {
  int64_t n = 0;
  for (const auto& c : self) n += c.bytes();
  for (const auto& c : cross) n += c.bytes();
  return n;
}

}  // namespace headlab::core
