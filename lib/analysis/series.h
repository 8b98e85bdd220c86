// ThinningSeries: a bounded time series whose older half grows coarser instead of being dropped.
//
// It holds at most `capacity` samples (each with a `double time` member, seconds). When a new
// sample would exceed the capacity, every second sample of the older half is removed. The newest
// half therefore keeps the poll resolution that trends and the sawtooth need, while the oldest
// samples keep reaching back ever further (roughly doubling the span each time the series
// fills), which is what interpolating an old committed offset against log-end history needs.
// Memory is capacity * sizeof(Sample) once a sample is added (nothing before: a series that
// stays empty, such as a pair's for a group no job reads, costs no samples), whatever the run
// time. Samples must arrive in time order; an older one is ignored.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace lagsight::analysis {

template <typename Sample>
class ThinningSeries {
 public:
  static constexpr std::size_t kDefaultCapacity = 64;

  explicit ThinningSeries(std::size_t capacity = kDefaultCapacity)
      : capacity_(capacity < 4 ? 4 : capacity) {}

  void Add(const Sample& sample) {
    if (!samples_.empty() && sample.time < samples_.back().time) return;
    // Reserved at the first sample, not at construction: every group without a job holds a
    // pair state whose series stays empty (heaptrack, 20,000 groups: 31 MB of unused samples).
    // "Below capacity_" rather than "none": a copy holds only its size, and push_back would then
    // grow it by doubling past the bound.
    if (samples_.capacity() < capacity_) samples_.reserve(capacity_);
    if (samples_.size() == capacity_) Thin();
    samples_.push_back(sample);
  }

  void Clear() { samples_.clear(); }
  bool empty() const { return samples_.empty(); }
  std::size_t size() const { return samples_.size(); }
  const Sample& back() const { return samples_.back(); }
  const std::vector<Sample>& samples() const { return samples_; }

  // Index of the first sample at or after `time` (size() when there is none).
  std::size_t FirstAtOrAfter(double time) const {
    std::size_t index = 0;
    while (index < samples_.size() && samples_[index].time < time) ++index;
    return index;
  }

 private:
  // Removes every second sample of the older half: keeps indices 0, 2, 4, ... of it.
  void Thin() {
    const std::size_t older = samples_.size() / 2;
    std::vector<Sample> kept;
    kept.reserve(capacity_);
    for (std::size_t i = 0; i < older; i += 2) kept.push_back(samples_[i]);
    for (std::size_t i = older; i < samples_.size(); ++i) kept.push_back(samples_[i]);
    samples_ = std::move(kept);
  }

  std::size_t capacity_;
  std::vector<Sample> samples_;
};

}  // namespace lagsight::analysis
