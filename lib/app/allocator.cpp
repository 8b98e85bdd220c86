#include "app/allocator.h"

#include <malloc.h>

#include <cstdlib>
#include <string_view>

namespace lagsight::app {

bool OperatorChoseArenas() {
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr) return true;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr &&
         std::string_view(tunables).find("glibc.malloc.arena_max") != std::string_view::npos;
}

void UseOneMallocArena() {
  if (OperatorChoseArenas()) return;
  mallopt(M_ARENA_MAX, 1);
}

}  // namespace lagsight::app
