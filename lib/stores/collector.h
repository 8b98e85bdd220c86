// stores::Collector: one poll of one external position store, turned into a StoreSnapshot.
//
// It is told which jobs to read and which topics each reads (StoreRead, from the Flink side);
// it fills the key template in per job (and per topic, when the key has {topic}), reads each
// hash once, and keeps the fields the field template matches: the value is the next offset the
// job would read. A poll fails as a whole when the store cannot be reached; a missing key, a
// value that is not an offset or a field of an unknown topic is a partial error. Poll() blocks:
// run it on a worker thread, one at a time; it ends by `request_timeout` per read and by
// kPollReads reads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "stores/hash_store.h"
#include "stores/snapshot.h"

namespace lagsight::stores {

// One Flink job the store is asked about, and the real topics it reads.
struct StoreRead {
  std::string flink_cluster;
  std::string job_id;
  std::string job_name;
  std::vector<std::string> topics;
};

class Collector {
 public:
  Collector(config::PositionStoreConfig config, std::unique_ptr<HashStore> store);

  Result<StoreSnapshot> Poll(const std::vector<StoreRead>& reads);

  // Hashes read per poll at the most: a job filter that matches thousands of jobs must not
  // keep one poll busy for ever.
  static constexpr std::size_t kPollReads = 2000;
  // Kafka's own limit on a topic name.
  static constexpr std::size_t kMaxTopicLength = 249;

 private:
  void ReadFields(const std::map<std::string, std::string>& fields, const std::string& key,
                  const std::string& topic, const StoreRead& read, StoredJob& job,
                  StoreSnapshot& snapshot) const;

  config::PositionStoreConfig config_;
  std::unique_ptr<HashStore> store_;
};

// `text` with every `{name}` of `values` filled in.
std::string FillTemplate(std::string text,
                         const std::vector<std::pair<std::string, std::string>>& values);

}  // namespace lagsight::stores
