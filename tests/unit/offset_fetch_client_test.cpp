// BatchedOffsetFetcher against a fake broker (fault injection): what it answers itself and what it
// leaves to librdkafka's per-group path. The real-broker evidence is tests/integration: every
// group shape there is read through this fetcher and checked against Kafka's own tools.
// Also the clients that share its CoordinatorSession: ConsumerGroupDescriber (both APIs) and
// StreamsGroupLister.
#include "kafka/offset_fetch_client.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "kafka/group_describe_client.h"
#include "kafka/share_group_client.h"
#include "kafka/streams_group_lister.h"

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using namespace std::chrono_literals;
using Bytes = std::vector<std::uint8_t>;
using lagsight::kafka::BatchedOffsetFetcher;
using lagsight::kafka::BatchedOffsetFetcherOptions;

void Put(Bytes& bytes, std::uint64_t value, int width) {
  for (int i = width - 1; i >= 0; --i) bytes.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
}
void PutVarint(Bytes& bytes, std::uint32_t value) {
  for (; value >= 0x80; value >>= 7) bytes.push_back(static_cast<std::uint8_t>(value | 0x80));
  bytes.push_back(static_cast<std::uint8_t>(value));
}
void PutCompact(Bytes& bytes, const std::string& text) {
  PutVarint(bytes, static_cast<std::uint32_t>(text.size() + 1));
  bytes.insert(bytes.end(), text.begin(), text.end());
}
std::uint32_t GetVarint(const Bytes& bytes, std::size_t& at) {
  std::uint32_t value = 0;
  for (int shift = 0;; shift += 7) {
    const std::uint8_t byte = bytes.at(at++);
    value |= static_cast<std::uint32_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return value;
  }
}

// A broker on 127.0.0.1 that answers as `Behaviour` says, each connection on a thread of its own.
// Coordinator of every group is itself. Group "moving" answers NOT_COORDINATOR in FindCoordinator,
// "loading" COORDINATOR_LOAD_IN_PROGRESS in OffsetFetch, "unknown-partition" a partition-level
// UNKNOWN_TOPIC_OR_PARTITION; every other group has orders/0 committed at 42 and orders/1 not.
class FakeBroker {
 public:
  // kKafka4: also ConsumerGroupDescribe v0-v1 (KIP-848), answering each group Stable with one
  // member holding orders/0, but "moving" NOT_COORDINATOR.
  // kKafka43: also share groups: DescribeCluster (itself), ListGroups v5 (share group "sg",
  // Stable), DescribeShareGroupOffsets v0-v1 (orders/0 at start 5, lag 2; orders/1 without
  // state) and ShareGroupDescribe v1 (one member holding both partitions).
  enum class Behaviour { kAnswers, kSilent, kBeforeKafka3, kWrongCorrelation, kKafka4, kKafka43 };

  explicit FakeBroker(Behaviour behaviour)
      : behaviour_(behaviour),
        acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    port_ = acceptor_.local_endpoint().port();
    accepting_ = std::thread([this] {
      for (;;) {
        boost::system::error_code error;
        auto socket = std::make_shared<tcp::socket>(io_);
        acceptor_.accept(*socket, error);
        if (error || stopping_) return;
        connections_.emplace_back([this, socket] { Serve(*socket); });
      }
    });
  }
  ~FakeBroker() {
    // Unblock accept() by connecting once; the fetcher closed its connections, so every
    // connection thread sees the end of its stream.
    stopping_ = true;
    boost::system::error_code ignored;
    tcp::socket poke(io_);
    poke.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_), ignored);
    accepting_.join();
    poke.close(ignored);
    for (auto& connection : connections_) connection.join();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int offset_fetches() const { return offset_fetches_; }
  int find_coordinators() const { return find_coordinators_; }
  int describes() const { return describes_; }
  int version_seen() const { return version_seen_; }
  int share_requests(int api) const { return share_requests_.at(static_cast<std::size_t>(api)); }

 private:
  void Serve(tcp::socket& socket) {
    boost::system::error_code error;
    for (;;) {
      std::uint8_t prefix[4];
      asio::read(socket, asio::buffer(prefix), error);
      if (error) return;
      const std::uint32_t size =
          (std::uint32_t{prefix[0]} << 24) | (prefix[1] << 16) | (prefix[2] << 8) | prefix[3];
      // A broker closes a connection whose frame is over socket.request.max.bytes: a TLS hello
      // read as a frame is ~370 MB.
      if (size > (1u << 20)) return;
      Bytes request(size);
      asio::read(socket, asio::buffer(request), error);
      if (error || size < 8) return;
      if (behaviour_ == Behaviour::kSilent) continue;
      const int api = (request[0] << 8) | request[1];
      Bytes answer;
      answer.insert(answer.end(), request.begin() + 4, request.begin() + 8);  // correlation id
      if (api == 9 && behaviour_ == Behaviour::kWrongCorrelation) ++answer[3];
      if (api == 18 && behaviour_ == Behaviour::kKafka43) {
        Put(answer, 0, 2), Put(answer, 6, 4);
        for (const auto& [key, min, max] : std::vector<std::array<int, 3>>{
                 {9, 1, 9}, {10, 0, 6}, {16, 0, 5}, {60, 0, 2}, {77, 1, 1}, {90, 0, 1}}) {
          Put(answer, key, 2), Put(answer, min, 2), Put(answer, max, 2);
        }
      } else if (behaviour_ == Behaviour::kKafka43 &&
                 (api == 60 || api == 16 || api == 90 || api == 77)) {
        ShareAnswer(api, request, answer);
      } else if (api == 18) {  // ApiVersions v0
        Put(answer, 0, 2);
        Put(answer, behaviour_ == Behaviour::kKafka4 ? 3 : 2, 4);
        if (behaviour_ == Behaviour::kKafka4)
          Put(answer, 69, 2), Put(answer, 0, 2), Put(answer, 1, 2);
        const int newest = behaviour_ == Behaviour::kBeforeKafka3 ? 7 : 9;
        Put(answer, 9, 2), Put(answer, 1, 2), Put(answer, newest, 2);
        Put(answer, 10, 2), Put(answer, 0, 2), Put(answer, newest == 7 ? 3 : 6, 2);
      } else if (api == 69) {
        ConsumerGroupDescribeAnswer(request, answer);
      } else if (api == 10 || api == 9) {
        answer.push_back(0);  // header tags
        Put(answer, 0, 4);    // throttle
        const std::vector<std::string> groups = Groups(request, api == 10 ? 1 : 0);
        PutVarint(answer, static_cast<std::uint32_t>(groups.size() + 1));
        for (const std::string& group : groups) {
          PutCompact(answer, group);
          if (api == 10) {  // FindCoordinator v4
            Put(answer, 0, 4);
            PutCompact(answer, "127.0.0.1");
            Put(answer, port_, 4);
            Put(answer, group == "moving" ? 16 : 0, 2);
            answer.push_back(0), answer.push_back(0);  // null message, tags
            continue;
          }
          // OffsetFetch v8: orders/0 at 42, orders/1 never committed.
          answer.push_back(2);
          PutCompact(answer, "orders");
          answer.push_back(3);
          for (const std::int64_t offset : {std::int64_t{42}, std::int64_t{-1}}) {
            Put(answer, offset == 42 ? 0 : 1, 4);
            Put(answer, static_cast<std::uint64_t>(offset), 8);
            Put(answer, 0, 4), answer.push_back(0);
            Put(answer, group == "unknown-partition" && offset == 42 ? 3 : 0, 2);
            answer.push_back(0);
          }
          answer.push_back(0);
          Put(answer, group == "loading" ? 14 : 0, 2);
          answer.push_back(0);
        }
        answer.push_back(0);
        ++(api == 9 ? offset_fetches_ : find_coordinators_);
      }
      Bytes frame;
      Put(frame, answer.size(), 4);
      frame.insert(frame.end(), answer.begin(), answer.end());
      asio::write(socket, asio::buffer(frame), error);
      if (error) return;
    }
  }

  void ConsumerGroupDescribeAnswer(const Bytes& request, Bytes& answer) {
    ++describes_;
    version_seen_ = (request[2] << 8) | request[3];
    answer.push_back(0);  // header tags
    Put(answer, 0, 4);    // throttle
    const std::vector<std::string> groups = Groups(request, 0, 0);
    PutVarint(answer, static_cast<std::uint32_t>(groups.size() + 1));
    for (const std::string& group : groups) {
      Put(answer, group == "moving" ? 16 : 0, 2);
      answer.push_back(0);  // null message
      PutCompact(answer, group);
      PutCompact(answer, "Stable");
      Put(answer, 3, 4), Put(answer, 3, 4);
      PutCompact(answer, "uniform");
      answer.push_back(2);  // one member
      PutCompact(answer, "m-" + group);
      answer.push_back(0), answer.push_back(0);  // no instance id, rack
      Put(answer, 3, 4);
      PutCompact(answer, "client-" + group);
      PutCompact(answer, "/127.0.0.1");
      answer.push_back(1), answer.push_back(0);                 // no subscribed names, no regex
      for (int assignment = 0; assignment < 2; ++assignment) {  // current, target
        answer.push_back(2);
        answer.insert(answer.end(), 16, 0x11);  // topic id
        PutCompact(answer, "orders");
        answer.push_back(2), Put(answer, 0, 4);
        answer.push_back(0), answer.push_back(0);  // tags of topic, assignment
      }
      if (version_seen_ >= 1) answer.push_back(1);  // member type: consumer
      answer.push_back(0);                          // member tags
      Put(answer, 0x80000000u, 4), answer.push_back(0);
    }
    answer.push_back(0);
  }

  void ShareAnswer(int api, const Bytes& request, Bytes& answer) {
    ++share_requests_.at(static_cast<std::size_t>(api));
    answer.push_back(0);  // header tags
    Put(answer, 0, 4);    // throttle
    if (api == 60) {      // DescribeCluster v0: itself
      Put(answer, 0, 2), answer.push_back(0);
      PutCompact(answer, "cluster"), Put(answer, 0, 4);
      answer.push_back(2), Put(answer, 0, 4), PutCompact(answer, "127.0.0.1"),
          Put(answer, port_, 4);
      answer.push_back(0), answer.push_back(0);  // null rack, tags
      Put(answer, 0x80000000u, 4), answer.push_back(0);
      return;
    }
    if (api == 16) {  // ListGroups v5
      Put(answer, 0, 2), answer.push_back(2);
      for (const char* text : {"sg", "share", "Stable", "share"}) PutCompact(answer, text);
      answer.push_back(0), answer.push_back(0);
      return;
    }
    const int version = (request[2] << 8) | request[3];
    const std::vector<std::string> groups = Groups(request, 0, api == 90 ? 2 : 0);
    PutVarint(answer, static_cast<std::uint32_t>(groups.size() + 1));
    for (const std::string& group : groups) {
      if (api == 90) {  // DescribeShareGroupOffsets
        PutCompact(answer, group), answer.push_back(2), PutCompact(answer, "orders");
        answer.insert(answer.end(), 16, 0x11), answer.push_back(3);
        for (const std::int64_t start : {std::int64_t{5}, std::int64_t{-1}}) {
          Put(answer, start == 5 ? 0 : 1, 4), Put(answer, static_cast<std::uint64_t>(start), 8);
          Put(answer, 0, 4);
          if (version >= 1) Put(answer, static_cast<std::uint64_t>(start == 5 ? 2 : -1), 8);
          Put(answer, 0, 2), answer.push_back(0), answer.push_back(0);
        }
        answer.push_back(0), Put(answer, 0, 2), answer.push_back(0), answer.push_back(0);
        continue;
      }
      Put(answer, 0, 2), answer.push_back(0);  // ShareGroupDescribe v1
      PutCompact(answer, group), PutCompact(answer, "Stable");
      Put(answer, 3, 4), Put(answer, 3, 4), PutCompact(answer, "simple");
      answer.push_back(2), PutCompact(answer, "m-" + group), answer.push_back(0);
      Put(answer, 3, 4), PutCompact(answer, "client"), PutCompact(answer, "/127.0.0.1");
      answer.push_back(2), PutCompact(answer, "orders");  // subscribed
      answer.push_back(2), answer.insert(answer.end(), 16, 0x11), PutCompact(answer, "orders");
      answer.push_back(3), Put(answer, 1, 4), Put(answer, 0, 4);
      answer.push_back(0), answer.push_back(0), answer.push_back(0);  // topic, assignment, member
      Put(answer, 0x80000000u, 4), answer.push_back(0);
    }
    answer.push_back(0);
  }

  // The group names of a FindCoordinator v4 / OffsetFetch v8 / ConsumerGroupDescribe request.
  static std::vector<std::string> Groups(const Bytes& request, std::size_t skip_after_header,
                                         std::size_t skip_after_group = 2) {
    std::size_t at = 8;
    at += 2 + ((request[at] << 8) | request[at + 1]);  // client id
    at += 1 + skip_after_header;                       // header tags, key type
    const std::size_t count = GetVarint(request, at) - 1u;
    std::vector<std::string> groups;
    for (std::size_t i = 0; i < count; ++i) {
      const std::size_t length = GetVarint(request, at) - 1u;
      groups.emplace_back(request.begin() + static_cast<std::ptrdiff_t>(at),
                          request.begin() + static_cast<std::ptrdiff_t>(at + length));
      at += length + (skip_after_header ? 0 : skip_after_group);  // OffsetFetch: null topics, tags
    }
    return groups;
  }

  Behaviour behaviour_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::atomic<int> offset_fetches_{0};
  std::atomic<int> find_coordinators_{0};
  std::atomic<int> describes_{0};
  std::atomic<int> version_seen_{-1};
  std::array<std::atomic<int>, 128> share_requests_{};  // by API key
  std::atomic<bool> stopping_{false};
  std::thread accepting_;
  std::vector<std::thread> connections_;
};

BatchedOffsetFetcher Fetcher(std::vector<std::string> servers, std::size_t groups_per_request) {
  BatchedOffsetFetcherOptions options;
  options.bootstrap_servers = std::move(servers);
  options.groups_per_request = groups_per_request;
  return BatchedOffsetFetcher(std::move(options));
}

}  // namespace

TEST_CASE("batched offset fetch: groups in batches, each answered or its error named", "[kafka]") {
  FakeBroker broker(FakeBroker::Behaviour::kAnswers);
  const std::vector<std::string> ids = {"a", "moving", "b", "loading", "unknown-partition", "d"};
  // The first bootstrap address refuses connections; the second answers.
  auto fetched = Fetcher({"127.0.0.1:1", broker.address()}, 2).Fetch(ids, 2s, 10s);
  CHECK(fetched.failure.empty());
  REQUIRE(fetched.offsets.size() == ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    INFO(ids[i]);
    if (ids[i] == "moving" || ids[i] == "loading" || ids[i] == "unknown-partition") {
      CHECK_FALSE(fetched.offsets[i].has_value());
      const std::string expected =
          ids[i] == "moving" ? "FindCoordinator answered NOT_COORDINATOR (error code 16)"
          : ids[i] == "loading"
              ? "OffsetFetch answered COORDINATOR_LOAD_IN_PROGRESS (error code 14)"
              : "OffsetFetch answered UNKNOWN_TOPIC_OR_PARTITION (error code 3) "
                "for a partition";
      CHECK(fetched.errors[i] == expected);
      continue;
    }
    CHECK(fetched.errors[i].empty());
    REQUIRE(fetched.offsets[i].has_value());
    REQUIRE(fetched.offsets[i]->size() == 1);  // the uncommitted partition left out
    CHECK(fetched.offsets[i]->begin()->first == lagsight::kafka::TopicPartition{"orders", 0});
    CHECK(fetched.offsets[i]->begin()->second == 42);
  }
  CHECK(fetched.requests == 3);  // five groups located, two a request
  CHECK(broker.offset_fetches() == 3);
  CHECK_FALSE(fetched.unsupported);
}

TEST_CASE("batched offset fetch: thousands of groups, 1,000 located and 200 fetched a request",
          "[kafka]") {
  FakeBroker broker(FakeBroker::Behaviour::kAnswers);
  std::vector<std::string> ids;
  for (int i = 0; i < 1500; ++i) ids.push_back("group-" + std::to_string(i));
  BatchedOffsetFetcherOptions options;
  options.bootstrap_servers = {broker.address()};
  auto fetched = BatchedOffsetFetcher(std::move(options)).Fetch(ids, 5s, 30s);
  CHECK(fetched.failure.empty());
  CHECK(std::all_of(fetched.offsets.begin(), fetched.offsets.end(), [](const auto& offsets) {
    return offsets.has_value() && offsets->size() == 1 && offsets->begin()->second == 42;
  }));
  CHECK(broker.find_coordinators() == 2);
  CHECK(broker.offset_fetches() == 8);
  CHECK(fetched.requests == 8);
}

TEST_CASE("batched offset fetch: an answer to another request answers nothing, and says so",
          "[kafka]") {
  FakeBroker broker(FakeBroker::Behaviour::kWrongCorrelation);
  auto fetched = Fetcher({broker.address()}, 200).Fetch({"a", "b"}, 2s, 10s);
  CHECK_FALSE(fetched.offsets[0].has_value());
  CHECK_FALSE(fetched.offsets[1].has_value());
  CHECK(fetched.requests == 0);
  CHECK_THAT(fetched.failure, Catch::Contains("OffsetFetch response answers request"));
}

TEST_CASE("batched offset fetch: a broker before Kafka 3.0 leaves every group to librdkafka",
          "[kafka]") {
  FakeBroker broker(FakeBroker::Behaviour::kBeforeKafka3);
  auto fetched = Fetcher({broker.address()}, 200).Fetch({"a", "b"}, 2s, 10s);
  CHECK_FALSE(fetched.offsets[0].has_value());
  CHECK_FALSE(fetched.offsets[1].has_value());
  CHECK_THAT(fetched.failure, Catch::Contains("predates OffsetFetch v8"));
  CHECK(fetched.unsupported);  // so librdkafka reads them, one request per group
  CHECK(broker.offset_fetches() == 0);
}

TEST_CASE("batched offset fetch: a broker that never answers costs one request timeout",
          "[kafka]") {
  FakeBroker broker(FakeBroker::Behaviour::kSilent);
  auto fetched = Fetcher({broker.address()}, 200).Fetch({"a"}, 300ms, 10s);
  CHECK_FALSE(fetched.offsets[0].has_value());
  CHECK_THAT(fetched.failure, Catch::Contains("ApiVersions"));
}

TEST_CASE("batched offset fetch: nothing listening is a failure naming the address", "[kafka]") {
  auto fetched = Fetcher({"127.0.0.1:1"}, 200).Fetch({"a"}, 1s, 5s);
  CHECK_FALSE(fetched.offsets[0].has_value());
  CHECK_THAT(fetched.failure, Catch::Contains("connecting to 127.0.0.1:1"));
}

TEST_CASE("batched offset fetch: TLS is spoken when configured, and a broken setup says why",
          "[kafka]") {
  // The fake broker speaks no TLS: the handshake fails, so a TLS fetcher never falls back to
  // plaintext.
  FakeBroker broker(FakeBroker::Behaviour::kAnswers);
  BatchedOffsetFetcherOptions options;
  options.bootstrap_servers = {broker.address()};
  options.tls.emplace();
  options.tls->verify_host_name = false;
  auto fetched = BatchedOffsetFetcher(options).Fetch({"a"}, 2s, 5s);
  CHECK_FALSE(fetched.offsets[0].has_value());
  CHECK_THAT(fetched.failure, Catch::Contains("TLS handshake with " + broker.address()));
  CHECK(broker.offset_fetches() == 0);

  // A CA file that cannot be read: no connection at all, every group left to librdkafka.
  options.tls->ca_location = "/nonexistent/ca.pem";
  fetched = BatchedOffsetFetcher(options).Fetch({"a", "b"}, 2s, 5s);
  CHECK_FALSE(fetched.offsets[0].has_value());
  CHECK_FALSE(fetched.offsets[1].has_value());
  CHECK_THAT(fetched.failure, Catch::Contains("TLS: ssl.ca.location /nonexistent/ca.pem"));
}

TEST_CASE("consumer group describe: members of KIP-848 groups, batched, at the newest version",
          "[kafka]") {
  FakeBroker broker(FakeBroker::Behaviour::kKafka4);
  lagsight::kafka::ConsumerGroupDescriberOptions options;
  options.bootstrap_servers = {broker.address()};
  options.groups_per_request = 2;
  lagsight::kafka::ConsumerGroupDescriber describer(options);
  auto described = describer.Describe({"a", "moving", "b"}, 2s, 10s);
  CHECK(described.failure.empty());
  CHECK_FALSE(described.unsupported);
  CHECK(broker.version_seen() == 1);
  CHECK(broker.describes() == 1);  // "moving" has no coordinator: not asked
  std::map<std::string, lagsight::kafka::GroupDescription> by_id;
  for (auto& group : described.groups) by_id[group.id] = group;
  REQUIRE(by_id.size() == 2);
  CHECK(by_id.at("a").state == "stable");
  CHECK(by_id.at("a").members == 1);
  REQUIRE(by_id.at("a").member_list.size() == 1);
  CHECK(by_id.at("a").member_list[0] ==
        lagsight::kafka::GroupMember{"m-a", "client-a", "/127.0.0.1", "", {{"orders", 0}}});
  CHECK(by_id.at("a").assigned_topics == std::set<std::string>{"orders"});
}

TEST_CASE("consumer group describe: a broker before Kafka 4.0 is unsupported, not an error",
          "[kafka]") {
  FakeBroker broker(FakeBroker::Behaviour::kAnswers);  // advertises no ConsumerGroupDescribe
  lagsight::kafka::ConsumerGroupDescriberOptions options;
  options.bootstrap_servers = {broker.address()};
  lagsight::kafka::ConsumerGroupDescriber describer(options);
  auto described = describer.Describe({"a", "b"}, 2s, 10s);
  CHECK(described.groups.empty());
  CHECK(described.unsupported);
  CHECK_THAT(described.failure, Catch::Contains("predates ConsumerGroupDescribe"));
  CHECK(broker.find_coordinators() == 0);
  CHECK(broker.describes() == 0);
}

TEST_CASE("share group reader: a broker before share groups is unsupported, not an error",
          "[kafka][share]") {
  FakeBroker broker(FakeBroker::Behaviour::kKafka4);  // ConsumerGroupDescribe, but no key 90
  BatchedOffsetFetcherOptions options;
  options.bootstrap_servers = {broker.address()};
  lagsight::kafka::ShareGroupReader reader(options);
  const auto listed = reader.List(2s, 10s);
  CHECK(listed.groups.empty());
  CHECK(listed.unsupported);
  CHECK_THAT(listed.failure, Catch::Contains("predates share groups"));
  const auto described = reader.Describe({"a"}, 2s, 10s);
  CHECK(described.groups.empty());
  CHECK(described.unsupported);
  CHECK(broker.find_coordinators() == 0);
}

TEST_CASE("share group reader: a silent broker or nothing listening is a bounded failure",
          "[kafka][share]") {
  FakeBroker silent(FakeBroker::Behaviour::kSilent);
  BatchedOffsetFetcherOptions options;
  options.bootstrap_servers = {silent.address()};
  lagsight::kafka::ShareGroupReader reader(options);
  const auto started = std::chrono::steady_clock::now();
  const auto listed = reader.List(300ms, 10s);
  CHECK(std::chrono::steady_clock::now() - started < 5s);
  CHECK(listed.groups.empty());
  CHECK_FALSE(listed.unsupported);
  CHECK_THAT(listed.failure, Catch::Contains("ApiVersions"));

  options.bootstrap_servers = {"127.0.0.1:1"};
  lagsight::kafka::ShareGroupReader nowhere(options);
  CHECK_THAT(nowhere.List(1s, 5s).failure, Catch::Contains("connecting to 127.0.0.1:1"));
}

TEST_CASE("share group reader: listed by every broker, progress and members from the coordinator",
          "[kafka][share]") {
  FakeBroker broker(FakeBroker::Behaviour::kKafka43);
  BatchedOffsetFetcherOptions options;
  options.bootstrap_servers = {broker.address()};
  lagsight::kafka::ShareGroupReader reader(options);
  const auto listed = reader.List(2s, 10s);
  CHECK(listed.failure.empty());
  REQUIRE(listed.groups.size() == 1);
  CHECK(listed.groups[0].id == "sg");
  CHECK(listed.groups[0].state == "stable");
  const auto described = reader.Describe({"sg"}, 2s, 10s);
  CHECK(described.failure.empty());
  CHECK(described.errors.empty());
  REQUIRE(described.groups.size() == 1);
  const lagsight::kafka::ShareGroup& group = described.groups[0];
  REQUIRE(group.partitions.size() == 2);
  CHECK(group.partitions[0].partition == lagsight::kafka::TopicPartition{"orders", 0});
  CHECK(group.partitions[0].start_offset == 5);
  CHECK(group.partitions[0].lag == 2);
  CHECK(group.partitions[1].start_offset == -1);
  CHECK_FALSE(group.partitions[1].lag);
  CHECK(group.members == 1);
  REQUIRE(group.member_list.size() == 1);
  CHECK(group.member_list[0].assignment ==
        std::vector<lagsight::kafka::TopicPartition>{{"orders", 1}, {"orders", 0}});
  CHECK(broker.share_requests(60) == 1);
  CHECK(broker.share_requests(16) == 1);
  CHECK(broker.share_requests(90) == 1);
  CHECK(broker.share_requests(77) == 1);
}

TEST_CASE(
    "streams group describe: a broker without StreamsGroupDescribe is unsupported, not an "
    "error",
    "[kafka]") {
  FakeBroker broker(FakeBroker::Behaviour::kKafka4);  // advertises no API 89
  lagsight::kafka::ConsumerGroupDescriberOptions options;
  options.bootstrap_servers = {broker.address()};
  lagsight::kafka::ConsumerGroupDescriber describer(options, lagsight::kafka::StreamsDescribeApi());
  auto described = describer.Describe({"app"}, 2s, 10s);
  CHECK(described.groups.empty());
  CHECK(described.unsupported);
  CHECK_THAT(described.failure, Catch::Contains("predates StreamsGroupDescribe (Kafka 4.1"));
  CHECK(broker.find_coordinators() == 0);
}

TEST_CASE("streams group listing: a broker without ListGroups v5 is unsupported, not an error",
          "[kafka]") {
  FakeBroker broker(FakeBroker::Behaviour::kKafka4);  // advertises no ListGroups
  lagsight::kafka::BatchedOffsetFetcherOptions options;
  options.bootstrap_servers = {broker.address()};
  lagsight::kafka::StreamsGroupLister lister(options);
  auto listed = lister.List(2s, 10s);
  CHECK(listed.groups.empty());
  CHECK(listed.unsupported);
  CHECK_THAT(listed.failure, Catch::Contains("predates ListGroups v5"));
}
