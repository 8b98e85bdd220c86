#include <catch2/catch.hpp>

#include "flink/client_options.h"

using namespace lagsight;

TEST_CASE("Base64 pads as RFC 4648 says", "[flink]") {
  CHECK(flink::Base64("") == "");
  CHECK(flink::Base64("f") == "Zg==");
  CHECK(flink::Base64("fo") == "Zm8=");
  CHECK(flink::Base64("foo") == "Zm9v");
  CHECK(flink::Base64("foob") == "Zm9vYg==");
  CHECK(flink::Base64("fooba") == "Zm9vYmE=");
  CHECK(flink::Base64("foobar") == "Zm9vYmFy");
  CHECK(flink::Base64(std::string("\xff\x00\xfe", 3)) == "/wD+");
}

TEST_CASE("the Flink client takes its settings and credentials from the cluster's configuration",
          "[flink]") {
  config::FlinkClusterConfig cluster;
  cluster.rest_url = "https://jm:8081/prefix";
  cluster.request_timeout = std::chrono::milliseconds(2500);
  cluster.max_response_bytes = 1234;
  cluster.max_concurrent_requests = 7;
  cluster.tls_ca_file = "/ca.pem";
  cluster.username = "Aladdin";
  cluster.password = "open sesame";
  auto options = flink::ClientOptions(cluster);
  CHECK(options.base_url == "https://jm:8081/prefix");
  CHECK(options.timeout == std::chrono::milliseconds(2500));
  CHECK(options.max_body_bytes == 1234);
  CHECK(options.max_in_flight == 7);
  CHECK(options.ca_file == "/ca.pem");
  CHECK(options.authorization == "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");  // RFC 7617's example

  cluster.bearer_token = "t0k";  // a token wins over a username
  CHECK(flink::ClientOptions(cluster).authorization == "Bearer t0k");
  cluster.bearer_token.clear();
  cluster.username.clear();
  CHECK(flink::ClientOptions(cluster).authorization.empty());
}
