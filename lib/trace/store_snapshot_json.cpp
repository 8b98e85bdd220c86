#include "trace/store_snapshot_json.h"

#include <cmath>
#include <utility>
#include <vector>

namespace lagsight::trace {

namespace {

using json::AppendString;
using json::AppendStrings;
using json::At;
using json::Field;
using json::ReadArray;
using json::ReadString;
using json::ReadStrings;

double ReadTime(json::element e, std::string_view what) {
  const double time = json::ReadDouble(e, what);
  if (!std::isfinite(time)) throw json::FormatError(std::string(what) + ": not a finite number");
  return time;
}

void AppendJob(std::string& out, const stores::StoredJob& job) {
  out += "{\"flink_cluster\":";
  AppendString(out, job.flink_cluster);
  out += ",\"job_id\":";
  AppendString(out, job.job_id);
  out += ",\"job_name\":";
  AppendString(out, job.job_name);
  out += ",\"topics\":";
  AppendStrings(out, job.topics);
  out += ",\"keys\":";
  AppendStrings(out, job.keys);
  out += ",\"offsets\":[";
  bool first = true;
  for (const auto& [tp, offset] : job.offsets) {
    out += first ? "[" : ",[";
    first = false;
    AppendString(out, tp.topic);
    out += ',';
    json::AppendInt(out, tp.partition);
    out += ',';
    json::AppendInt(out, offset);
    out += ']';
  }
  out += "],\"updated_at\":";
  json::AppendOptional(out, job.updated_at_unix_seconds, json::AppendDouble);
  out += ",\"unread_topics\":";
  AppendStrings(out, job.unread_topics);
  out += '}';
}

stores::StoredJob ReadJob(json::element e) {
  const json::object o = json::ReadObject(e, "jobs[]");
  stores::StoredJob job;
  job.flink_cluster = ReadString(Field(o, "flink_cluster"), "flink_cluster");
  job.job_id = ReadString(Field(o, "job_id"), "job_id");
  job.job_name = ReadString(Field(o, "job_name"), "job_name");
  job.topics = ReadStrings(Field(o, "topics"), "topics");
  job.keys = ReadStrings(Field(o, "keys"), "keys");
  for (const json::element row : ReadArray(Field(o, "offsets"), "offsets")) {
    const json::array entry = json::ReadTuple(row, 3, "offsets[]");
    job.offsets[{ReadString(At(entry, 0), "offsets[]"),
                 json::ReadInt32(At(entry, 1), "offsets[]")}] =
        json::ReadInt(At(entry, 2), "offsets[]");
  }
  job.updated_at_unix_seconds = json::ReadOptional(Field(o, "updated_at"), "updated_at", ReadTime);
  job.unread_topics = ReadStrings(Field(o, "unread_topics"), "unread_topics");
  return job;
}

}  // namespace

void AppendStoreSnapshot(std::string& out, const stores::StoreSnapshot& snapshot) {
  out += "{\"jobs\":[";
  for (std::size_t i = 0; i < snapshot.jobs.size(); ++i) {
    if (i > 0) out += ',';
    AppendJob(out, snapshot.jobs[i]);
  }
  out += "],\"partial_errors\":";
  AppendStrings(out, snapshot.partial_errors);
  out += ",\"requested_at\":";
  json::AppendDouble(out, snapshot.requested_at);
  out += ",\"read_until\":";
  json::AppendDouble(out, snapshot.read_until);
  out += '}';
}

stores::StoreSnapshot ReadStoreSnapshot(json::element e) {
  const json::object o = json::ReadObject(e, "snapshot");
  stores::StoreSnapshot snapshot;
  for (const json::element job : ReadArray(Field(o, "jobs"), "jobs")) {
    snapshot.jobs.push_back(ReadJob(job));
  }
  snapshot.partial_errors = ReadStrings(Field(o, "partial_errors"), "partial_errors");
  snapshot.requested_at = ReadTime(Field(o, "requested_at"), "requested_at");
  snapshot.read_until = ReadTime(Field(o, "read_until"), "read_until");
  return snapshot;
}

}  // namespace lagsight::trace
