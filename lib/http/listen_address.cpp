#include "http/listen_address.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <charconv>

namespace lagsight::http {

namespace asio = boost::asio;
using asio::ip::tcp;

Result<tcp::endpoint> ParseListenAddress(std::string_view address) {
  const auto invalid = [&](std::string_view why) {
    return Error{"invalid listen address \"" + std::string(address) + "\": " + std::string(why)};
  };
  const std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return invalid("expected [host]:port");
  std::string_view host = address.substr(0, colon);
  const std::string_view port_text = address.substr(colon + 1);
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535 ||
      port_text.empty()) {
    return invalid("the port must be a number from 0 to 65535");
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty()) return tcp::endpoint(tcp::v4(), static_cast<unsigned short>(port));

  boost::system::error_code parse_error;
  const auto ip = asio::ip::make_address(std::string(host), parse_error);
  if (!parse_error) return tcp::endpoint(ip, static_cast<unsigned short>(port));

  asio::io_context context;
  tcp::resolver resolver(context);
  boost::system::error_code resolve_error;
  const auto results = resolver.resolve(std::string(host), std::string(port_text), resolve_error);
  if (resolve_error || results.empty())
    return invalid("cannot resolve host: " + resolve_error.message());
  return results.begin()->endpoint();
}

}  // namespace lagsight::http
