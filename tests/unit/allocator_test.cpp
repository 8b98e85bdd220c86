// When lagsight leaves glibc's arena count to the operator: only when the environment sets it.
#include "app/allocator.h"

#include <catch2/catch.hpp>
#include <cstdlib>
#include <optional>
#include <string>

namespace {

// Sets (or unsets, for nullopt) an environment variable for one scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("the arena count is the operator's only when the environment sets it", "[allocator]") {
  using lagsight::app::OperatorChoseArenas;
  ScopedEnv no_max("MALLOC_ARENA_MAX", std::nullopt);
  {
    ScopedEnv none("GLIBC_TUNABLES", std::nullopt);
    CHECK_FALSE(OperatorChoseArenas());
  }
  {
    // Container images set unrelated tunables; they must not turn the one arena off.
    ScopedEnv other("GLIBC_TUNABLES", "glibc.pthread.rseq=0");
    CHECK_FALSE(OperatorChoseArenas());
  }
  {
    ScopedEnv tuned("GLIBC_TUNABLES", "glibc.pthread.rseq=0:glibc.malloc.arena_max=4");
    CHECK(OperatorChoseArenas());
  }
  {
    ScopedEnv max("MALLOC_ARENA_MAX", "2");
    CHECK(OperatorChoseArenas());
  }
}
