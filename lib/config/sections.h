// The schemas of the configuration file's sections: one reader per top-level section, each in a
// file named after it, called by ReadConfig (config.cpp) in the order of this list. Internal to
// lib/config/.
//
// Each reads one item of its section at `path` ("kafka[0]", "diagnosis") and returns it checked,
// or throws ConfigProblem through the SectionReader (config/section_reader.h). A section that
// names another section's items (a Flink cluster's kafka_cluster, a store's flink_cluster) gets
// those already read, so a name that points nowhere is an error at its own line.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "config/config.h"
#include "config/section_reader.h"

namespace lagsight::config::internal {

// kafka_section.cpp: one entry of `kafka:`.
KafkaClusterConfig ReadKafkaCluster(const SectionReader& reader, const YAML::Node& node,
                                    const std::string& path);

// flink_section.cpp: one entry of `flink:`; `kafka` are the clusters its names may point to.
FlinkClusterConfig ReadFlinkCluster(const SectionReader& reader, const YAML::Node& node,
                                    const std::string& path,
                                    const std::vector<KafkaClusterConfig>& kafka);

// store_section.cpp: one entry of `positions:`; `flink` are the clusters it may point to.
PositionStoreConfig ReadPositionStore(const SectionReader& reader, const YAML::Node& node,
                                      const std::string& path,
                                      const std::vector<FlinkClusterConfig>& flink);

// diagnosis_section.cpp: the `diagnosis:` mapping.
DiagnosisConfig ReadDiagnosis(const SectionReader& reader, const YAML::Node& node,
                              const std::string& path);

}  // namespace lagsight::config::internal
