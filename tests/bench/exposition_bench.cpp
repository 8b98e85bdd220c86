// Benchmark: how long the poll-side work (lag analysis, sample lines, joining them) takes
// and how much memory it peaks at, for a synthetic cluster of G groups x P partitions.
// Prints numbers; asserts nothing (speed goals live here, not in timed tests). `level` is the
// series granularity of every group (config series.granularity): partition (default), topic,
// group; "full": partition level with the opt-in committed offsets per partition; "classic":
// partition level, classic groups whose members hold 10 partitions each; "owners": the same with
// series.partition_owners (the holder of every partition). `threads`
// renders the group series on that many threads (0: as the daemon chooses, from the series and the
// CPUs).
//   build/tests/bench/exposition_bench [groups] [partitions_per_group] [level] [threads]
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "analysis/kafka_lag.h"
#include "common/gzip_stream.h"
#include "metrics/kafka_metrics.h"

int main(int argc, char** argv) {
  using namespace lagsight;
  const int groups = argc > 1 ? std::atoi(argv[1]) : 2000;
  const int partitions = argc > 2 ? std::atoi(argv[2]) : 50;
  const std::string level = argc > 3 ? argv[3] : "partition";
  const int threads = argc > 4 ? std::atoi(argv[4]) : 0;
  config::KafkaSeriesConfig series;
  if (level == "topic" || level == "group") {
    series.granularity.push_back(
        {std::nullopt, std::nullopt,
         level == "topic" ? config::SeriesLevel::kTopic : config::SeriesLevel::kGroup});
  } else if (level == "full") {
    series.partition_committed_offsets = true;
  } else if (level == "owners") {
    series.partition_owners = true;
  } else if (level != "partition" && level != "classic") {
    std::fprintf(stderr, "level must be partition, topic, group, full, classic or owners, got %s\n",
                 level.c_str());
    return 2;
  }
  const bool with_members = level == "classic" || level == "owners";

  kafka::KafkaSnapshot snapshot;
  for (int g = 0; g < groups; ++g) {
    kafka::ConsumerGroup group;
    group.id = "group-" + std::to_string(g);
    group.state = "empty";
    group.kind = kafka::GroupKind::kSimple;
    group.members = 0;
    const std::string topic = "topic-" + std::to_string(g % 200);
    snapshot.topic_partitions[topic] = partitions;
    for (int p = 0; p < partitions; ++p) {
      group.committed[{topic, p}] = 1000 + p;
      snapshot.partitions[{topic, p}] = {0, 5000 + p};
      if (!with_members) continue;
      if (p % 10 == 0) {
        const std::string id = "consumer-" + std::to_string(p / 10);
        group.member_list.push_back({group.id + "-" + id + "-5c1a8e4e-8d0b-4b8e-a7a8-0f8b2c1d9e3f",
                                     id,
                                     "/10.0.0." + std::to_string(p / 10),
                                     "",
                                     {}});
      }
      group.member_list.back().assignment.push_back({topic, p});
    }
    if (with_members) {
      group.state = "stable";
      group.kind = kafka::GroupKind::kClassic;
      group.members = static_cast<int>(group.member_list.size());
    }
    snapshot.groups.push_back(std::move(group));
  }

  const auto start = std::chrono::steady_clock::now();
  const auto poll = analysis::DeriveKafkaPoll(std::move(snapshot), {});
  const auto analysed = std::chrono::steady_clock::now();
  metrics::FamilyBuilder builder;
  metrics::AppendKafkaMetrics("bench", {true, 1, 1, 1, 0}, poll, nullptr, series, builder, threads);
  const std::size_t series_count = builder.series();
  const auto built = std::chrono::steady_clock::now();
  // What the daemon publishes: the families, compressed as they were built, joined.
  const GzippedText gzipped = std::move(builder).RenderGzip();
  const auto rendered = std::chrono::steady_clock::now();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);  // the render's peak, before the whole text is inflated below
  // What a scrape without gzip costs (the daemon streams it; whole here, to time it).
  const std::size_t text_size = Gunzip(gzipped.bytes).size();
  const auto compressed = std::chrono::steady_clock::now();

  const auto ms = [](auto a, auto b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  std::printf("groups=%d partitions_per_group=%d level=%s series=%zu bytes=%zu gzip_bytes=%zu\n",
              groups, partitions, level.c_str(), series_count, text_size, gzipped.bytes.size());
  std::printf(
      "analysis_ms=%.1f samples_ms=%.1f join_ms=%.1f gunzip_ms=%.1f total_ms=%.1f "
      "peak_rss_mb=%.1f\n",
      ms(start, analysed), ms(analysed, built), ms(built, rendered), ms(rendered, compressed),
      ms(start, compressed), static_cast<double>(usage.ru_maxrss) / 1024.0);
  return 0;
}
