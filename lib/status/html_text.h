// The status page's text pieces: HTML escaping, attributes, and the numbers, durations and times
// people read on it, each appended to the page being written.
//
// Internal to the status page (not part of status_page.h's API). Appending to one string rather
// than returning pieces keeps a 1000-row page free of a temporary string per cell. Every value
// that comes from outside (cluster, group, job, error text) goes through AppendEscaped or
// AppendAttribute. Pure and thread-safe: each call only writes to `out`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lagsight::status {

// What a cell shows when it has no value: a dash.
inline constexpr std::string_view kNone = "&ndash;";

// `text` with & < > " ' replaced by character references; safe in text and quoted attributes.
void AppendEscaped(std::string& out, std::string_view text);

// ` name="value"`, the value escaped.
void AppendAttribute(std::string& out, std::string_view name, std::string_view value);

void AppendInteger(std::string& out, std::int64_t value);

// 1234567 -> "1,234,567": lag counts are read by people, and digits in groups are read faster.
void AppendGrouped(std::string& out, std::int64_t value);

// The grouped count, or kNone without one.
void AppendOptionalCount(std::string& out, const std::optional<std::int64_t>& value);

// `value` with `precision` digits after the point; nothing when it does not fit.
void AppendFixed(std::string& out, double value, int precision);

// "0.4 s", "42 s", "5m 03s", "2h 05m", "3d 04h": precise when small, short when large.
void AppendDuration(std::string& out, double seconds);

// "2026-12-06 07:32:44 UTC"; "?" when the time cannot be converted.
void AppendUtc(std::string& out, double unix_seconds);

}  // namespace lagsight::status
