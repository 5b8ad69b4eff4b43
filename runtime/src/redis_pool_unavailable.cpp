//===- redis_pool_unavailable.cpp - a build without hiredis -----------------===//
// Built when CMake finds no hiredis: asking for a Redis host pool is then a
// clear error, and the in-process pool still serves.
#include "dsf/kv_tiers.h"

namespace dsf::rt {
std::unique_ptr<HostPool> HostPool::redis(const Manifest &, Options, const std::string &url, uint64_t,
                                          std::string &error) {
  error = "host pool '" + url + "': this dsf was built without hiredis (install libhiredis-dev and rebuild)";
  return nullptr;
}
} // namespace dsf::rt
