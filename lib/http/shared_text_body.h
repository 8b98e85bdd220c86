// SharedTextBody: a Boost.Beast body that sends an immutable, shared string without copying it.
//
// The exposition is rendered once per poll and published as shared_ptr<const std::string>;
// with Beast's string_body every scrape copied it into its response first (113 MB at a million
// series, 4.4 MB gzipped). This body holds the shared pointer and hands Beast one buffer over
// the string, so a scrape costs a reference count, and a render published meanwhile cannot
// change what an answer in flight sends. Write-only: requests keep string_body. A null value is
// an empty body.
#pragma once

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/optional/optional.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace lagsight::http {

struct SharedTextBody {
  using value_type = std::shared_ptr<const std::string>;

  static std::uint64_t size(const value_type& body) { return body ? body->size() : 0; }

  class writer {
   public:
    using const_buffers_type = boost::asio::const_buffer;

    template <bool kIsRequest, class Fields>
    writer(const boost::beast::http::header<kIsRequest, Fields>&, const value_type& body)
        : body_(body) {}

    void init(boost::beast::error_code& error) { error = {}; }

    // The whole string at once, then nothing.
    boost::optional<std::pair<const_buffers_type, bool>> get(boost::beast::error_code& error) {
      error = {};
      if (sent_ || !body_ || body_->empty()) return boost::none;
      sent_ = true;
      return std::make_pair(const_buffers_type(body_->data(), body_->size()), false);
    }

   private:
    const value_type& body_;
    bool sent_ = false;
  };
};

// A body of `text`, shared.
inline SharedTextBody::value_type SharedText(std::string text) {
  return std::make_shared<const std::string>(std::move(text));
}

}  // namespace lagsight::http
