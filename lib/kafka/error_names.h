// KafkaErrorName: how lagsight's own Kafka clients name an error code a broker answered with, in
// the words of Kafka's protocol ("NOT_COORDINATOR (error code 16)"), so a partial error or a log
// line says what the broker said. Codes outside the table keep their number alone.
#pragma once

#include <cstdint>
#include <string>

namespace lagsight::kafka {

inline constexpr std::int16_t kGroupIdNotFound = 69;

std::string KafkaErrorName(std::int16_t code);

}  // namespace lagsight::kafka
