#include "stores/collector.h"

#include <re2/re2.h>

#include <algorithm>
#include <charconv>

namespace lagsight::stores {

namespace {

// The field template as a regular expression: {topic} and {partition} captured, the rest literal.
struct FieldMatcher {
  explicit FieldMatcher(const std::string& field_template, const std::string& fixed_topic) {
    std::string pattern;
    std::size_t at = 0;
    while (at < field_template.size()) {
      const std::size_t open = field_template.find('{', at);
      const std::size_t end = open == std::string::npos ? field_template.size() : open;
      pattern += RE2::QuoteMeta(field_template.substr(at, end - at));
      if (open == std::string::npos) break;
      const std::size_t close = field_template.find('}', open);
      const std::string name = field_template.substr(open, close - open + 1);
      if (name == "{topic}") {
        topic_group = ++groups;
        pattern += "(.+)";
      } else {
        partition_group = ++groups;
        pattern += "([0-9]{1,9})";
      }
      at = close + 1;
    }
    regex = std::make_unique<RE2>(pattern);
    topic = fixed_topic;
  }

  // (topic, partition) of `field`, if the template matches it.
  std::optional<kafka::TopicPartition> Match(const std::string& field) const {
    std::string captured[2];
    RE2::Arg args[2] = {&captured[0], &captured[1]};
    const RE2::Arg* arg_pointers[2] = {&args[0], &args[1]};
    if (!RE2::FullMatchN(field, *regex, arg_pointers, groups)) return std::nullopt;
    kafka::TopicPartition tp{topic, 0};
    if (topic_group > 0) tp.topic = captured[topic_group - 1];
    const std::string& partition = captured[partition_group - 1];
    std::from_chars(partition.data(), partition.data() + partition.size(), tp.partition);
    return tp;
  }

  std::unique_ptr<RE2> regex;
  int groups = 0;
  int topic_group = 0;
  int partition_group = 0;
  std::string topic;
};

std::optional<std::int64_t> ParseOffset(const std::string& text) {
  std::int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty() || value < 0) return std::nullopt;
  return value;
}

}  // namespace

std::string FillTemplate(std::string text,
                         const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [name, value] : values) {
    const std::string placeholder = "{" + name + "}";
    if (const std::size_t at = text.find(placeholder); at != std::string::npos) {
      text.replace(at, placeholder.size(), value);
    }
  }
  return text;
}

Collector::Collector(config::PositionStoreConfig config, std::unique_ptr<HashStore> store)
    : config_(std::move(config)), store_(std::move(store)) {}

// The offsets (and write time) among one hash's `fields`, into `job`; what is off, into the
// snapshot's partial errors.
void Collector::ReadFields(const std::map<std::string, std::string>& fields, const std::string& key,
                           const std::string& topic, const StoreRead& read, StoredJob& job,
                           StoreSnapshot& snapshot) const {
  const FieldMatcher matcher(config_.field, topic);
  // Each kept field becomes series labelled with its topic: a store's fields must not mint
  // labels of topics the job does not read (or no Kafka topic could have: over 249 chars).
  std::size_t foreign = 0;
  for (const auto& [field, value] : fields) {
    if (!config_.updated_at_field.empty() && field == config_.updated_at_field) {
      const auto millis = ParseOffset(value);
      if (!millis) {
        snapshot.partial_errors.push_back("key " + key + " field " + field + ": \"" +
                                          value.substr(0, 64) + "\" is not unix milliseconds");
      } else {
        const double seconds = static_cast<double>(*millis) / 1000;
        job.updated_at_unix_seconds = std::max(job.updated_at_unix_seconds.value_or(0), seconds);
      }
      continue;
    }
    const auto tp = matcher.Match(field);
    if (!tp) continue;  // another field of the same hash (the layout's own business)
    if (tp->topic.size() > kMaxTopicLength ||
        (!read.topics.empty() &&
         std::find(read.topics.begin(), read.topics.end(), tp->topic) == read.topics.end())) {
      ++foreign;
      continue;
    }
    const auto offset = ParseOffset(value);
    if (!offset) {
      snapshot.partial_errors.push_back("key " + key + " field " + field + ": \"" +
                                        value.substr(0, 64) + "\" is not an offset");
      continue;
    }
    job.offsets[*tp] = *offset;
  }
  if (foreign > 0) {
    snapshot.partial_errors.push_back("key " + key + ": " + std::to_string(foreign) +
                                      " field(s) name a topic the job does not read; left out");
  }
}

Result<StoreSnapshot> Collector::Poll(const std::vector<StoreRead>& reads) {
  // Asked every poll, so _up says whether the store answers even while no job is to be read.
  if (auto problem = store_->Ping()) return *problem;
  StoreSnapshot snapshot;
  const bool key_per_topic = config_.key.find("{topic}") != std::string::npos;
  std::size_t budget = kPollReads;
  std::size_t reads_done = 0;
  std::size_t reads_failed = 0;
  std::string first_failure;
  for (const StoreRead& read : reads) {
    StoredJob job{read.flink_cluster, read.job_id, read.job_name, read.topics, {}, {}, {}, {}};
    std::vector<std::pair<std::string, std::string>> hashes;  // key, the topic it is fixed to
    if (key_per_topic) {
      for (const std::string& topic : read.topics) {
        hashes.emplace_back(FillTemplate(config_.key, {{"job", read.job_name}, {"topic", topic}}),
                            topic);
      }
    } else {
      hashes.emplace_back(FillTemplate(config_.key, {{"job", read.job_name}}), "");
    }
    bool over_budget = false;
    for (const auto& [key, topic] : hashes) {
      if (budget == 0) {
        // Said once per job; what waits for the next poll is unknown now, not missing.
        if (!over_budget) {
          snapshot.partial_errors.push_back("more than " + std::to_string(kPollReads) +
                                            " hashes to read; the rest waits for the next poll");
        }
        over_budget = true;
        if (key_per_topic) {
          job.unread_topics.push_back(topic);
          continue;
        }
        job.unread_topics = read.topics;
        break;
      }
      --budget;
      job.keys.push_back(key);
      auto fields = store_->ReadHash(key);
      ++reads_done;
      if (!fields) {
        ++reads_failed;
        if (first_failure.empty()) first_failure = fields.error().message;
        snapshot.partial_errors.push_back(fields.error().message);
        // Not read is not empty: the store may well hold every partition of these topics.
        const auto& unread = key_per_topic ? std::vector<std::string>{topic} : read.topics;
        job.unread_topics.insert(job.unread_topics.end(), unread.begin(), unread.end());
        continue;
      }
      if (fields->empty()) {
        snapshot.partial_errors.push_back("job \"" + read.job_name + "\": key " + key +
                                          " does not exist");
        continue;
      }
      ReadFields(*fields, key, topic, read, job, snapshot);
    }
    snapshot.jobs.push_back(std::move(job));
  }
  // Nothing could be read at all: the store is down, not some of its keys.
  if (reads_done > 0 && reads_failed == reads_done) return Error{first_failure};
  return snapshot;
}

}  // namespace lagsight::stores
