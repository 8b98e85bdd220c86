#include "app/allocator.h"

#include <malloc.h>

#include <cstdlib>

namespace lagsight::app {

void UseOneMallocArena() {
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr || std::getenv("GLIBC_TUNABLES") != nullptr) {
    return;
  }
  mallopt(M_ARENA_MAX, 1);
}

}  // namespace lagsight::app
