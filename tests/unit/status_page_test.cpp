// The status page from hand-made findings: escaping of user data, problems first, the chart's
// points, the empty states.
#include "status/status_page.h"

#include <catch2/catch.hpp>
#include <limits>
#include <regex>
#include <string>
#include <vector>

namespace {

using lagsight::analysis::Cause;
using lagsight::analysis::DiagnosisFinding;
using lagsight::analysis::Findings;
using lagsight::analysis::LagPoint;
using lagsight::status::RenderStatusPage;
using lagsight::status::SourceStatus;

constexpr double kNow = 1'800'000'000;

std::vector<SourceStatus> KafkaUp() {
  return {{SourceStatus::Kind::kKafka, "prod", true, true, kNow - 1, ""}};
}

DiagnosisFinding Pair(std::string group, std::string job_name, Cause cause) {
  DiagnosisFinding finding;
  finding.kafka_cluster = "prod";
  finding.group = std::move(group);
  finding.job_name = std::move(job_name);
  finding.job_id = finding.job_name.empty() ? "" : "id-" + finding.job_name;
  finding.cause = cause;
  finding.since = kNow - 300;
  finding.kafka_lag = 10;
  return finding;
}

std::size_t Count(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// The data-cause attributes of the table rows, top to bottom.
std::vector<std::string> RowCauses(const std::string& page) {
  static const std::regex kRow(R"re(<tr class="[a-z]+"[^>]* data-cause="([a-z_]+)")re");
  std::vector<std::string> causes;
  for (std::sregex_iterator it(page.begin(), page.end(), kRow), end; it != end; ++it) {
    causes.push_back((*it)[1]);
  }
  return causes;
}

}  // namespace

TEST_CASE("status page: names from Kafka and Flink are escaped in text and attributes",
          "[status]") {
  Findings findings;
  findings.diagnosis.push_back(
      Pair("g<script>alert(\"x\")</script>'&", "job \"<b>quoted</b>\"", Cause::kReallyBehind));
  std::vector<SourceStatus> sources = KafkaUp();
  sources.push_back({SourceStatus::Kind::kFlink, "fl<i>nk", true, false, std::nullopt,
                     "connect: <refused> & \"gone\""});
  const std::string page = RenderStatusPage(findings, sources, "1.0<x>", kNow);

  CHECK(page.find("<script") == std::string::npos);
  CHECK(page.find("<b>quoted") == std::string::npos);
  CHECK(page.find("fl<i>nk") == std::string::npos);
  CHECK(page.find("<refused>") == std::string::npos);
  CHECK(page.find("1.0<x>") == std::string::npos);
  // In text and in the row's data attributes alike.
  CHECK(Count(page, "g&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;&amp;") == 2);
  // The job's name and its id (made from the name here), each in text and attribute.
  CHECK(Count(page, "job &quot;&lt;b&gt;quoted&lt;/b&gt;&quot;") == 4);
  CHECK(page.find("fl&lt;i&gt;nk") != std::string::npos);
  CHECK(page.find("connect: &lt;refused&gt; &amp; &quot;gone&quot;") != std::string::npos);
  CHECK(lagsight::status::EscapeHtml("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST_CASE("status page: problems first, most severe first, healthy last", "[status]") {
  Findings findings;
  findings.diagnosis = {
      Pair("a-healthy", "job-a", Cause::kHealthy),
      Pair("b-sawtooth", "job-b", Cause::kLongCheckpointInterval),
      Pair("c-expiring", "", Cause::kOffsetsExpiring),
      Pair("d-behind", "job-d", Cause::kReallyBehind),
      Pair("e-healthy", "", Cause::kHealthy),
      Pair("f-checkpoints", "job-f", Cause::kCheckpointsFailing),
  };
  const std::string page = RenderStatusPage(findings, KafkaUp(), "1.0", kNow);
  CHECK(RowCauses(page) == std::vector<std::string>{"really_behind", "checkpoints_failing",
                                                    "offsets_expiring", "long_checkpoint_interval",
                                                    "healthy", "healthy"});
  CHECK(page.find("<tr class=\"critical\" data-kafka-cluster=\"prod\" data-group=\"d-behind\"") !=
        std::string::npos);
  CHECK(page.find("<tr class=\"neutral\" data-kafka-cluster=\"prod\" data-group=\"b-sawtooth\"") !=
        std::string::npos);
  CHECK(page.find("<tr class=\"warning\" data-kafka-cluster=\"prod\" data-group=\"c-expiring\"") !=
        std::string::npos);
  CHECK(page.find("<title>3 problems &middot; lagsight</title>") != std::string::npos);
  // Within one severity, by cluster and group.
  CHECK(page.find("data-group=\"a-healthy\"") < page.find("data-group=\"e-healthy\""));
}

TEST_CASE("status page: numbers, durations and the checkpoint against its interval", "[status]") {
  Findings findings;
  DiagnosisFinding pair = Pair("orders", "enrich", Cause::kCheckpointsFailing);
  pair.kafka_lag = 1234567;
  pair.flink_lag = 0;
  pair.max_lag_seconds = 75;
  pair.flink_max_lag_seconds = 4.25;
  pair.catch_up_seconds = std::numeric_limits<double>::infinity();
  pair.checkpoint_age_seconds = 42;
  pair.checkpoint_interval_seconds = 10;
  findings.diagnosis.push_back(pair);
  DiagnosisFinding no_checkpoints = Pair("plain", "", Cause::kHealthy);
  no_checkpoints.catch_up_seconds = 130;
  findings.diagnosis.push_back(no_checkpoints);
  const std::string page = RenderStatusPage(findings, KafkaUp(), "1.0", kNow);
  CHECK(page.find("<td class=\"num kafka-lag\">1,234,567</td>") != std::string::npos);
  CHECK(page.find("<td class=\"num flink-lag\">0</td>") != std::string::npos);
  CHECK(page.find("<td class=\"num flink-lag\">&ndash;</td>") != std::string::npos);
  CHECK(page.find("<td class=\"num lag-seconds\">1m 15s</td>") != std::string::npos);
  CHECK(page.find("<td class=\"num flink-lag-seconds\">4.2 s</td>") != std::string::npos);
  CHECK(page.find("<td class=\"num flink-lag-seconds\">&ndash;</td>") != std::string::npos);
  CHECK(page.find("<td class=\"num catch-up\"><span class=\"stale\" title=\"the backlog is not "
                  "shrinking\">never</span></td>") != std::string::npos);
  CHECK(page.find("<td class=\"num catch-up\">2m 10s</td>") != std::string::npos);
  CHECK(page.find("<span class=\"stale\">42 s</span> / 10 s") != std::string::npos);
  CHECK(page.find("no checkpointing") != std::string::npos);
  CHECK(page.find(">5m 00s</td>") != std::string::npos);  // since 300 s ago
  CHECK(page.find("title=\"since 2027-01-15 07:55:00 UTC\"") != std::string::npos);
}

TEST_CASE("status page: the chart plots both lags over the pair's history", "[status]") {
  Findings findings;
  DiagnosisFinding pair = Pair("orders", "enrich", Cause::kLongCheckpointInterval);
  pair.history = {{kNow - 20, 0, 0}, {kNow - 10, 500, 5}, {kNow, 1000, 10}};
  findings.diagnosis.push_back(pair);
  DiagnosisFinding kafka_only = Pair("solo", "", Cause::kHealthy);
  kafka_only.history = {{kNow, 7, std::nullopt}};
  findings.diagnosis.push_back(kafka_only);
  const std::string page = RenderStatusPage(findings, KafkaUp(), "1.0", kNow);

  // x spans the history (160 units), y the maximum over both lines (36 units, 2 of padding).
  CHECK(page.find("<polyline class=\"kafka\" points=\"0.0,34.0 80.0,18.0 160.0,2.0\"/>") !=
        std::string::npos);
  CHECK(page.find("<polyline class=\"flink\" points=\"0.0,34.0 80.0,33.8 160.0,33.7\"/>") !=
        std::string::npos);
  CHECK(page.find("max <span class=\"chart-max\">1,000</span> &middot; 20 s") != std::string::npos);
  // One sample of a Kafka-only group: a flat line at the top, and no Flink line.
  CHECK(page.find("<polyline class=\"kafka\" points=\"0.0,2.0 160,2.0\"/></svg>") !=
        std::string::npos);
  CHECK(Count(page, "<polyline class=\"flink\"") == 1);

  // A job without a group has no Kafka side to draw.
  DiagnosisFinding no_group = Pair("", "lonely", Cause::kOffsetsMissing);
  no_group.history = {{kNow - 10, 0, 40}, {kNow, 0, 20}};
  const std::string lonely = RenderStatusPage({{}, {}, {no_group}}, KafkaUp(), "1.0", kNow);
  CHECK(lonely.find("<polyline class=\"kafka\"") == std::string::npos);
  CHECK(lonely.find("<polyline class=\"flink\" points=\"0.0,2.0 160.0,18.0\"/>") !=
        std::string::npos);
  CHECK(lonely.find("<i>no group found</i>") != std::string::npos);
}

TEST_CASE("status page: empty states say what the page waits for", "[status]") {
  const Findings none;
  CHECK(RenderStatusPage(none, {}, "1.0", kNow).find("No sources configured.") !=
        std::string::npos);

  std::vector<SourceStatus> waiting = {
      {SourceStatus::Kind::kKafka, "prod", false, false, std::nullopt, ""}};
  const std::string first = RenderStatusPage(none, waiting, "1.0", kNow);
  CHECK(first.find("Waiting for the first poll") != std::string::npos);
  CHECK(first.find("<li class=\"waiting\">kafka <b>prod</b>: waiting for the first poll</li>") !=
        std::string::npos);
  CHECK(first.find("<table") == std::string::npos);

  const std::string no_groups = RenderStatusPage(none, KafkaUp(), "1.0", kNow);
  CHECK(no_groups.find("No groups") != std::string::npos);
  CHECK(no_groups.find("<li class=\"up\">kafka <b>prod</b>: up, polled 1.0 s ago</li>") !=
        std::string::npos);

  std::vector<SourceStatus> down = {
      {SourceStatus::Kind::kKafka, "prod", true, false, kNow - 90, "timed out"}};
  const std::string all_down = RenderStatusPage(none, down, "1.0", kNow);
  CHECK(all_down.find("No Kafka cluster is up") != std::string::npos);
  CHECK(all_down.find("<b>down</b> &mdash; timed out (last good poll 1m 30s ago)") !=
        std::string::npos);
}

TEST_CASE("status page: self-contained, reloading, no script", "[status]") {
  Findings findings;
  findings.diagnosis.push_back(Pair("orders", "enrich", Cause::kHealthy));
  const std::string page = RenderStatusPage(findings, KafkaUp(), "1.0", kNow);
  CHECK(page.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(page.find("<meta http-equiv=\"refresh\" content=\"15\">") != std::string::npos);
  CHECK(page.find("<script") == std::string::npos);
  CHECK(page.find("http://") == std::string::npos);
  CHECK(page.find("https://") == std::string::npos);
  CHECK(page.find("src=") == std::string::npos);
  CHECK(page.find("</html>") != std::string::npos);
}

TEST_CASE("status page: the other causes whose rules hold, and the stuck partitions by name",
          "[status]") {
  Findings findings;
  DiagnosisFinding finding = Pair("orders", "enrich", Cause::kPartitionStuck);
  finding.evidence = {Cause::kPartitionStuck, Cause::kCheckpointsFailing};
  finding.stuck_partitions = {{"orders<v2>", 7}};
  findings.diagnosis = {finding};
  const std::string page = RenderStatusPage(findings, KafkaUp(), "1.0", kNow);
  CHECK(page.find("also: checkpoints_failing") != std::string::npos);
  CHECK(page.find("stuck: orders&lt;v2&gt;/7") != std::string::npos);
  CHECK(Count(page, "also: ") == 1);  // the active cause is not repeated
}

TEST_CASE("status page: a job reading another cluster names the partitions beyond the log end",
          "[status]") {
  Findings findings;
  DiagnosisFinding finding = Pair("orders", "enrich", Cause::kClusterMismatch);
  finding.evidence = {Cause::kClusterMismatch};
  finding.beyond_log_end_partitions = {{"orders", 0}, {"orders", 2}};
  findings.diagnosis = {finding};
  const std::string page = RenderStatusPage(findings, KafkaUp(), "1.0", kNow);
  CHECK(page.find("position beyond the log end: orders/0") != std::string::npos);
  CHECK(page.find("position beyond the log end: orders/2") != std::string::npos);
  CHECK(page.find("the job reads another cluster") != std::string::npos);
}

TEST_CASE("status page: the partitions no subtask of the job reads, under the job", "[status]") {
  Findings findings;
  DiagnosisFinding finding = Pair("orders", "enrich", Cause::kPartitionsUncommitted);
  finding.unread_partitions = {{"orders<v2>", 2}, {"orders<v2>", 3}};
  findings.diagnosis = {finding};
  const std::string page = RenderStatusPage(findings, KafkaUp(), "1.0", kNow);
  CHECK(page.find("not read: orders&lt;v2&gt;/2") != std::string::npos);
  CHECK(page.find("not read: orders&lt;v2&gt;/3") != std::string::npos);

  findings.diagnosis[0].unread_partitions.clear();
  CHECK(RenderStatusPage(findings, KafkaUp(), "1.0", kNow).find("not read: ") == std::string::npos);
}

TEST_CASE("status page: idle readers of the job, under the job", "[status]") {
  Findings findings;
  DiagnosisFinding finding = Pair("orders", "enrich", Cause::kHealthy);
  finding.idle_subtasks = 1;
  finding.source_subtasks = 4;
  findings.diagnosis = {finding};
  CHECK(RenderStatusPage(findings, KafkaUp(), "1.0", kNow)
            .find("idle readers: 1 of 4 subtasks hold no partition") != std::string::npos);

  findings.diagnosis[0].idle_subtasks = 0;
  CHECK(RenderStatusPage(findings, KafkaUp(), "1.0", kNow).find("idle readers") ==
        std::string::npos);
}

TEST_CASE("status page: what holds a job back and what would catch it up, beside the cause",
          "[status][bottleneck]") {
  Findings findings;
  DiagnosisFinding finding = Pair("orders", "enrich", Cause::kReallyBehind);
  lagsight::analysis::Bottleneck bottleneck;
  bottleneck.vertex_name = "enrich-map -> <sink>";
  bottleneck.parallelism = 2;
  bottleneck.busy_ms_max = 975;
  bottleneck.capacity_per_second = 268;
  finding.bottleneck = bottleneck;
  finding.catch_up_plan = lagsight::analysis::CatchUpPlan{3, "", std::nullopt, std::nullopt};
  findings.diagnosis = {finding};
  std::string page = RenderStatusPage(findings, KafkaUp(), "1.0", kNow);
  CHECK(page.find("held back by <b>enrich-map -&gt; &lt;sink&gt;</b>: busy 98 %, parallelism 2") !=
        std::string::npos);
  CHECK(page.find("parallelism 3 catches up within the target; at today's: never") !=
        std::string::npos);

  findings.diagnosis[0].bottleneck->skewed = true;
  findings.diagnosis[0].catch_up_plan =
      lagsight::analysis::CatchUpPlan{std::nullopt, "skew: one subtask", 600, std::nullopt};
  page = RenderStatusPage(findings, KafkaUp(), "1.0", kNow);
  CHECK(page.find("skewed") != std::string::npos);
  CHECK(page.find("no parallelism to recommend: skew: one subtask; at today's: 10m") !=
        std::string::npos);
}
