// SharedTextBody: a Boost.Beast body that sends an immutable, shared buffer without copying it,
// as it is or gunzipped piece by piece.
//
// The exposition is rendered once per poll and published as one shared gzip member; with Beast's
// string_body every scrape copied it into its response first. This body holds the shared pointer
// and hands Beast buffers over it, so a scrape costs a reference count, and a render published
// meanwhile cannot change what an answer in flight sends. A client that does not take gzip gets
// the member inflated kGunzipBufferBytes at a time as the socket takes them: the text is never
// whole in memory (at a million group-partitions it is ~400 MB). Write-only: requests keep
// string_body. A null buffer is an empty body.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional/optional.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "common/gzip_stream.h"

namespace lagsight::http {

struct SharedTextBody {
  // Shared bytes, and whether they are sent gunzipped (with the size they inflate to).
  struct value_type {
    value_type() = default;
    value_type(std::nullptr_t) {}  // NOLINT: an empty body reads as `body() = nullptr`
    value_type(std::shared_ptr<const std::string> shared)  // NOLINT: sent as they are
        : bytes(std::move(shared)) {}

    // `gzip` sent inflated, `text_size` bytes in all.
    static value_type Gunzipped(std::shared_ptr<const std::string> gzip, std::uint64_t text_size) {
      value_type body(std::move(gzip));
      body.gunzip = true;
      body.text_size = text_size;
      return body;
    }

    std::shared_ptr<const std::string> bytes;
    bool gunzip = false;
    std::uint64_t text_size = 0;  // when gunzip
  };

  static constexpr std::size_t kGunzipBufferBytes = 64 * 1024;

  static std::uint64_t size(const value_type& body) {
    if (!body.bytes) return 0;
    return body.gunzip ? body.text_size : body.bytes->size();
  }

  class writer {
   public:
    using const_buffers_type = boost::asio::const_buffer;

    template <bool kIsRequest, class Fields>
    writer(const boost::beast::http::header<kIsRequest, Fields>&, const value_type& body)
        : body_(body) {}

    void init(boost::beast::error_code& error) {
      error = {};
      if (!body_.gunzip || !body_.bytes) return;
      try {
        reader_.emplace(*body_.bytes);
        buffer_ = std::make_unique<char[]>(kGunzipBufferBytes);
      } catch (const std::exception&) {
        error = boost::system::errc::make_error_code(boost::system::errc::not_enough_memory);
      }
    }

    // Unzipped: the whole buffer at once, then nothing. Gunzipped: the next piece of text.
    boost::optional<std::pair<const_buffers_type, bool>> get(boost::beast::error_code& error) {
      error = {};
      if (!body_.bytes || body_.bytes->empty()) return boost::none;
      if (!reader_) {
        if (sent_) return boost::none;
        sent_ = true;
        return std::make_pair(const_buffers_type(body_.bytes->data(), body_.bytes->size()), false);
      }
      if (reader_->done()) return boost::none;
      try {
        const std::size_t size = reader_->Read(buffer_.get(), kGunzipBufferBytes);
        if (size == 0) return boost::none;
        return std::make_pair(const_buffers_type(buffer_.get(), size), !reader_->done());
      } catch (const std::exception&) {
        // Only a member lagsight did not write itself could be corrupt; the connection ends.
        error = boost::system::errc::make_error_code(boost::system::errc::illegal_byte_sequence);
        return boost::none;
      }
    }

   private:
    const value_type& body_;
    bool sent_ = false;
    std::optional<GzipReader> reader_;
    std::unique_ptr<char[]> buffer_;
  };
};

// A body of `text`, shared.
inline SharedTextBody::value_type SharedText(std::string text) {
  return std::make_shared<const std::string>(std::move(text));
}

}  // namespace lagsight::http
