#include "kafka/error_names.h"

#include <map>

namespace lagsight::kafka {

std::string KafkaErrorName(std::int16_t code) {
  // The codes the requests lagsight speaks itself answer groups, partitions and listings with.
  static const std::map<std::int16_t, const char*> kNames = {
      {-1, "UNKNOWN_SERVER_ERROR"},
      {3, "UNKNOWN_TOPIC_OR_PARTITION"},
      {14, "COORDINATOR_LOAD_IN_PROGRESS"},
      {15, "COORDINATOR_NOT_AVAILABLE"},
      {16, "NOT_COORDINATOR"},
      {24, "INVALID_GROUP_ID"},
      {29, "TOPIC_AUTHORIZATION_FAILED"},
      {30, "GROUP_AUTHORIZATION_FAILED"},
      {31, "CLUSTER_AUTHORIZATION_FAILED"},
      {35, "UNSUPPORTED_VERSION"},
      {42, "INVALID_REQUEST"},
      {kGroupIdNotFound, "GROUP_ID_NOT_FOUND"},
      {88, "UNSTABLE_OFFSET_COMMIT"}};
  const std::string number = "error code " + std::to_string(code);
  const auto found = kNames.find(code);
  return found == kNames.end() ? number : std::string(found->second) + " (" + number + ")";
}

}  // namespace lagsight::kafka
